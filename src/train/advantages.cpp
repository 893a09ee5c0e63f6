// GRPO advantages, DAPO group filtering and overlong shaping (see advantages.h).
#include "train/advantages.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace grpo::train {

AdvantageScaling parse_advantage_scaling(std::string_view name) {
  if (name == "group") return AdvantageScaling::GroupStd;
  if (name == "batch") return AdvantageScaling::BatchStd;
  if (name == "none") return AdvantageScaling::None;
  fail("[advantages] unknown reward scaling \"", name, "\": expected group, batch or none");
}

std::string_view advantage_scaling_name(AdvantageScaling s) {
  switch (s) {
    case AdvantageScaling::GroupStd: return "group";
    case AdvantageScaling::BatchStd: return "batch";
    case AdvantageScaling::None: return "none";
  }
  return "?";
}

namespace {

int64_t checked_total(std::span<const float> rewards, std::span<const int64_t> group_sizes) {
  int64_t total = 0;
  for (size_t g = 0; g < group_sizes.size(); ++g) {
    GRPO_CHECK(group_sizes[g] >= 1, "[advantages] group ", g, " has size ", group_sizes[g], ", expected >= 1");
    total += group_sizes[g];
  }
  GRPO_CHECK(total == static_cast<int64_t>(rewards.size()), "[advantages] group sizes add up to ", total,
             " but there are ", rewards.size(), " rewards");
  return total;
}

// Unbiased standard deviation of x (0 for fewer than two values).
double unbiased_std(std::span<const float> x) {
  if (x.size() < 2) return 0.0;
  double mean = 0;
  for (float v : x) mean += v;
  mean /= static_cast<double>(x.size());
  double ss = 0;
  for (float v : x) ss += (v - mean) * (v - mean);
  return std::sqrt(ss / static_cast<double>(x.size() - 1));
}

}  // namespace

std::vector<float> grpo_advantages(std::span<const float> rewards, std::span<const int64_t> group_sizes,
                                   AdvantageScaling scaling, double eps) {
  checked_total(rewards, group_sizes);
  const double batch_std = unbiased_std(rewards);
  std::vector<float> adv(rewards.size());
  size_t begin = 0;
  for (int64_t size : group_sizes) {
    std::span<const float> group = rewards.subspan(begin, static_cast<size_t>(size));
    double mean = 0, std = 1;  // a group of one: mean 0, std 1
    if (size > 1) {
      for (float r : group) mean += r;
      mean /= static_cast<double>(size);
      std = unbiased_std(group);
    }
    if (scaling == AdvantageScaling::BatchStd) std = batch_std;
    for (int64_t i = 0; i < size; ++i) {
      double centred = group[static_cast<size_t>(i)] - mean;
      adv[begin + static_cast<size_t>(i)] =
          static_cast<float>(scaling == AdvantageScaling::None ? centred : centred / (std + eps));
    }
    begin += static_cast<size_t>(size);
  }
  return adv;
}

std::vector<bool> groups_with_signal(std::span<const float> rewards, std::span<const int64_t> group_sizes) {
  checked_total(rewards, group_sizes);
  std::vector<bool> keep;
  keep.reserve(group_sizes.size());
  size_t begin = 0;
  for (int64_t size : group_sizes) {
    auto group = rewards.subspan(begin, static_cast<size_t>(size));
    auto [lo, hi] = std::minmax_element(group.begin(), group.end());
    keep.push_back(*lo != *hi);
    begin += static_cast<size_t>(size);
  }
  return keep;
}

float overlong_penalty(int64_t response_length, int64_t max_response_length, int64_t buffer_len,
                       float penalty_factor) {
  GRPO_CHECK(buffer_len >= 1 && buffer_len <= max_response_length, "[advantages] overlong buffer length ",
             buffer_len, " must be in [1, max_response_length = ", max_response_length, "]");
  const int64_t expected = max_response_length - buffer_len;
  const int64_t exceed = std::min(response_length, max_response_length) - expected;
  if (exceed <= 0) return 0.0f;
  return -static_cast<float>(exceed) / static_cast<float>(buffer_len) * penalty_factor;
}

}  // namespace grpo::train
