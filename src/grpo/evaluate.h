// Held-out evaluation: greedy (or configured) generation on a dataset's prompts with the rollout engine,
// scored by the `math` answer check (accuracy) and by the run's reward functions.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "grpo/dataset.h"
#include "grpo/rewards.h"
#include "model/picture.h"
#include "rollout/engine.h"

namespace grpo {

struct EvalResult {
  double accuracy = 0;         // fraction of responses whose answer matches (math reward == 1)
  double reward_mean = 0;      // mean total reward (when reward functions are given)
  double response_length = 0;  // mean generated tokens
  int64_t examples = 0;
  double seconds = 0;
};

struct EvalOptions {
  rollout::SamplingParams sampling;  // default: greedy
  int32_t max_new_tokens = 64;
  std::vector<int32_t> stop_ids;
  uint64_t seed = 0;
  // Vision-language models: an example's pictures (Session::pictures); unset for text.
  std::function<std::vector<PicturePtr>(const Example&)> pictures;
};

// Examples need prompt_ids (DatasetOptions::encode_prompt). rewards may be empty.
EvalResult evaluate(rollout::Engine& engine, const std::vector<Example>& examples,
                    const EvalOptions& opt, std::vector<WeightedReward>* rewards);

}  // namespace grpo
