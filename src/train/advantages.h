// Advantage estimators (verl's algorithm.adv_estimator: grpo, grpo_passk, rloo, reinforce_plus_plus,
// reinforce_plus_plus_baseline, remax, opo, gpg) over per-token rewards, and the reward-level options around
// them: group normalisation (group std, batch std, or none), DAPO group filtering (drop groups whose rewards
// are all equal) and DAPO overlong reward shaping. grpo_advantages lays responses out group by group (group g
// holds group_sizes[g] consecutive entries); estimate_advantages takes verl's layout (a group id per response).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/names.h"

namespace grpo::train {

// How advantages are scaled after subtracting the group mean (TRL `scale_rewards`; verl
// `norm_adv_by_std_in_grpo: false` is None).
enum class AdvantageScaling { GroupStd, BatchStd, None };
inline constexpr auto kAdvantageScalingNames = name_table<AdvantageScaling>(
    {{AdvantageScaling::GroupStd, "group"}, {AdvantageScaling::BatchStd, "batch"}, {AdvantageScaling::None, "none"}});

AdvantageScaling parse_advantage_scaling(std::string_view name);  // "group" | "batch" | "none"
std::string_view advantage_scaling_name(AdvantageScaling s);

// A_i = (r_i - mean_group) / (std + eps), std the unbiased (n-1) standard deviation of the group (GroupStd)
// or of the whole batch (BatchStd); None: A_i = r_i - mean_group. A group of one has mean 0 and std 1
// (verl). Returns one advantage per response [sum(group_sizes)]; every group size must be >= 1.
std::vector<float> grpo_advantages(std::span<const float> rewards, std::span<const int64_t> group_sizes,
                                   AdvantageScaling scaling, double eps = 1e-6);

// Gae is verl's critic-based estimator: a value of algorithm.adv_estimator, refused (it needs a critic, which this
// engine does not train).
enum class AdvEstimator { Grpo, Rloo, ReinforcePlusPlus, ReinforcePlusPlusBaseline, Remax, Opo, GrpoPassk, Gpg, Gae };
inline constexpr auto kAdvEstimatorNames =
    name_table<AdvEstimator>({{AdvEstimator::Grpo, "grpo"},
                              {AdvEstimator::Rloo, "rloo"},
                              {AdvEstimator::ReinforcePlusPlus, "reinforce_plus_plus"},
                              {AdvEstimator::ReinforcePlusPlusBaseline, "reinforce_plus_plus_baseline"},
                              {AdvEstimator::Remax, "remax"},
                              {AdvEstimator::Opo, "opo"},
                              {AdvEstimator::GrpoPassk, "grpo_passk"},
                              {AdvEstimator::Gpg, "gpg"},
                              {AdvEstimator::Gae, "gae"}});
// Why gae is refused, and what to use instead.
extern const char* const kGaeRefused;

// verl's names; gae and unknown names are refused.
AdvEstimator parse_adv_estimator(std::string_view name);
std::string_view adv_estimator_name(AdvEstimator e);

struct AdvantageOptions {
  AdvEstimator estimator = AdvEstimator::Grpo;
  AdvantageScaling scaling = AdvantageScaling::GroupStd;  // grpo: group std | batch std | none; grpo_passk:
                                                          // None <=> norm_adv_by_std_in_grpo false
  double gamma = 1.0;   // reinforce_plus_plus discount
  double eps = 1e-6;    // added to the group std
};

// Inputs in verl's layout, B responses padded to T tokens. token_level_rewards [B, T] (the score on each
// response's last token, plus any per-token KL penalty), response_mask [B, T] (0/1), group [B] (the
// prompt each response belongs to; any ids, not necessarily contiguous), reward_baselines [B] (remax only:
// the reward of the prompt's greedy response; may be empty otherwise).
struct AdvantageInputs {
  int64_t B = 0, T = 0;
  std::span<const double> token_level_rewards, response_mask;
  std::span<const int64_t> group;
  std::span<const double> reward_baselines;
};

struct TokenAdvantages {
  std::vector<double> advantages, returns;  // [B, T]
};

// verl's compute_*_advantage for the chosen estimator, value for value (groups of one, masks, the eps inside
// standard deviations and whitening). Refuses, with verl's message, pass@k with a group of fewer than two and
// whitening (reinforce_plus_plus*) over fewer than two response tokens. OPO differs from verl only where a
// group's responses are all empty: its baseline is 0 there (verl divides 0 by 0; the advantages are masked).
TokenAdvantages estimate_advantages(const AdvantageOptions& opt, const AdvantageInputs& in);

// DAPO dynamic sampling: keep[g] is false when all rewards of group g are equal (a group of one included):
// such groups carry zero advantage and no learning signal.
std::vector<bool> groups_with_signal(std::span<const float> rewards, std::span<const int64_t> group_sizes);

// DAPO overlong shaping: 0 while response_length <= max_response_length - buffer_len, then falling
// linearly to -penalty_factor at max_response_length (and staying there beyond it). buffer_len >= 1.
float overlong_penalty(int64_t response_length, int64_t max_response_length, int64_t buffer_len,
                       float penalty_factor);

}  // namespace grpo::train
