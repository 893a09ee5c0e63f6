// Where a run writes (trainer.default_local_dir) and whether it may: a folder that holds an earlier run
// (metrics.jsonl, checkpoints/, report.html, tensorboard_log/, trace.json, or an SFT model/) is never
// mixed with a new run or deleted without being asked. The choices, verl's keys plus two flags:
//   trainer.resume_mode: disable (default)  a new run; a folder holding an earlier run is refused, unless
//                                          --overwrite (grpo train / sft) deletes that run's outputs first
//                        auto               resume from the folder's latest checkpoint when it has one, else
//                                          as disable
//                        resume_path        resume from trainer.resume_from_path (a global_step_N folder, or
//                                          a run folder: its latest checkpoint)
//   grpo train --resume RUN                 resume RUN from its latest checkpoint, writing into RUN
// (verl's own default is auto; here a repeated command must not silently continue or replace a run.)
#pragma once
#include <string>
#include <vector>

#include "config/config.h"

namespace grpo {

// The outputs of an earlier run found in `dir` (names relative to it; config.yaml not included: it is
// rewritten by every start). `sft`: also model/.
std::vector<std::string> earlier_run_outputs(const std::string& dir, bool sft);

struct RunFolderPlan {
  std::string run_dir;
  std::string resume_checkpoint;        // "" = a new run
  std::vector<std::string> to_delete;   // --overwrite: outputs of the earlier run (under run_dir)
};

// Decides where a GRPO run writes and what it resumes from; throws grpo::Error (changing nothing) when
// the folder holds an earlier run that the choices above do not allow to continue or replace.
RunFolderPlan plan_grpo_run_folder(const Config& c, const std::string& cli_resume_dir, bool overwrite);
// The same for SFT, which does not resume: trainer.resume_mode must be disable.
RunFolderPlan plan_sft_run_folder(const Config& c, bool overwrite);

// Deletes plan.to_delete (and the earlier config.yaml), saying so on stderr; creates the run folder.
void prepare_run_folder(const RunFolderPlan& plan);

}  // namespace grpo
