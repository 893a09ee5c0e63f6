// Held-out evaluation: n responses per prompt (greedy, or sampled as configured) generated with the rollout
// engine, scored by the `math` answer check (accuracy) and by the run's reward functions. With n > 1 the
// results follow verl's validation metrics: mean@n (over all responses), best@n (a prompt counts when any
// of its responses is right) and maj@n (a prompt counts when the answer most of its responses give, by
// value, is right).
// With several ranks, each evaluates a share of the prompts and the per-prompt results are gathered, so
// that every rank gets the numbers one process would.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "data/dataset.h"
#include "reward/rewards.h"
#include "model/picture.h"
#include "rollout/engine.h"

namespace grpo {

struct EvalResult {
  int32_t n = 1;               // responses per prompt
  double accuracy = 0;         // mean@n: fraction of responses whose answer matches (math reward == 1)
  double best_accuracy = 0;    // best@n: fraction of prompts with at least one right response
  double majority_accuracy = 0;  // maj@n: fraction of prompts whose most frequent answer is right
  double reward_mean = 0;      // mean total reward over responses (when reward functions are given)
  double reward_best = 0;      // mean over prompts of the best total reward of their responses
  double response_length = 0;  // mean generated tokens (the model's: tool turns not counted)
  double tool_call_share = 0;  // multi-turn: fraction of responses that called a tool
  int64_t examples = 0;
  double seconds = 0;
};

struct EvalOptions {
  rollout::SamplingParams sampling;  // default: greedy
  int32_t n = 1;                     // responses per prompt (>= 1)
  int32_t max_new_tokens = 64;
  std::vector<int32_t> stop_ids;
  uint64_t seed = 0;
  // Vision-language models: an example's pictures (Session::pictures); unset for text.
  std::function<std::vector<PicturePtr>(const Example&)> pictures;
  rollout::MultiTurn turns;  // multi-turn rollouts with tools (handler null: single-turn)
};

// Examples need prompt_ids (DatasetOptions::encode_prompt). rewards may be empty.
EvalResult evaluate(rollout::Engine& engine, const std::vector<Example>& examples,
                    const EvalOptions& opt, std::vector<WeightedReward>* rewards);
// The same over the ranks of `comm` (shares balanced by prompt length; request ids are the examples'
// indices as in one process, so sampled responses do not depend on the number of ranks).
EvalResult evaluate(comm::Communicator& comm, rollout::Engine& engine, const std::vector<Example>& examples,
                    const EvalOptions& opt, std::vector<WeightedReward>* rewards);

// Index of the answer given most often among `answers` (nullopt entries do not vote; answers equal by
// value, answers_match, are one answer; ties go to the earliest); -1 when none votes.
int64_t majority_answer(const std::vector<std::optional<std::string>>& answers);

}  // namespace grpo
