// Loss aggregation (verl `loss_agg_mode`) as per-token weights.
//
// Every mode is a weighted sum of per-token losses: loss = sum_t w[t] L[t] with w[t] = m[t] c[s] where
// m is the response mask and c[s] a per-sequence constant computed over the WHOLE mini-batch. A
// mini-batch split into micro-batches (gradient accumulation) therefore gives exactly the loss of the
// mini-batch as one piece: the token-mean denominator counts every response token of the mini-batch.
// These weights feed the actor's objective (train/policy_objective.h).
#pragma once
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/names.h"

namespace grpo::train {

enum class LossAggMode {
  TokenMean,            // sum(m L) / sum(m)                          (DAPO, TRL bnpo/dapo)
  TokenSum,             // sum(m L)
  SeqMeanTokenSum,      // mean over sequences of sum_t m L
  SeqMeanTokenMean,     // mean over sequences of sum_t m L / sum_t m  (original GRPO, TRL grpo)
  SeqMeanTokenSumNorm,  // mean over sequences of sum_t m L / loss_scale_factor (Dr. GRPO)
  // Not a loss_agg_mode value: weight 1 / (number of sequences, empty ones included) for a loss that is one
  // value per sequence (geo_mean's torch.mean over the batch).
  SequenceMean,
};

// verl's names (actor.loss_agg_mode; SequenceMean is not one of them).
inline constexpr auto kLossAggModeNames =
    name_table<LossAggMode>({{LossAggMode::TokenMean, "token-mean"},
                             {LossAggMode::TokenSum, "token-sum"},
                             {LossAggMode::SeqMeanTokenSum, "seq-mean-token-sum"},
                             {LossAggMode::SeqMeanTokenMean, "seq-mean-token-mean"},
                             {LossAggMode::SeqMeanTokenSumNorm, "seq-mean-token-sum-norm"}});

LossAggMode parse_loss_agg_mode(std::string_view name);  // verl names, e.g. "token-mean" (not SequenceMean)
std::string_view loss_agg_mode_name(LossAggMode mode);

// c[s] for each sequence of a mini-batch given its number of response (unmasked) tokens. Sequences with no
// response token (e.g. truncated responses masked out) get 0 and are not counted by the seq-mean modes.
// loss_scale_factor (> 0) is used by SeqMeanTokenSumNorm only. A mini-batch without any response
// token gives all zeros (never NaN).
std::vector<float> sequence_loss_weights(std::span<const int64_t> response_tokens, LossAggMode mode,
                                         float loss_scale_factor);

// w[t] = mask[t] * seq_weight for the n tokens of one sequence (mask is 0/1; w [n]).
void fill_token_weights(float* w, const float* mask, int64_t n, float seq_weight);

}  // namespace grpo::train
