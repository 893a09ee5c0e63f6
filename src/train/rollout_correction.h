// Rollout correction (verl's algorithm.rollout_correction): the rollout engine and the trainer compute the
// log-probs of the same tokens with different kernels (and, off-policy, different weights), so the
// trainer's pi_old and the sampler's pi_rollout differ a little. rollout_is weights each token's loss by
// pi_old / pi_rollout (per token, or per response as the product over its tokens), truncated at
// rollout_is_threshold; rollout_rs rejects (masks out of the loss) tokens or whole responses whose divergence
// estimate lies outside its threshold. log_ratio below is old - rollout.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/names.h"

namespace grpo::train {

enum class RolloutIsLevel { Off, Token, Sequence };
// verl's algorithm.rollout_correction.rollout_is: token, sequence, or off ("" as written, null or none).
inline constexpr auto kRolloutIsNames = name_table<RolloutIsLevel>({{RolloutIsLevel::Off, ""},
                                                                    {RolloutIsLevel::Token, "token"},
                                                                    {RolloutIsLevel::Sequence, "sequence"},
                                                                    {RolloutIsLevel::Off, "null"},
                                                                    {RolloutIsLevel::Off, "none"}});
RolloutIsLevel parse_rollout_is_level(std::string_view name);

// w [n] (=) for one response (mask [n] 0/1): token: min(exp(clamp(old - rollout, -20, 20)), threshold);
// sequence: min(exp(clamp(sum_t mask (old - rollout), -20, 20)), threshold) on every token; 0 where masked.
void rollout_is_weights(float* w, const float* old_logp, const float* rollout_logp, const float* mask, int64_t n,
                        RolloutIsLevel level, double threshold);

// One rollout_rs criterion: a divergence statistic (k1 = -log_ratio, k2 = log_ratio^2 / 2, k3 = e^r - 1 - r)
// per token, or its sum, mean or max over a response, kept within [lower, upper] (k1: the log of the
// threshold's ratio bounds; k2 / k3: an upper bound only).
struct RejectionCriterion {
  enum class Level { Token, SeqSum, SeqMean, SeqMax } level = Level::Token;
  int k = 1;
  double lower = -INFINITY, upper = INFINITY;
  std::string name;  // verl's option name, e.g. "seq_mean_k3"
};

// verl's rollout_rs (comma-separated options: token_k1|k2|k3, seq_sum_k1|k2|k3, seq_mean_k1|k2|k3,
// seq_max_k2|k3) and rollout_rs_threshold (one value for every option or one per option; k1 options take
// "lower_upper" ratio bounds, or an upper bound U meaning [1/U, U]). Empty options: no criterion.
std::vector<RejectionCriterion> parse_rollout_rs(std::string_view options, std::string_view thresholds);

// keep [n] (=) 1 for the tokens of one response that pass every criterion, 0 for the others and for masked
// tokens.
void rollout_rejection_mask(float* keep, const float* old_logp, const float* rollout_logp, const float* mask,
                            int64_t n, const std::vector<RejectionCriterion>& criteria);

}  // namespace grpo::train
