// Data-parallel balance (train/balance.h): Karmarkar-Karp partitions against brute force on small inputs,
// determinism, degenerate inputs; split_to_count keeps every sequence once, respects the token budget and
// reaches the count (with empty micro-batches when sequences run out).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "core/rng.h"
#include "train/balance.h"

using namespace grpo;
using namespace grpo::train;

namespace {

int64_t spread(const std::vector<std::vector<int64_t>>& parts, const std::vector<int64_t>& w) {
  int64_t lo = INT64_MAX, hi = 0;
  for (const auto& p : parts) {
    int64_t s = 0;
    for (int64_t i : p) s += w[i];
    lo = std::min(lo, s);
    hi = std::max(hi, s);
  }
  return hi - lo;
}

// The best 2-way spread by brute force.
int64_t best_two_way(const std::vector<int64_t>& w) {
  const int64_t total = std::accumulate(w.begin(), w.end(), int64_t{0});
  int64_t best = total;
  for (uint32_t mask = 0; mask < (1u << w.size()); ++mask) {
    int64_t a = 0;
    for (size_t i = 0; i < w.size(); ++i)
      if (mask >> i & 1) a += w[i];
    best = std::min<int64_t>(best, std::llabs(total - 2 * a));
  }
  return best;
}

TEST(Balance, PartitionsCoverEverySequenceOnceAndAreNearlyEven) {
  Rng rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    const int parts = 1 + trial % 4;
    std::vector<int64_t> w(1 + rng.below(14));
    for (int64_t& x : w) x = 1 + static_cast<int64_t>(rng.below(300));
    const auto p = balanced_partitions(w, parts);
    ASSERT_EQ(static_cast<int>(p.size()), parts);
    std::vector<int64_t> seen;
    for (const auto& part : p) {
      EXPECT_TRUE(std::is_sorted(part.begin(), part.end()));
      seen.insert(seen.end(), part.begin(), part.end());
    }
    std::sort(seen.begin(), seen.end());
    std::vector<int64_t> all(w.size());
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(seen, all);
    // The largest differencing method is within one item of the optimum for two parts on such inputs.
    if (parts == 2) {
      EXPECT_LE(spread(p, w), best_two_way(w) + *std::max_element(w.begin(), w.end()) / 2) << trial;
    }
    EXPECT_EQ(balanced_partitions(w, parts), p) << "deterministic";
  }
  // The textbook example: differencing 8-7, 6-5, 4-1, 3-1 leaves 2 (the optimum, 8+7 / 6+5+4, is 0).
  const std::vector<int64_t> w = {8, 7, 6, 5, 4};
  EXPECT_EQ(spread(balanced_partitions(w, 2), w), 2);
  const std::vector<int64_t> even = {10, 10, 10, 10, 10, 10};
  EXPECT_EQ(spread(balanced_partitions(even, 3), even), 0);
  EXPECT_EQ(balanced_partitions({}, 3).size(), 3u);
  EXPECT_EQ(balanced_partitions(std::vector<int64_t>{5}, 2)[1].size(), 0u);
  EXPECT_THROW(balanced_partitions(w, 0), Error);
}

TEST(Balance, SplitToCountKeepsTheBudgetAndEverySequence) {
  const std::vector<int64_t> len = {30, 20, 20, 10, 5, 5, 3};
  MicroBatchPlan p = pack_by_token_budget(len, 64);
  ASSERT_EQ(p.micro_batches.size(), 2u);
  split_to_count(p, len, 5, /*padded=*/false);
  ASSERT_EQ(p.micro_batches.size(), 5u);
  std::vector<int64_t> seen;
  for (const MicroBatch& m : p.micro_batches) {
    EXPECT_LE(m.real_tokens, 64);
    EXPECT_FALSE(m.sequences.empty());
    EXPECT_EQ(m.computed_tokens, m.real_tokens);
    seen.insert(seen.end(), m.sequences.begin(), m.sequences.end());
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(p.real_tokens, 93);
  EXPECT_EQ(p.computed_tokens, 93);
  // Two sequences cannot make four micro-batches: the rest are empty and cost nothing; padded pieces
  // compute size x longest.
  const std::vector<int64_t> two = {9, 4};
  MicroBatchPlan q = split_fixed(two, 2, /*padded=*/true);
  EXPECT_EQ(q.computed_tokens, 18);
  split_to_count(q, two, 4, /*padded=*/true);
  ASSERT_EQ(q.micro_batches.size(), 4u);
  EXPECT_EQ(q.micro_batches[2].sequences.size(), 0u);
  EXPECT_EQ(q.computed_tokens, 9 + 4);
  EXPECT_THROW(split_to_count(q, two, 3, /*padded=*/true), Error);
}

}  // namespace
