// One entry of reward.functions in the run config: which reward function, its weight and its settings
// (verl: verl's rules by data_source, reward/verl/verl_reward.h; python: reward/python_reward.h).
// The config reader (config/config.h) fills it; reward/rewards.h builds the functions from it.
#pragma once
#include <cstdint>
#include <string>

#include "core/names.h"

namespace grpo {

// Limits of a reward function: scores and weights beyond kMaxRewardMagnitude would overflow the float sums
// of advantages (a score is refused at the reward, a weight at config time).
inline constexpr double kMaxRewardMagnitude = 1e6;
inline constexpr double kMaxRewardTimeoutSeconds = 7 * 24 * 3600;
inline constexpr int64_t kMaxRewardWorkers = 256;

// The reward functions there are (reward/rewards.h builds each).
enum class RewardKind { Math, Exact, Format, External, Verl, Python };
inline constexpr auto kRewardKindNames = name_table<RewardKind>({{RewardKind::Math, "math"},
                                                                 {RewardKind::Exact, "exact"},
                                                                 {RewardKind::Format, "format"},
                                                                 {RewardKind::External, "external"},
                                                                 {RewardKind::Verl, "verl"},
                                                                 {RewardKind::Python, "python"}});

struct RewardFunctionConfig {
  RewardKind name = RewardKind::Math;
  double weight = 1.0;
  std::string pattern;    // format: PCRE2 regex the response must match
  std::string command;    // external: shell command speaking JSONL on stdin/stdout
  double timeout_s = 10;  // external, python: per call
  int64_t workers = 2;    // external, python: worker processes
  std::string path;                       // python: the .py file
  std::string function = "compute_score";  // python: the function in it
  std::string kwargs_json = "{}";          // python: keyword arguments (a JSON object)
  bool batch = false;                      // python: the function takes lists (verl's batch reward manager)
};

}  // namespace grpo
