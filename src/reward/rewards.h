// Reward functions: the built-in `math` (answer from \boxed{} or the last number, compared by value),
// `exact` (extracted answer, else the whole response, equal to the answer as text), `format` (1 when a
// PCRE2 regex matches the response), user commands (external_reward.h), and their weighted sum.
// A function that cannot score a sample (a command that crashed, timed out, or replied with something
// other than a number in [-kMaxRewardMagnitude, kMaxRewardMagnitude]) scores it 0 and counts it as a
// failure: the trainer logs reward/<name>/failures and stops the run when a step's failures exceed
// reward.max_failure_fraction (check_reward_failures).
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "reward/reward_config.h"

namespace grpo {

struct RewardInput {
  std::string id;
  std::string prompt;    // the prompt text (or rendered chat)
  std::string response;  // the generated text
  std::string answer;    // the reference answer
  std::string data_source = {};          // verl's data_source ("" when the dataset has none)
  nlohmann::json extra_info = nullptr;   // verl's extra_info (null when absent)
};

class RewardFunction {
 public:
  virtual ~RewardFunction() = default;
  virtual std::string name() const = 0;
  // Writes one score per input into out [batch.size()] and returns how many inputs it failed to score
  // (scored 0). Never throws for a bad response: it scores 0 (not a failure: the response is wrong).
  virtual int64_t score(std::span<const RewardInput> batch, std::span<float> out) = 0;
  // What the last failure was ("" when there was none), for the error that stops a run.
  virtual std::string last_failure() const { return ""; }
};

std::unique_ptr<RewardFunction> make_math_reward();
std::unique_ptr<RewardFunction> make_exact_reward();
// The pattern is compiled once; an invalid pattern is an error naming it and the offset.
std::unique_ptr<RewardFunction> make_format_reward(const std::string& pattern);

float math_reward(const std::string& response, const std::string& answer);   // 1 or 0
float exact_reward(const std::string& response, const std::string& answer);  // 1 or 0

struct WeightedReward {
  std::unique_ptr<RewardFunction> function;
  double weight = 1.0;
};

// reward.functions -> the functions (external ones start their workers lazily on first use).
std::vector<WeightedReward> make_rewards(const std::vector<RewardFunctionConfig>& configs);

struct RewardScores {
  std::vector<float> total;                     // [batch] sum of weight x score
  std::vector<std::string> names;               // [functions] unique: "format", "format_2", ...
  std::vector<std::vector<float>> per_function;  // [functions][batch] unweighted scores
  std::vector<int64_t> failures;                // [functions] samples each could not score
};

// Scores a batch with every function and sums them with their weights.
RewardScores score_batch(std::span<WeightedReward> rewards, std::span<const RewardInput> batch);

// Throws grpo::Error naming the reward function when failures[f] > max_fraction x samples for some f,
// with the function's last failure. `when` says where ("step 3").
void check_reward_failures(std::span<WeightedReward> rewards, const std::vector<std::string>& names,
                           const std::vector<int64_t>& failures, int64_t samples, double max_fraction,
                           const std::string& when);

}  // namespace grpo
