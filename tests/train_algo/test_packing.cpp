// Tests of micro-batch packing: FFD never exceeds the token budget, places every sequence once, beats the
// padded baseline's efficiency on skewed lengths; packing efficiency (useful / computed tokens) on
// hand-made batches in every mode; errors.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"
#include "core/rng.h"
#include "train/packing.h"

using namespace grpo;
using namespace grpo::train;

namespace {

void expect_every_sequence_once(const MicroBatchPlan& plan, size_t n) {
  std::vector<int> seen(n, 0);
  for (const auto& mb : plan.micro_batches)
    for (int64_t s : mb.sequences) ++seen.at(static_cast<size_t>(s));
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(seen[i], 1) << "sequence " << i;
}

}  // namespace

TEST(Packing, FirstFitDecreasingRespectsTheBudget) {
  Rng rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    const int64_t budget = 64 + static_cast<int64_t>(rng.below(512));
    std::vector<int64_t> lengths(1 + rng.below(100));
    for (auto& l : lengths) l = 1 + static_cast<int64_t>(rng.below(static_cast<uint64_t>(budget)));
    auto plan = pack_by_token_budget(lengths, budget);
    expect_every_sequence_once(plan, lengths.size());
    int64_t real = 0;
    for (const auto& mb : plan.micro_batches) {
      int64_t sum = 0;
      for (int64_t s : mb.sequences) sum += lengths[static_cast<size_t>(s)];
      EXPECT_LE(sum, budget);
      EXPECT_EQ(sum, mb.real_tokens);
      EXPECT_EQ(mb.computed_tokens, sum);  // padding-free: only the sequences are computed
      EXPECT_TRUE(std::is_sorted(mb.sequences.begin(), mb.sequences.end()));
      real += sum;
    }
    EXPECT_EQ(plan.real_tokens, real);
    EXPECT_EQ(plan.computed_tokens, real);
  }
}

TEST(Packing, HandWorkedExample) {
  // Budget 10, lengths {3, 7, 5, 5, 2}: sorted 7,5,5,3,2 -> [7,3], [5,5], [2].
  std::vector<int64_t> lengths = {3, 7, 5, 5, 2};
  auto plan = pack_by_token_budget(lengths, 10);
  ASSERT_EQ(plan.micro_batches.size(), 3u);
  EXPECT_EQ(plan.micro_batches[0].sequences, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(plan.micro_batches[1].sequences, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(plan.micro_batches[2].sequences, (std::vector<int64_t>{4}));
  // The unused budget (8 of the last micro-batch) is not computed: nothing is wasted.
  EXPECT_DOUBLE_EQ(plan.efficiency(), 1.0);
  // Padded (verl's dynamic batches without remove-padding): [7,3] -> 2 x 7, [5,5] -> 10, [2] -> 2.
  auto padded = pack_by_token_budget(lengths, 10, /*padded=*/true);
  EXPECT_EQ(padded.micro_batches[0].computed_tokens, 14);
  EXPECT_EQ(padded.micro_batches[1].computed_tokens, 10);
  EXPECT_EQ(padded.micro_batches[2].computed_tokens, 2);
  EXPECT_DOUBLE_EQ(padded.efficiency(), 22.0 / 26.0);
}

TEST(Packing, ASmallPackedBatchWastesNothing) {
  std::vector<int64_t> lengths = {5};
  EXPECT_DOUBLE_EQ(pack_by_token_budget(lengths, 16384).efficiency(), 1.0);
  EXPECT_DOUBLE_EQ(split_fixed(lengths, 4, /*padded=*/true).efficiency(), 1.0);
}

TEST(Packing, FixedBatchesComputeBatchTimesLongestWhenPadded) {
  std::vector<int64_t> lengths = {3, 7, 5, 5, 2};
  auto plan = split_fixed(lengths, 2, /*padded=*/true);
  ASSERT_EQ(plan.micro_batches.size(), 3u);
  EXPECT_EQ(plan.micro_batches[0].computed_tokens, 14);  // 2 x 7
  EXPECT_EQ(plan.micro_batches[1].computed_tokens, 10);  // 2 x 5
  EXPECT_EQ(plan.micro_batches[2].computed_tokens, 2);   // 1 x 2
  EXPECT_DOUBLE_EQ(plan.efficiency(), 22.0 / 26.0);
  expect_every_sequence_once(plan, lengths.size());
  // Without padding (use_remove_padding) the same micro-batches compute only their tokens.
  auto unpadded = split_fixed(lengths, 2, /*padded=*/false);
  EXPECT_EQ(unpadded.micro_batches[0].computed_tokens, 10);
  EXPECT_DOUBLE_EQ(unpadded.efficiency(), 1.0);
}

TEST(Packing, PackingBeatsPaddingOnSkewedLengths) {
  // Response lengths of RL rollouts are skewed: most short, a few hitting the maximum.
  Rng rng(3);
  std::vector<int64_t> lengths(256);
  for (auto& l : lengths) l = rng.uniform() < 0.1 ? 512 : 32 + static_cast<int64_t>(rng.below(96));
  auto packed = pack_by_token_budget(lengths, 2048);
  auto padded = split_fixed(lengths, 8, /*padded=*/true);
  EXPECT_GT(packed.efficiency(), 0.9);
  EXPECT_GT(packed.efficiency(), padded.efficiency() + 0.3);
  EXPECT_EQ(packed.real_tokens, padded.real_tokens);
}

TEST(Packing, ErrorsNameTheSequence) {
  std::vector<int64_t> lengths = {4, 20, 3};
  try {
    pack_by_token_budget(lengths, 16);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sequence 1 has 20 tokens"), std::string::npos) << e.what();
  }
  std::vector<int64_t> zero = {4, 0};
  EXPECT_THROW(pack_by_token_budget(zero, 16), Error);
  EXPECT_THROW(split_fixed(lengths, 0, true), Error);
  std::vector<int64_t> none;
  EXPECT_TRUE(pack_by_token_budget(none, 16).micro_batches.empty());
  EXPECT_DOUBLE_EQ(pack_by_token_budget(none, 16).efficiency(), 1.0);
}
