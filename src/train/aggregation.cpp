// Loss aggregation weights (see aggregation.h).
#include "train/aggregation.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace grpo::train {

LossAggMode parse_loss_agg_mode(std::string_view name) {
  if (auto m = kLossAggModeNames.find(name)) return *m;
  fail("[aggregation] unknown loss_agg_mode \"", name, "\": expected ", kLossAggModeNames.listing());
}

std::string_view loss_agg_mode_name(LossAggMode mode) {
  return mode == LossAggMode::SequenceMean ? "sequence-mean" : kLossAggModeNames.name(mode);
}

std::vector<float> sequence_loss_weights(std::span<const int64_t> response_tokens, LossAggMode mode,
                                         float loss_scale_factor) {
  GRPO_CHECK(mode != LossAggMode::SeqMeanTokenSumNorm || loss_scale_factor > 0,
             "[aggregation] loss_scale_factor must be > 0 for seq-mean-token-sum-norm, got ", loss_scale_factor);
  int64_t total_tokens = 0, nonempty = 0;
  for (size_t s = 0; s < response_tokens.size(); ++s) {
    GRPO_CHECK(response_tokens[s] >= 0, "[aggregation] sequence ", s, " has ", response_tokens[s],
               " response tokens");
    total_tokens += response_tokens[s];
    nonempty += response_tokens[s] > 0;
  }
  std::vector<float> c(response_tokens.size(), 0.0f);
  if (mode == LossAggMode::SequenceMean) {
    for (float& v : c) v = 1.0f / static_cast<float>(c.size());
    return c;
  }
  if (total_tokens == 0) return c;
  for (size_t s = 0; s < response_tokens.size(); ++s) {
    const double n = static_cast<double>(response_tokens[s]);
    if (n == 0) continue;
    double weight = 0;
    switch (mode) {
      case LossAggMode::TokenMean: weight = 1.0 / static_cast<double>(total_tokens); break;
      case LossAggMode::TokenSum: weight = 1.0; break;
      case LossAggMode::SeqMeanTokenSum: weight = 1.0 / static_cast<double>(nonempty); break;
      case LossAggMode::SeqMeanTokenMean: weight = 1.0 / (n * static_cast<double>(nonempty)); break;
      case LossAggMode::SeqMeanTokenSumNorm:
        weight = 1.0 / (static_cast<double>(nonempty) * loss_scale_factor);
        break;
      case LossAggMode::SequenceMean: break;  // above
    }
    c[s] = static_cast<float>(weight);
  }
  return c;
}

void fill_token_weights(float* w, const float* mask, int64_t n, float seq_weight) {
  for (int64_t t = 0; t < n; ++t) w[t] = mask[t] * seq_weight;
}

}  // namespace grpo::train
