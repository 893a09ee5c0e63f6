// The phases of one GRPO step and what each returns. GrpoTrainer::train_step (trainer_step.cpp) reads as
// these phases in order:
//   generate -> score -> (DAPO filter, more generation batches) -> advantages -> mini-batches ->
//   log-probs (old / reference) -> update -> sync weights -> metrics
// Each phase is one member function of GrpoTrainer with its own result struct below, so that new work
// (ranks, pictures) slots into the phase it concerns.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "data/dataset.h"
#include "reward/rewards.h"
#include "rollout/turns.h"
#include "train/actor.h"

namespace grpo {

// generate: n responses for each prompt of one generation batch, group by group.
struct GenerationResult {
  std::vector<const Example*> prompts;
  std::vector<train::TrainSample> samples;  // prompt + response tokens, rollout log-probs
  std::vector<std::string> texts;           // response text of each sample
  std::vector<int64_t> group_sizes;         // samples per prompt
  std::vector<uint8_t> truncated;           // per sample: 1 when cut at max_response_length
  std::vector<rollout::TurnStats> turns;    // per sample, multi-turn rollouts only (else empty)
  // remax: each prompt's greedy response (generated in the same engine call), its baseline
  std::vector<std::string> greedy_texts;    // per prompt
  std::vector<int64_t> greedy_lengths;      // per prompt, tokens
  int64_t gen_tokens = 0, prompt_tokens = 0;  // gen_tokens: the greedy responses' included
  double seconds = 0;
};

// score: the rewards of one generation batch's samples.
struct ScoreResult {
  std::vector<float> scores;                     // weighted sum of the reward functions
  std::vector<float> rewards;                    // scores after overlong shaping
  std::vector<std::vector<float>> per_function;  // [function][sample] unweighted
  std::vector<std::string> function_names;
  std::vector<int64_t> failures;                 // [function] samples it could not score
  std::vector<RewardExtra> extras;               // extra results (verl's dict keys), this rank's samples
  std::vector<float> reward_baselines;           // remax: per sample, its prompt's greedy response's reward
  double seconds = 0;
};

// The groups a step trains on, gathered over its generation batches (DAPO filtering drops the groups
// without reward signal and samples more).
struct StepBatch {
  std::vector<train::TrainSample> samples;  // group by group
  std::vector<int64_t> group_sizes;
  std::vector<float> scores, rewards;            // per sample, as in ScoreResult
  std::vector<float> reward_baselines;           // remax: per sample, the reward of its prompt's greedy response
  std::vector<std::vector<float>> per_function;  // [function][sample]
  std::vector<std::string> function_names;
  std::vector<uint8_t> truncated;                // per sample, as in GenerationResult
  std::vector<rollout::TurnStats> turns;         // per sample, as in GenerationResult
  // gen_tokens, prompt_tokens: every generation batch's (dropped groups included: the work done)
  int64_t prompts = 0, gen_tokens = 0, prompt_tokens = 0, gen_batches = 0, groups_dropped = 0;
  int64_t greedy_tokens = 0;  // remax: the greedy baseline responses' tokens (inside gen_tokens)
  std::vector<int64_t> reward_failures;  // [function] over every generated sample
  int64_t scored = 0;                    // generated samples, kept or not
  // Extra results of the reward functions (verl's "acc", ...): sum and count over this rank's generated
  // samples, logged as reward/<key>/mean.
  std::map<std::string, std::pair<double, int64_t>> reward_extras;
  // The step's parts on this rank's clock: generating (with several ranks, until every rank's groups are
  // here: waiting for the slowest is part of generating) and scoring this rank's responses.
  double gen_s = 0, reward_s = 0;
  double slowest_gen_s = 0;  // the slowest rank's generation alone, for the rollout's tokens/s
};

// advantages: the chosen estimator's, over every response token of the StepBatch (critic/advantages), and
// the KL penalty in the reward when on (actor/reward_kl_penalty and its coefficient).
struct AdvantageResult {
  std::vector<double> token_advantages;  // every response token, sample by sample
  bool kl_in_reward = false;
  double reward_kl_penalty = 0, reward_kl_coeff = 0;
  double seconds = 0;
};

// log-probs: old (behaviour) and reference log-probs written into the mini-batches' samples.
struct LogProbResult {
  double old_s = 0, ref_s = 0;
};

// update: the optimizer steps over the mini-batches (x ppo_epochs).
struct UpdateResult {
  std::vector<double> pg_loss, kl_loss, entropy, pg_clipfrac, pg_clipfrac_lower, ppo_kl, grad_norm;  // per update
  train::RolloutMismatch rollout;  // over the first epoch's updates (every trained token once)
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
