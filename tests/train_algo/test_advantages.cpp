// Tests of GRPO advantages (hand-computed values, groups of one, all-equal groups, the PyTorch reference),
// DAPO group filtering and overlong shaping.
#include <gtest/gtest.h>

#include <cmath>

#include "grpo_case_reader.h"
#include "train/advantages.h"

using namespace grpo;
using namespace grpo::train;

TEST(Advantages, GroupStdMatchesHandComputedValues) {
  // Group {1, 0, 0, 1}: mean 0.5, unbiased std sqrt(1/3) = 0.57735.
  // Group {2, 4}: mean 3, unbiased std sqrt(2) = 1.41421.
  std::vector<float> r = {1, 0, 0, 1, 2, 4};
  std::vector<int64_t> sizes = {4, 2};
  auto a = grpo_advantages(r, sizes, AdvantageScaling::GroupStd);
  const double s1 = std::sqrt(1.0 / 3.0), s2 = std::sqrt(2.0);
  EXPECT_NEAR(a[0], 0.5 / (s1 + 1e-6), 1e-6);
  EXPECT_NEAR(a[1], -0.5 / (s1 + 1e-6), 1e-6);
  EXPECT_NEAR(a[4], -1.0 / (s2 + 1e-6), 1e-6);
  EXPECT_NEAR(a[5], 1.0 / (s2 + 1e-6), 1e-6);
}

TEST(Advantages, NoStdOnlyCentres) {
  std::vector<float> r = {1, 0, 0, 1, 2, 4};
  std::vector<int64_t> sizes = {4, 2};
  auto a = grpo_advantages(r, sizes, AdvantageScaling::None);
  std::vector<float> expected = {0.5f, -0.5f, -0.5f, 0.5f, -1.0f, 1.0f};
  for (size_t i = 0; i < r.size(); ++i) EXPECT_FLOAT_EQ(a[i], expected[i]);
}

TEST(Advantages, BatchStdUsesTheStdOfAllRewards) {
  std::vector<float> r = {1, 0, 0, 1, 2, 4};
  std::vector<int64_t> sizes = {4, 2};
  // batch mean 4/3; sum of squares 1+0+0+1+4+16 = 22; var = (22 - 6 (4/3)^2) / 5 = (22 - 32/3) / 5.
  const double batch_std = std::sqrt((22.0 - 32.0 / 3.0) / 5.0);
  auto a = grpo_advantages(r, sizes, AdvantageScaling::BatchStd);
  EXPECT_NEAR(a[0], 0.5 / (batch_std + 1e-6), 1e-6);
  EXPECT_NEAR(a[5], 1.0 / (batch_std + 1e-6), 1e-6);
}

TEST(Advantages, GroupOfOneHasMeanZeroStdOne) {
  std::vector<float> r = {0.75f, 3, 5};
  std::vector<int64_t> sizes = {1, 2};
  auto a = grpo_advantages(r, sizes, AdvantageScaling::GroupStd);
  EXPECT_NEAR(a[0], 0.75 / (1 + 1e-6), 1e-7);
  auto b = grpo_advantages(r, sizes, AdvantageScaling::None);
  EXPECT_FLOAT_EQ(b[0], 0.75f);
}

TEST(Advantages, AllEqualRewardsGiveZeroAndNoNan) {
  std::vector<float> r = {1, 1, 1, 1};
  std::vector<int64_t> sizes = {4};
  for (auto s : {AdvantageScaling::GroupStd, AdvantageScaling::BatchStd, AdvantageScaling::None})
    for (float v : grpo_advantages(r, sizes, s)) EXPECT_EQ(v, 0.0f);
}

TEST(Advantages, SizesThatDoNotMatchAreErrors) {
  std::vector<float> r = {1, 2, 3};
  std::vector<int64_t> bad_total = {2, 2}, empty_group = {3, 0};
  EXPECT_THROW(grpo_advantages(r, bad_total, AdvantageScaling::GroupStd), Error);
  EXPECT_THROW(grpo_advantages(r, empty_group, AdvantageScaling::GroupStd), Error);
  EXPECT_THROW(parse_advantage_scaling("groups"), Error);
  EXPECT_EQ(parse_advantage_scaling("batch"), AdvantageScaling::BatchStd);
}

TEST(Advantages, MatchThePyTorchReference) {
  for (const char* variant : {"qwen3", "qwen3-tied", "qwen2"}) {
    auto t = test::read_reference_tensors(std::string(GRPO_SHARED_DIR) + "/reference/models/" + variant +
                                          "/grpo_case.safetensors");
    std::vector<float> r(t["rewards"].begin(), t["rewards"].end());
    std::vector<int64_t> sizes = {4, 4};
    auto a = grpo_advantages(r, sizes, AdvantageScaling::GroupStd, 1e-6);
    ASSERT_EQ(a.size(), t["advantages"].size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], t["advantages"][i], 1e-5) << variant << " " << i;
  }
}

TEST(GroupFilter, DropsGroupsWithAllEqualRewards) {
  std::vector<float> r = {1, 1, 1, 0, 1, 0.5f, 0.5f, 2};
  std::vector<int64_t> sizes = {3, 2, 2, 1};
  auto keep = groups_with_signal(r, sizes);
  EXPECT_EQ(keep, (std::vector<bool>{false, true, false, false}));
}

TEST(OverlongShaping, LinearInsideTheBuffer) {
  // max 100, buffer 20: no penalty up to 80, then -factor * (len - 80) / 20.
  EXPECT_EQ(overlong_penalty(50, 100, 20, 1.0f), 0.0f);
  EXPECT_EQ(overlong_penalty(80, 100, 20, 1.0f), 0.0f);
  EXPECT_FLOAT_EQ(overlong_penalty(85, 100, 20, 1.0f), -0.25f);
  EXPECT_FLOAT_EQ(overlong_penalty(100, 100, 20, 0.5f), -0.5f);
  EXPECT_FLOAT_EQ(overlong_penalty(130, 100, 20, 0.5f), -0.5f);
  EXPECT_THROW(overlong_penalty(10, 100, 0, 1.0f), Error);
  EXPECT_THROW(overlong_penalty(10, 100, 101, 1.0f), Error);
}
