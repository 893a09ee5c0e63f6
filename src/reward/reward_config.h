// One entry of reward.functions in the run config: which reward function, its weight and its settings.
// The config reader (grpo/config.h) fills it; reward/rewards.h builds the functions from it.
#pragma once
#include <cstdint>
#include <string>

namespace grpo {

// Limits of a reward function: scores and weights beyond kMaxRewardMagnitude would overflow the float sums
// of advantages (a score is refused at the reward, a weight at config time).
inline constexpr double kMaxRewardMagnitude = 1e6;
inline constexpr double kMaxRewardTimeoutSeconds = 7 * 24 * 3600;
inline constexpr int64_t kMaxRewardWorkers = 256;

struct RewardFunctionConfig {
  std::string name = "math";  // math | exact | format | external
  double weight = 1.0;
  std::string pattern;    // format: PCRE2 regex the response must match
  std::string command;    // external: shell command speaking JSONL on stdin/stdout
  double timeout_s = 10;  // external: per call
  int64_t workers = 2;    // external: worker processes
};

}  // namespace grpo
