// The GRPO loop (`grpo train`): every step samples prompts, generates G responses each with the rollout
// engine over the policy's own weights, scores them, computes group advantages, recomputes old/reference
// log-probs when needed, updates the actor on mini-batches of token-budget micro-batches, and logs verl's
// metrics (trainer.logger). Validation, checkpoints, resume and the final report are part of the loop.
// Before the first step: the run folder rules (run_folder.h), and a training set of at least
// data.train_batch_size prompts. A step whose DAPO filtering keeps no group within its generation batches is
// logged and skipped (no update); a step whose reward functions fail too often stops the run.
//
// With several ranks (mpirun -np N; loop/distributed.h) every rank takes the same prompts, generates and
// scores its share of them, and receives every rank's groups, so the steps after generation see the whole
// batch; the actor's updates are data parallel (ZeRO-2 or ZeRO-3, train/actor.h). Rank 0 alone prints and
// writes the run folder; the metrics are those of the whole batch.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "config/config.h"
#include "loop/evaluate.h"
#include "reward/rewards.h"
#include "loop/session.h"
#include "report/step_logger.h"
#include "loop/step_phases.h"
#include "loop/trainer_state.h"
#include "train/actor.h"

namespace grpo {

struct TrainOptions {
  std::string resume_dir;        // resume the run in this folder (its latest checkpoint)
  bool overwrite = false;        // a run folder holding an earlier run: delete its outputs (run_folder.h)
  std::vector<int64_t> profile_steps;  // steps (1-based) written to <run>/trace.json
  bool quiet = false;            // no progress lines
  bool ignore_memory_plan = false;  // run even when the memory plan (plan/memory_plan.h) says it cannot fit
};

struct TrainSummary {
  int64_t steps = 0;
  double seconds = 0;
  std::vector<double> val_accuracy;  // every validation, in order (before training first when enabled)
  std::vector<int64_t> val_steps;    // the step of each (0: before training)
  std::vector<double> val_tool_call_share;  // multi-turn: the same validations' share of responses calling a tool
  std::string final_checkpoint;
};

// GRPO's validation settings (greedy or actor_rollout_ref.rollout.val_kwargs, data.max_response_length,
// the session's stop ids, pictures and tools), for evaluating a model as the loop's validation does.
EvalOptions validation_options(const Session& s);

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
  // `index[i]`: the position of prompts[i] in its generation batch (request ids; with several ranks a
  // rank generates for a share of the batch's prompts).
  GenerationResult generate(const std::vector<const Example*>& prompts, const std::vector<int64_t>& index, int64_t step,
                            int64_t batch_index);
  ScoreResult score(const GenerationResult& gen);
  StepBatch collect_batch(int64_t step);  // generate + score (+ DAPO filtering over generation batches)
  AdvantageResult compute_advantages(const StepBatch& batch, std::vector<std::vector<train::TrainSample>>& minibatches);
  std::vector<std::vector<train::TrainSample>> split_minibatches(StepBatch& batch);
  LogProbResult compute_log_probs(std::vector<std::vector<train::TrainSample>>& minibatches);
  UpdateResult update(std::vector<std::vector<train::TrainSample>>& minibatches);
  SyncResult sync_weights();
  nlohmann::json step_metrics(const StepBatch& batch, const AdvantageResult& adv,
                              const std::vector<std::vector<train::TrainSample>>& minibatches,
                              const UpdateResult& up, double step_s);
  nlohmann::json skipped_step_metrics(const StepBatch& batch, double step_s);
  // Adds what the step cost: timing_s/<part> (report/report.h step_time_parts) from the phases' own times
  // without their communication, which is timing_s/comm; communication bytes and CPU time (collective).
  void add_step_costs(nlohmann::json& m, const std::map<std::string, double>& phase_s, double step_s,
                      const comm::CommStats& comm_start, double cpu_start);
  nlohmann::json validate();
  // The set-up's phases (trainer.cpp), between open_run and start_run (run_setup.h).
  int64_t check_memory_plan(const Session& s) const;  // the KV budget's base (MemoryPlan::kv_base_bytes)
  void build_actor();
  void build_reference();
  void build_rewards_and_schedule();  // reward functions, step counts, the bound on request ids
  void resume_from(const std::string& checkpoint);
  // Writes the checkpoint of the current step (collective); returns its folder (on rank 0; "" elsewhere).
  // Several ranks of full fine-tuning write their moments' shards in parallel (loop/flat_shards.h).
  std::string save_checkpoint();

  Config cfg_;
  TrainOptions opt_;
  comm::Communicator& comm_;  // the ranks of the run (comm::world())
  bool console_ = true;       // this rank prints progress and writes the run folder's files (rank 0)
  std::string run_dir_;
  std::unique_ptr<Session> s_;
  std::unique_ptr<ModelWeights> ref_weights_;  // frozen reference copy, only when a KL term (loss or reward) is used
  std::unique_ptr<Decoder> ref_decoder_;
  train::MicroBatching ref_micro_batching_;  // actor_rollout_ref.ref.log_prob_*
  std::unique_ptr<train::Actor> actor_;
  std::vector<WeightedReward> rewards_;
  TrainerState state_;
  int64_t total_steps_ = 0, steps_per_epoch_ = 0;
  int64_t max_gen_batches_ = 1;  // generation batches a step may use (max_num_gen_batches_per_step)
  std::vector<int64_t> order_;  // permutation of the current epoch
  int64_t expected_response_tokens_;  // balances the ranks' prompt shares: the last step's mean response length
  std::unique_ptr<StepLogger> logger_;  // rank 0 only
};

// The rollout request id of request r of generation batch `gen_batch` of step `step` (1-based): distinct for
// every (step, batch, request) of a run, since batch < gen_batches_per_step and r < requests_per_batch. The
// sampler's RNG stream is keyed by (seed, id, sample), so distinct ids mean distinct streams.
uint64_t rollout_request_id(int64_t step, int64_t gen_batch, int64_t request, int64_t gen_batches_per_step,
                            int64_t requests_per_batch);

}  // namespace grpo
