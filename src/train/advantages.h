// GRPO outcome advantages and the reward-level options around them: group normalisation (group std,
// batch std, or none), DAPO group filtering (drop groups whose rewards are all equal) and DAPO overlong
// reward shaping. Responses are laid out group by group: group g holds group_sizes[g] consecutive entries.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace grpo::train {

// How advantages are scaled after subtracting the group mean (TRL `scale_rewards`; verl
// `norm_adv_by_std_in_grpo: false` is None).
enum class AdvantageScaling { GroupStd, BatchStd, None };

AdvantageScaling parse_advantage_scaling(std::string_view name);  // "group" | "batch" | "none"
std::string_view advantage_scaling_name(AdvantageScaling s);

// A_i = (r_i - mean_group) / (std + eps), std the unbiased (n-1) standard deviation of the group (GroupStd)
// or of the whole batch (BatchStd); None: A_i = r_i - mean_group. A group of one has mean 0 and std 1
// (verl). Returns one advantage per response [sum(group_sizes)]; every group size must be >= 1.
std::vector<float> grpo_advantages(std::span<const float> rewards, std::span<const int64_t> group_sizes,
                                   AdvantageScaling scaling, double eps = 1e-6);

// DAPO dynamic sampling: keep[g] is false when all rewards of group g are equal (a group of one included):
// such groups carry zero advantage and no learning signal.
std::vector<bool> groups_with_signal(std::span<const float> rewards, std::span<const int64_t> group_sizes);

// DAPO overlong shaping: 0 while response_length <= max_response_length - buffer_len, then falling
// linearly to -penalty_factor at max_response_length (and staying there beyond it). buffer_len >= 1.
float overlong_penalty(int64_t response_length, int64_t max_response_length, int64_t buffer_len,
                       float penalty_factor);

}  // namespace grpo::train
