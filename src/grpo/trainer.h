// The GRPO loop (`grpo train`): every step samples prompts, generates G responses each with the rollout
// engine over the policy's own weights, scores them, computes group advantages, recomputes old/reference
// log-probs when needed, updates the actor on mini-batches of token-budget micro-batches, and logs verl's
// metrics. Validation, checkpoints, resume and the final report are part of the loop.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "grpo/config.h"
#include "grpo/evaluate.h"
#include "grpo/rewards.h"
#include "grpo/session.h"
#include "grpo/step_phases.h"
#include "grpo/trainer_state.h"
#include "train/actor.h"

namespace grpo {

struct TrainOptions {
  std::string resume_dir;        // resume the run in this folder (its latest checkpoint)
  std::vector<int64_t> profile_steps;  // steps (1-based) written to <run>/trace.json
  bool quiet = false;            // no progress lines
};

struct TrainSummary {
  int64_t steps = 0;
  double seconds = 0;
  std::vector<double> val_accuracy;  // every validation, in order (before training first when enabled)
  std::string final_checkpoint;
};

class GrpoTrainer {
 public:
  GrpoTrainer(const Config& config, const TrainOptions& opt);
  ~GrpoTrainer();
  TrainSummary run();

 private:
  // Prompts of the next generation batch (data.train_batch_size of the epoch's permutation).
  void next_prompts(std::vector<const Example*>* out);
  // One GRPO step as its phases (trainer_step.cpp; result structs in step_phases.h).
  nlohmann::json train_step(int64_t step);
  GenerationResult generate(const std::vector<const Example*>& prompts, int64_t step, int64_t batch_index);
  ScoreResult score(const GenerationResult& gen);
  StepBatch collect_batch(int64_t step);  // generate + score (+ DAPO filtering over generation batches)
  AdvantageResult compute_advantages(StepBatch& batch);
  std::vector<std::vector<train::TrainSample>> split_minibatches(StepBatch& batch);
  LogProbResult compute_log_probs(std::vector<std::vector<train::TrainSample>>& minibatches);
  UpdateResult update(std::vector<std::vector<train::TrainSample>>& minibatches);
  SyncResult sync_weights();
  nlohmann::json step_metrics(const StepBatch& batch, const AdvantageResult& adv,
                              const std::vector<std::vector<train::TrainSample>>& minibatches,
                              const LogProbResult& lp, const UpdateResult& up, const SyncResult& sync,
                              double step_s);
  nlohmann::json validate();

  Config cfg_;
  TrainOptions opt_;
  std::string run_dir_;
  std::unique_ptr<Session> s_;
  std::unique_ptr<ModelWeights> ref_weights_;  // frozen reference copy, only when a KL term is used
  std::unique_ptr<Decoder> ref_decoder_;
  std::unique_ptr<train::Actor> actor_;
  std::vector<WeightedReward> rewards_;
  TrainerState state_;
  int64_t total_steps_ = 0, steps_per_epoch_ = 0;
  std::vector<int64_t> order_;  // permutation of the current epoch
};

// Steps of a run: trainer.total_training_steps, or total_epochs x (train prompts / train_batch_size).
int64_t total_training_steps(const Config& c, int64_t train_examples);

}  // namespace grpo
