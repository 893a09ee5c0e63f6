// Token sampling from one row of logits: temperature, top-k, top-p, min-p, then one uniform draw from
// the sample's own RNG. Returns the token and its log-prob under softmax(logits / temperature) over the
// full vocabulary, and optionally the log-probs of the most likely tokens under that same distribution.
// Scratch is owned by the Sampler and sized once (no allocation per call).
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "core/rng.h"
#include "rollout/request.h"

namespace grpo::rollout {

struct SampledToken {
  int32_t token = -1;
  float logprob = 0;
  std::array<TokenLogprob, kMaxTopLogprobs> top;  // [num_top] the most likely tokens, most likely first
  int32_t num_top = 0;
};

class Sampler {
 public:
  explicit Sampler(int64_t vocab_size);
  // logits [V]. Candidates tie-break by lower token id. top_n in [0, kMaxTopLogprobs]: alternatives wanted
  // (they do not change the draw). Throws grpo::Error on NaN logits.
  SampledToken sample(const float* logits, const SamplingParams& p, Rng& rng, int32_t top_n = 0);
  // Scoring a given token: its log-prob under softmax(logits / temperature) (temperature > 0) and the top_n
  // alternatives, as sample() reports them. Draws nothing.
  SampledToken score(const float* logits, int32_t token, float temperature, int32_t top_n);
  int64_t vocab_size() const { return V_; }

 private:
  // Makes order_[0..m) the m most likely tokens, sorted (prob desc, id asc); returns the new sorted count.
  int64_t sort_prefix(int64_t m, int64_t sorted);
  // The first token id whose running sum of prob_ exceeds r (fallback when rounding leaves r beyond it).
  int32_t draw_in_id_order(double r, int32_t fallback) const;
  int64_t V_;
  std::vector<float> prob_;      // [V] softmax(logits / temperature)
  std::vector<int32_t> order_;   // [V] token ids, a sorted prefix of them once truncation needs it
};

}  // namespace grpo::rollout
