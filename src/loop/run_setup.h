// The set-up every training run shares (SFT, GRPO, and whatever trains next), in one order of steps:
//   1. open_run: the ranks' communication timeout (trainer.comm_timeout_s) and the world check
//      (trainer.nnodes / n_gpus_per_node against the launcher), the run folder's plan on every rank (nothing
//      changes yet, run_folder.h), a barrier, then the session (config.json, tokenizer, data; the caller's
//      check before the weights, e.g. the memory plan; the weights; the rollout engine).
//   2. the caller builds its own parts (actor, reference, rewards); any error leaves the folder untouched.
//   3. start_run: rank 0 prepares the folder (--overwrite deletes the earlier run only now), a barrier, the
//      caller's resume (reads a checkpoint from the prepared folder), then rank 0 writes config.yaml and
//      opens the step logger (trainer.logger).
//   4. finish_run: rank 0 draws report.html from metrics.jsonl.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "comm/communicator.h"
#include "config/config.h"
#include "loop/run_folder.h"
#include "loop/session.h"
#include "report/report.h"
#include "report/step_logger.h"

namespace grpo {

enum class TrainingKind { Sft, Grpo };

struct RunStartOptions {
  std::string resume_dir;                 // GRPO: --resume RUN
  bool overwrite = false;                 // a folder holding an earlier run: delete its outputs (run_folder.h)
  bool quiet = false;                     // no progress lines
  Session::BeforeWeights before_weights;  // checks the session before the weights load (may refuse the run)
};

struct RunSetup {
  comm::Communicator* comm = nullptr;  // the ranks of the run (comm::world())
  bool console = true;                 // this rank prints and writes the run folder (rank 0)
  bool quiet = false;                  // no progress lines (every rank but 0)
  RunFolderPlan folder;
  std::unique_ptr<Session> session;
  std::unique_ptr<StepLogger> logger;  // rank 0, after start_run
  const std::string& run_dir() const { return folder.run_dir; }
};

// Step 1 (collective).
RunSetup open_run(const Config& config, TrainingKind kind, const RunStartOptions& options);
// Step 3 (collective): `resume` (may be empty) runs on every rank once the folder is ready.
void start_run(RunSetup& run, const Config& config, TrainingKind kind, const std::function<void()>& resume = {});
// Step 4: rank 0 (the one with a logger) writes <run_dir>/report.html when it writes metrics.jsonl.
void finish_run(const StepLogger* logger, const std::string& run_dir, const Config& config, TrainingKind kind);

}  // namespace grpo
