// The shared run set-up of SFT and GRPO (see run_setup.h).
#include "loop/run_setup.h"

#include "core/error_context.h"
#include "core/files.h"
#include "loop/distributed.h"

namespace grpo {

RunSetup open_run(const Config& config, TrainingKind kind, const RunStartOptions& options) {
  const bool sft = kind == TrainingKind::Sft;
  ErrorContext what(sft ? "setting up the SFT run" : "setting up the GRPO run");
  RunSetup run;
  run.comm = &comm::world();
  run.comm->set_timeout(config.trainer.comm_timeout_s);
  check_world(config, *run.comm);
  run.console = run.comm->rank() == 0;
  run.quiet = options.quiet || !run.console;
  // Every rank makes the same decision (the run folder is shared) before rank 0 changes anything in it.
  run.folder = sft ? plan_sft_run_folder(config, options.overwrite)
                   : plan_grpo_run_folder(config, options.resume_dir, options.overwrite);
  run.comm->barrier();
  run.session = Session::open(config, /*require_response=*/sft,
                              sft ? SessionRollout::ValidateOnly : SessionRollout::TrainAndValidate,
                              options.before_weights, WeightShard{run.comm->rank(), run.comm->size()});
  return run;
}

void start_run(RunSetup& run, const Config& config, TrainingKind kind, const std::function<void()>& resume) {
  if (run.console) prepare_run_folder(run.folder);  // --overwrite deletes the earlier run only now
  run.comm->barrier();                              // the folder as rank 0 left it, before any rank reads a checkpoint
  if (resume) resume();
  if (!run.console) return;
  write_file_atomic(run.run_dir() + "/config.yaml", config_to_yaml(config));
  StepLoggerOptions lo;
  lo.loggers = config.trainer.logger;
  lo.run_dir = run.run_dir();
  lo.project_name = config.trainer.project_name;
  lo.experiment_name = config.trainer.experiment_name;
  lo.truncate_jsonl = kind == TrainingKind::Sft;  // GRPO appends: a resumed run keeps its earlier steps
  lo.quiet = run.quiet;
  run.logger = std::make_unique<StepLogger>(lo);
}

void finish_run(const StepLogger* logger, const std::string& run_dir, const Config& config, TrainingKind kind) {
  if (!logger || !logger->jsonl()) return;  // the report is drawn from metrics.jsonl
  ReportInfo info;
  const std::string title = config.trainer.project_name + " / " + config.trainer.experiment_name;
  info.title = kind == TrainingKind::Sft ? "grpo.cpp SFT: " + title : "grpo.cpp: " + title;
  if (kind == TrainingKind::Sft) info.kind = ReportKind::Sft;
  info.config_yaml = config_to_yaml(config);
  write_report(logger->jsonl_path(), run_dir + "/report.html", info);
}

}  // namespace grpo
