// Tests of loss aggregation weights: every mode equals its definition on the whole mini-batch when the
// mini-batch is split into micro-batches, matches the PyTorch reference losses, and never gives NaN;
// truncated importance sampling weights.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/rng.h"
#include "grpo_case_reader.h"
#include "train/aggregation.h"
#include "train/rollout_correction.h"

using namespace grpo;
using namespace grpo::train;

namespace {

struct Sequence {
  std::vector<float> mask, loss;  // [n]
};

// The mode's definition, written directly from grpo-math.md (sequences without response tokens do not
// count in seq-mean denominators).
double aggregate_directly(const std::vector<Sequence>& seqs, LossAggMode mode, double scale) {
  double masked_sum = 0, tokens = 0, seq_sum = 0, seq_mean_sum = 0, nonempty = 0;
  for (const auto& s : seqs) {
    double sum = 0, n = 0;
    for (size_t t = 0; t < s.mask.size(); ++t) {
      sum += s.mask[t] * s.loss[t];
      n += s.mask[t];
    }
    masked_sum += sum;
    tokens += n;
    if (n > 0) {
      seq_sum += sum;
      seq_mean_sum += sum / n;
      nonempty += 1;
    }
  }
  switch (mode) {
    case LossAggMode::TokenMean: return masked_sum / tokens;
    case LossAggMode::TokenSum: return masked_sum;
    case LossAggMode::SequenceMean: return NAN;  // not a token aggregation
    case LossAggMode::SeqMeanTokenSum: return seq_sum / nonempty;
    case LossAggMode::SeqMeanTokenMean: return seq_mean_sum / nonempty;
    case LossAggMode::SeqMeanTokenSumNorm: return seq_sum / nonempty / scale;
  }
  return NAN;
}

const LossAggMode kModes[] = {LossAggMode::TokenMean, LossAggMode::TokenSum, LossAggMode::SeqMeanTokenSum,
                              LossAggMode::SeqMeanTokenMean, LossAggMode::SeqMeanTokenSumNorm};

}  // namespace

TEST(Aggregation, MicroBatchSplitsSumToTheMiniBatchLoss) {
  Rng rng(42);
  std::vector<Sequence> seqs(13);
  for (size_t s = 0; s < seqs.size(); ++s) {
    const int64_t n = 1 + static_cast<int64_t>(rng.below(40));
    const int64_t prompt = static_cast<int64_t>(rng.below(static_cast<uint64_t>(n)));
    for (int64_t t = 0; t < n; ++t) {
      // sequence 5 is fully masked, as a truncated response under mask_truncated_completions would be
      seqs[s].mask.push_back(s == 5 || t < prompt ? 0.0f : 1.0f);
      seqs[s].loss.push_back(static_cast<float>(rng.normal()));
    }
  }
  std::vector<int64_t> counts;
  for (const auto& s : seqs) counts.push_back(static_cast<int64_t>(std::count(s.mask.begin(), s.mask.end(), 1.0f)));

  for (LossAggMode mode : kModes) {
    const auto c = sequence_loss_weights(counts, mode, 64.0f);
    const double expected = aggregate_directly(seqs, mode, 64.0);
    // Micro-batches of 1, 4 and all sequences: each accumulates sum_t w[t] L[t] over its own tokens only.
    for (size_t micro : {size_t{1}, size_t{4}, seqs.size()}) {
      double total = 0;
      for (size_t begin = 0; begin < seqs.size(); begin += micro) {
        double micro_loss = 0;
        for (size_t s = begin; s < std::min(seqs.size(), begin + micro); ++s) {
          std::vector<float> w(seqs[s].mask.size());
          fill_token_weights(w.data(), seqs[s].mask.data(), static_cast<int64_t>(w.size()), c[s]);
          for (size_t t = 0; t < w.size(); ++t) micro_loss += static_cast<double>(w[t]) * seqs[s].loss[t];
        }
        total += micro_loss;
      }
      EXPECT_NEAR(total, expected, 1e-5 * std::max(1.0, std::abs(expected)))
          << loss_agg_mode_name(mode) << " micro " << micro;
    }
  }
}

TEST(Aggregation, NoResponseTokensGivesZeroWeightsNotNan) {
  std::vector<int64_t> counts = {0, 0};
  for (LossAggMode mode : kModes)
    for (float c : sequence_loss_weights(counts, mode, 16.0f)) EXPECT_EQ(c, 0.0f);
}

TEST(Aggregation, BadInputsAreErrors) {
  std::vector<int64_t> counts = {3};
  EXPECT_THROW(sequence_loss_weights(counts, LossAggMode::SeqMeanTokenSumNorm, 0.0f), Error);
  std::vector<int64_t> negative = {-1};
  EXPECT_THROW(sequence_loss_weights(negative, LossAggMode::TokenMean, 1.0f), Error);
  EXPECT_THROW(parse_loss_agg_mode("token_mean"), Error);
  for (LossAggMode mode : kModes) EXPECT_EQ(parse_loss_agg_mode(loss_agg_mode_name(mode)), mode);
}

// The reference losses of /work/shared/reference (PyTorch, float64): per-token loss recomputed here in
// double from the formula in its README, aggregated with our weights.
TEST(Aggregation, MatchesThePyTorchReferenceLosses) {
  for (const char* variant : {"qwen3", "qwen3-tied", "qwen2"}) {
    auto t = test::read_reference_tensors(std::string(GRPO_SHARED_DIR) + "/reference/models/" + variant +
                                          "/grpo_case.safetensors");
    const double clip_low = 0.2, clip_high = 0.28, clip_c = 3.0, kl_coef = 0.04, ent_coef = 0.01;
    const auto& lens = t["seq_lens"];
    std::vector<int64_t> counts;
    std::vector<double> token_loss;
    size_t target = 0;
    for (size_t s = 0; s < lens.size(); ++s) {
      int64_t n = 0;
      const double a = t["advantages"][s];
      for (int64_t j = 0; j + 1 < static_cast<int64_t>(lens[s]); ++j, ++target) {
        const double logp = t["token_logprobs"][target], old = t["old_logprobs"][target];
        const double ratio = std::exp(std::clamp(logp - old, -20.0, 20.0));
        double pg = std::max(-a * ratio, -a * std::clamp(ratio, 1 - clip_low, 1 + clip_high));
        if (a < 0) pg = std::min(pg, -clip_c * a);
        const double x = std::clamp(t["ref_logprobs"][target] - logp, -20.0, 20.0);
        const double kl = std::clamp(std::exp(x) - x - 1, -10.0, 10.0);
        token_loss.push_back(pg + kl_coef * kl - ent_coef * t["entropy"][target]);
        n += t["response_mask"][target] > 0.5;
      }
      counts.push_back(n);
    }
    ASSERT_EQ(target, t["response_mask"].size());
    // Made with verl before 1dda039: its seq-mean-token-sum-norm divides the token sum by 16 alone (verl now
    // divides by the number of sequences too), and it has no token-sum.
    const float sequences = static_cast<float>(std::count_if(counts.begin(), counts.end(), [](int64_t n) { return n > 0; }));
    for (LossAggMode mode : kModes) {
      if (mode == LossAggMode::TokenSum) continue;
      const auto c = sequence_loss_weights(counts, mode, mode == LossAggMode::SeqMeanTokenSumNorm ? 16.0f / sequences : 16.0f);
      double loss = 0;
      target = 0;
      for (size_t s = 0; s < lens.size(); ++s)
        for (int64_t j = 0; j + 1 < static_cast<int64_t>(lens[s]); ++j, ++target)
          loss += t["response_mask"][target] * c[s] * token_loss[target];
      const double expected = t[std::string("loss.") + std::string(loss_agg_mode_name(mode))][0];
      EXPECT_NEAR(loss, expected, 1e-4 * std::abs(expected)) << variant << " " << loss_agg_mode_name(mode);
    }
  }
}

TEST(RolloutCorrection, TokenWeightsAreTruncatedRatios) {
  float old_logp[] = {-1.0f, -1.0f, -3.0f, 0.0f, -5.0f};
  float rollout[] = {-1.0f, -2.0f, -1.0f, -100.0f, -1.0f};
  float mask[] = {1, 1, 1, 1, 0};
  float w[5];
  rollout_is_weights(w, old_logp, rollout, mask, 5, RolloutIsLevel::Token, 2.0);
  EXPECT_FLOAT_EQ(w[0], 1.0f);
  EXPECT_FLOAT_EQ(w[1], 2.0f);  // exp(1) = 2.718 capped at 2
  EXPECT_NEAR(w[2], std::exp(-2.0f), 1e-7);
  EXPECT_FLOAT_EQ(w[3], 2.0f);  // huge ratio: finite, capped
  EXPECT_EQ(w[4], 0.0f);        // masked
  EXPECT_THROW(rollout_is_weights(w, old_logp, rollout, mask, 5, RolloutIsLevel::Token, 0.0), Error);
}

TEST(RolloutCorrection, SequenceWeightIsTheProductOfTheTokenRatios) {
  float old_logp[] = {-1.0f, -1.5f, -3.0f, -7.0f};
  float rollout[] = {-1.2f, -1.0f, -2.9f, -1.0f};
  float mask[] = {1, 1, 1, 0};
  float w[4];
  rollout_is_weights(w, old_logp, rollout, mask, 4, RolloutIsLevel::Sequence, 5.0);
  const double expected = std::exp(0.2 - 0.5 - 0.1);
  for (int t = 0; t < 3; ++t) EXPECT_NEAR(w[t], expected, 1e-6);
  EXPECT_EQ(w[3], 0.0f);
  rollout_is_weights(w, old_logp, rollout, mask, 4, RolloutIsLevel::Sequence, 0.5);
  EXPECT_FLOAT_EQ(w[0], 0.5f);
  EXPECT_EQ(parse_rollout_is_level("null"), RolloutIsLevel::Off);
  EXPECT_THROW(parse_rollout_is_level("tokens"), Error);
}

TEST(RolloutCorrection, RejectionCriteriaAsVerl) {
  // log_ratio = old - rollout per token: 0.1, -0.5, 0.05 (and a masked token).
  float old_logp[] = {-1.0f, -2.0f, -0.5f, -9.0f};
  float rollout[] = {-1.1f, -1.5f, -0.55f, -1.0f};
  float mask[] = {1, 1, 1, 0};
  float keep[4];
  // token_k1 with ratio bounds [1/1.5, 1.5]: k1 = -log_ratio must lie in [-log 1.5, log 1.5] = +-0.405.
  rollout_rejection_mask(keep, old_logp, rollout, mask, 4, parse_rollout_rs("token_k1", "1.5"));
  EXPECT_EQ(keep[0], 1.0f);
  EXPECT_EQ(keep[1], 0.0f);  // k1 = 0.5
  EXPECT_EQ(keep[2], 1.0f);
  EXPECT_EQ(keep[3], 0.0f);  // masked
  // seq_mean_k2: mean of r^2 / 2 = (0.005 + 0.125 + 0.00125) / 3 = 0.04375; a bound of 0.04 rejects the response.
  rollout_rejection_mask(keep, old_logp, rollout, mask, 4, parse_rollout_rs("seq_mean_k2", "0.04"));
  for (float k : keep) EXPECT_EQ(k, 0.0f);
  rollout_rejection_mask(keep, old_logp, rollout, mask, 4, parse_rollout_rs("seq_mean_k2", "0.05"));
  EXPECT_EQ(keep[0] + keep[1] + keep[2], 3.0f);
  // Two criteria, one threshold each; k1 with explicit "lower_upper" bounds.
  const auto both = parse_rollout_rs("token_k1, seq_max_k3", "0.9_2.0,0.2");
  ASSERT_EQ(both.size(), 2u);
  EXPECT_NEAR(both[0].lower, std::log(0.9), 1e-12);
  EXPECT_NEAR(both[0].upper, std::log(2.0), 1e-12);
  rollout_rejection_mask(keep, old_logp, rollout, mask, 4, both);
  // token_k1 keeps k1 in [-0.105, 0.693]: token 0 (k1 = -0.1) and 1 (0.5) and 2 (-0.05); seq_max_k3 =
  // e^-0.5 + 0.5 - 1 = 0.1065 <= 0.2 keeps the response.
  EXPECT_EQ(keep[0] + keep[1] + keep[2], 3.0f);
  EXPECT_TRUE(parse_rollout_rs("", "").empty());
  EXPECT_THROW(parse_rollout_rs("seq_max_k1", "2"), Error);
  EXPECT_THROW(parse_rollout_rs("token_k2", "0.1_0.2"), Error);
  EXPECT_THROW(parse_rollout_rs("token_k2,token_k3", "1,2,3"), Error);
  EXPECT_THROW(parse_rollout_rs("token_k2", ""), Error);
}
