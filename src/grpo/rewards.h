// Reward functions: the built-in `math` (answer from \boxed{} or the last number, compared by value),
// `exact` (extracted answer, else the whole response, equal to the answer as text), `format` (1 when a
// PCRE2 regex matches the response), user commands (external_reward.h), and their weighted sum.
#pragma once
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "grpo/config.h"

namespace grpo {

struct RewardInput {
  std::string id;
  std::string prompt;    // the prompt text (or rendered chat)
  std::string response;  // the generated text
  std::string answer;    // the reference answer
};

class RewardFunction {
 public:
  virtual ~RewardFunction() = default;
  virtual std::string name() const = 0;
  // Writes one score per input into out [batch.size()]. Never throws for a bad response: it scores 0.
  virtual void score(std::span<const RewardInput> batch, std::span<float> out) = 0;
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
};

// Scores a batch with every function and sums them with their weights.
RewardScores score_batch(std::span<WeightedReward> rewards, std::span<const RewardInput> batch);

}  // namespace grpo
