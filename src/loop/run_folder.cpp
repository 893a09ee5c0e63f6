// Run folder rules (see run_folder.h).
#include "loop/run_folder.h"

#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "core/files.h"
#include "loop/trainer_state.h"

namespace grpo {

namespace fs = std::filesystem;

namespace {

std::string listing(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// A checkpoint folder (global_step_N with trainer_state.json), or a run folder's latest checkpoint.
std::string resolve_checkpoint(const std::string& path) {
  GRPO_CHECK(fs::exists(path), "[run] trainer.resume_from_path = ", path, ": no such folder");
  if (file_exists(path + "/trainer_state.json")) return path;
  const std::string latest = latest_run_checkpoint(path);
  GRPO_CHECK(!latest.empty(), "[run] trainer.resume_from_path = ", path,
             ": neither a checkpoint folder (global_step_N with trainer_state.json) nor a run folder with "
             "checkpoints/latest");
  return latest;
}

bool inside(const std::string& path, const std::string& dir) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(path, ec), d = fs::weakly_canonical(dir, ec);
  const std::string ps = p.string(), ds = d.string();
  return ps.size() > ds.size() && ps.compare(0, ds.size(), ds) == 0 && ps[ds.size()] == '/';
}

[[noreturn]] void refuse(const std::string& dir, const std::vector<std::string>& outputs, bool can_resume) {
  fail("[run] the run folder ", dir, " (trainer.default_local_dir) already holds a run (", listing(outputs),
       "); nothing was changed. ",
       can_resume ? cat("Continue it with --resume ", dir, " (or trainer.resume_mode: auto), start over with ")
                  : std::string("Start over with "),
       "--overwrite (deletes those), or choose another trainer.default_local_dir");
}

}  // namespace

std::vector<std::string> earlier_run_outputs(const std::string& dir, bool sft) {
  std::vector<std::string> found;
  std::vector<std::string> names = {"metrics.jsonl", "checkpoints", "report.html", "tensorboard_log", "trace.json"};
  if (sft) names.push_back("model");
  for (const auto& n : names)
    if (fs::exists(dir + "/" + n)) found.push_back(n);
  return found;
}

RunFolderPlan plan_grpo_run_folder(const Config& c, const std::string& cli_resume_dir, bool overwrite) {
  RunFolderPlan plan;
  if (!cli_resume_dir.empty()) {
    GRPO_CHECK(!overwrite, "[run] --resume ", cli_resume_dir, " and --overwrite contradict each other");
    plan.run_dir = cli_resume_dir;
    plan.resume_checkpoint = latest_run_checkpoint(cli_resume_dir);
    GRPO_CHECK(!plan.resume_checkpoint.empty(), "[resume] ", cli_resume_dir,
               " has no checkpoint (checkpoints/latest is missing)");
    return plan;
  }
  const TrainerConfig& t = c.trainer;
  plan.run_dir = t.default_local_dir;
  const std::vector<std::string> outputs = earlier_run_outputs(plan.run_dir, /*sft=*/false);
  if (t.resume_mode == ResumeMode::ResumePath) {
    GRPO_CHECK(!overwrite, "[run] trainer.resume_mode: resume_path and --overwrite contradict each other");
    plan.resume_checkpoint = resolve_checkpoint(t.resume_from_path);
    // Resuming this folder's own checkpoint continues its run; another run's checkpoint starts writing a
    // continuation here, which must not mix with an earlier run in this folder.
    if (!outputs.empty() && !inside(plan.resume_checkpoint, plan.run_dir)) refuse(plan.run_dir, outputs, false);
    return plan;
  }
  if (t.resume_mode == ResumeMode::Auto && !overwrite) {
    plan.resume_checkpoint = latest_run_checkpoint(plan.run_dir);
    if (!plan.resume_checkpoint.empty()) return plan;
  }
  if (!outputs.empty()) {
    if (!overwrite) refuse(plan.run_dir, outputs, !latest_run_checkpoint(plan.run_dir).empty());
    plan.to_delete = outputs;
  }
  return plan;
}

RunFolderPlan plan_sft_run_folder(const Config& c, bool overwrite) {
  GRPO_CHECK(c.trainer.resume_mode == ResumeMode::Disable,
             "[run] trainer.resume_mode = ", kResumeModeNames.name(c.trainer.resume_mode),
             ": SFT runs do not resume; set it to disable");
  RunFolderPlan plan;
  plan.run_dir = c.trainer.default_local_dir;
  const std::vector<std::string> outputs = earlier_run_outputs(plan.run_dir, /*sft=*/true);
  if (!outputs.empty()) {
    if (!overwrite) refuse(plan.run_dir, outputs, false);
    plan.to_delete = outputs;
  }
  return plan;
}

void prepare_run_folder(const RunFolderPlan& plan) {
  if (!plan.to_delete.empty()) {
    std::fprintf(stderr, "[run] --overwrite: deleting the earlier run in %s (%s)\n", plan.run_dir.c_str(),
                 listing(plan.to_delete).c_str());
    for (const auto& n : plan.to_delete) {
      std::error_code ec;
      fs::remove_all(plan.run_dir + "/" + n, ec);
      if (ec) fail("[run] cannot delete ", plan.run_dir, "/", n, ": ", ec.message());
    }
    std::error_code ec;
    fs::remove(plan.run_dir + "/config.yaml", ec);
  }
  make_dirs(plan.run_dir);
}

}  // namespace grpo
