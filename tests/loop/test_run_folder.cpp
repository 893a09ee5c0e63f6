// Tests of the run folder rules: an earlier run is never mixed with a new one or deleted unasked
// (disable refuses, --overwrite deletes only the run's outputs, auto resumes the latest checkpoint,
// resume_path resumes a named checkpoint, --resume needs a checkpoint), for GRPO and SFT.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "core/files.h"
#include "config/config.h"
#include "loop/run_folder.h"
#include "temp_dir.h"
#include "error_of.h"
#include "test_util.h"

using namespace grpo;
namespace fs = std::filesystem;

namespace {

using grpo::test::contains;

using test::error_of;

Config config(const std::string& run, const std::vector<std::string>& more = {}) {
  std::vector<std::string> sets = {"data.train_files=t.jsonl", "actor_rollout_ref.model.path=m",
                                   "trainer.default_local_dir=" + run};
  sets.insert(sets.end(), more.begin(), more.end());
  return load_config("", sets);
}

// A run folder as a finished run leaves it: metrics, a checkpoint named by `latest`, a report.
void fake_run(const std::string& run, int64_t step) {
  const std::string ck = run + "/checkpoints/global_step_" + std::to_string(step);
  make_dirs(ck);
  write_file_atomic(ck + "/trainer_state.json", "{}");
  write_file_atomic(run + "/checkpoints/latest", "global_step_" + std::to_string(step) + "\n");
  write_file_atomic(run + "/metrics.jsonl", "{\"step\": 1}\n");
  write_file_atomic(run + "/report.html", "<html></html>");
  write_file_atomic(run + "/config.yaml", "x: 1\n");
}

}  // namespace

TEST(RunFolder, NewFolderOrUnrelatedFilesStartANewRun) {
  test::TempDir dir;
  const std::string run = dir.path() + "/run";
  RunFolderPlan p = plan_grpo_run_folder(config(run), "", false);
  EXPECT_EQ(p.run_dir, run);
  EXPECT_TRUE(p.resume_checkpoint.empty());
  EXPECT_TRUE(p.to_delete.empty());
  make_dirs(run);
  write_file_atomic(run + "/notes.txt", "mine");
  write_file_atomic(run + "/config.yaml", "x: 1\n");  // rewritten by every start, not a run by itself
  EXPECT_NO_THROW(plan_grpo_run_folder(config(run), "", false));
}

TEST(RunFolder, AnEarlierRunIsRefusedUntouched) {
  test::TempDir dir;
  const std::string run = dir.path() + "/run";
  fake_run(run, 4);
  const std::string e = error_of([&] { plan_grpo_run_folder(config(run), "", false); });
  EXPECT_TRUE(contains(e, "already holds a run (metrics.jsonl, checkpoints, report.html)")) << e;
  EXPECT_TRUE(contains(e, "nothing was changed")) << e;
  EXPECT_TRUE(contains(e, "--resume " + run)) << e;
  EXPECT_TRUE(contains(e, "--overwrite")) << e;
  EXPECT_EQ(read_file(run + "/metrics.jsonl"), "{\"step\": 1}\n");

  // SFT: its model/ counts too, and there is no resume to suggest.
  const std::string sft = dir.path() + "/sft";
  make_dirs(sft + "/model");
  const std::string s = error_of([&] { plan_sft_run_folder(config(sft), false); });
  EXPECT_TRUE(contains(s, "already holds a run (model)")) << s;
  EXPECT_FALSE(contains(s, "--resume")) << s;
  EXPECT_TRUE(contains(error_of([&] { plan_sft_run_folder(config(sft, {"trainer.resume_mode=auto"}), true); }),
                       "SFT runs do not resume"));
}

TEST(RunFolder, OverwriteDeletesOnlyTheRunsOutputs) {
  test::TempDir dir;
  const std::string run = dir.path() + "/run";
  fake_run(run, 4);
  write_file_atomic(run + "/notes.txt", "mine");
  RunFolderPlan p = plan_grpo_run_folder(config(run), "", true);
  EXPECT_EQ(p.to_delete, (std::vector<std::string>{"metrics.jsonl", "checkpoints", "report.html"}));
  EXPECT_TRUE(fs::exists(run + "/metrics.jsonl")) << "planning changes nothing";
  prepare_run_folder(p);
  EXPECT_FALSE(fs::exists(run + "/metrics.jsonl"));
  EXPECT_FALSE(fs::exists(run + "/checkpoints"));
  EXPECT_FALSE(fs::exists(run + "/config.yaml"));
  EXPECT_EQ(read_file(run + "/notes.txt"), "mine");
  EXPECT_TRUE(contains(error_of([&] { plan_grpo_run_folder(config(run), run, true); }), "contradict"));
}

TEST(RunFolder, AutoAndResumePathResume) {
  test::TempDir dir;
  const std::string run = dir.path() + "/run", other = dir.path() + "/other", fresh = dir.path() + "/fresh";
  fake_run(run, 4);
  RunFolderPlan p = plan_grpo_run_folder(config(run, {"trainer.resume_mode=auto"}), "", false);
  EXPECT_EQ(p.resume_checkpoint, run + "/checkpoints/global_step_4");
  p = plan_grpo_run_folder(config(run), run, false);  // --resume RUN
  EXPECT_EQ(p.resume_checkpoint, run + "/checkpoints/global_step_4");
  p = plan_grpo_run_folder(config(fresh, {"trainer.resume_mode=auto"}), "", false);  // nothing to resume
  EXPECT_TRUE(p.resume_checkpoint.empty());

  // resume_path: a checkpoint folder or a run folder; into this run's own folder, or an empty one.
  p = plan_grpo_run_folder(
      config(run, {"trainer.resume_mode=resume_path", "trainer.resume_from_path=" + run + "/checkpoints/global_step_4"}), "",
      false);
  EXPECT_EQ(p.resume_checkpoint, run + "/checkpoints/global_step_4");
  p = plan_grpo_run_folder(config(fresh, {"trainer.resume_mode=resume_path", "trainer.resume_from_path=" + run}), "", false);
  EXPECT_EQ(p.resume_checkpoint, run + "/checkpoints/global_step_4");
  EXPECT_EQ(p.run_dir, fresh);
  fake_run(other, 2);
  EXPECT_TRUE(contains(error_of([&] {
                         plan_grpo_run_folder(
                             config(other, {"trainer.resume_mode=resume_path", "trainer.resume_from_path=" + run}), "",
                             false);
                       }),
                       "already holds a run"));
  EXPECT_TRUE(contains(error_of([&] {
                         plan_grpo_run_folder(config(fresh, {"trainer.resume_mode=resume_path",
                                                             "trainer.resume_from_path=" + dir.path() + "/none"}),
                                              "", false);
                       }),
                       "no such folder"));

  // auto on a folder with metrics but no checkpoint (a run that died before its first save): refused.
  make_dirs(dir.path() + "/died");
  write_file_atomic(dir.path() + "/died/metrics.jsonl", "{\"step\": 1}\n");
  EXPECT_TRUE(contains(
      error_of([&] { plan_grpo_run_folder(config(dir.path() + "/died", {"trainer.resume_mode=auto"}), "", false); }),
      "already holds a run (metrics.jsonl)"));
  EXPECT_TRUE(contains(error_of([&] { plan_grpo_run_folder(config(fresh), dir.path() + "/died", false); }),
                       "has no checkpoint"));
}
