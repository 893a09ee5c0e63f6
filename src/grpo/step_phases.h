// The phases of one GRPO step and what each returns. GrpoTrainer::train_step (trainer_step.cpp) reads as
// these phases in order:
//   generate -> score -> (DAPO filter, more generation batches) -> advantages -> mini-batches ->
//   log-probs (old / reference) -> update -> sync weights -> metrics
// Each phase is one member function of GrpoTrainer with its own result struct below, so that new work
// (ranks, pictures) slots into the phase it concerns.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "train/actor.h"

namespace grpo {

// generate: n responses for each prompt of one generation batch, group by group.
struct GenerationResult {
  std::vector<const Example*> prompts;
  std::vector<train::TrainSample> samples;  // prompt + response tokens, rollout log-probs
  std::vector<std::string> texts;           // response text of each sample
  std::vector<int64_t> group_sizes;         // samples per prompt
  std::vector<uint8_t> truncated;           // per sample: 1 when cut at max_response_length
  int64_t gen_tokens = 0, prompt_tokens = 0;
  double seconds = 0;
};

// score: the rewards of one generation batch's samples.
struct ScoreResult {
  std::vector<float> scores;                     // weighted sum of the reward functions
  std::vector<float> rewards;                    // scores after overlong shaping
  std::vector<std::vector<float>> per_function;  // [function][sample] unweighted
  std::vector<std::string> function_names;
  std::vector<int64_t> failures;                 // [function] samples it could not score
  double seconds = 0;
};

// The groups a step trains on, gathered over its generation batches (DAPO filtering drops the groups
// without reward signal and samples more).
struct StepBatch {
  std::vector<train::TrainSample> samples;  // group by group
  std::vector<int64_t> group_sizes;
  std::vector<float> scores, rewards;            // per sample, as in ScoreResult
  std::vector<std::vector<float>> per_function;  // [function][sample]
  std::vector<std::string> function_names;
  std::vector<uint8_t> truncated;                // per sample, as in GenerationResult
  // gen_tokens, prompt_tokens: every generation batch's (dropped groups included: the work done)
  int64_t prompts = 0, gen_tokens = 0, prompt_tokens = 0, gen_batches = 0, groups_dropped = 0;
  std::vector<int64_t> reward_failures;  // [function] over every generated sample
  int64_t scored = 0;                    // generated samples, kept or not
  double gen_s = 0, reward_s = 0;
};

// advantages: one per sample of the StepBatch.
struct AdvantageResult {
  std::vector<float> advantages;
  double seconds = 0;
};

// log-probs: old (behaviour) and reference log-probs written into the mini-batches' samples.
struct LogProbResult {
  double old_s = 0, ref_s = 0;
};

// update: the optimizer steps over the mini-batches (x ppo_epochs).
struct UpdateResult {
  std::vector<double> pg_loss, kl_loss, entropy, pg_clipfrac, ppo_kl, grad_norm;  // per update
  float lr = 0;
  // train_tokens: computed by the micro-batches (padding included); useful_tokens: the sequences' own
  int64_t skipped = 0, train_tokens = 0, useful_tokens = 0;
  double seconds = 0;             // the updates, without refreshing the rollout weights
  double update_weights_s = 0;    // refreshing the rollout's bf16 shadow after each optimizer step
};

// sync weights: what the rollout engine must drop or refresh after the update.
struct SyncResult {
  double seconds = 0;
};

}  // namespace grpo
