// `grpo train` end to end through the built binary (GRPO_BINARY) on a `tiny` model: a run killed with
// SIGKILL (in the middle of writing a checkpoint whenever the poll catches one in progress) leaves its
// latest checkpoint loadable, and `--resume` then completes it with a metrics.jsonl equal, line for line,
// to an uninterrupted run's (clock- and machine-dependent values aside); a config key that does not
// exist is reported by name with a non-zero exit.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cli_run.h"
#include "core/files.h"
#include "report/metrics.h"
#include "run_metrics.h"
#include "loop/trainer_state.h"
#include "model/weights.h"
#include "train/optimizer.h"

using namespace grpo;
using Json = nlohmann::json;
namespace fs = std::filesystem;
using test::run_grpo;
using test::without_machine_dependent;

namespace {

constexpr int64_t kSteps = 8;

// Starts GRPO_BINARY with `args`, its stdout and stderr going to `log`.
pid_t spawn_grpo(const std::vector<std::string>& args, const std::string& log) {
  std::vector<char*> argv = {const_cast<char*>(GRPO_BINARY)};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    execv(GRPO_BINARY, argv.data());
    _exit(127);
  }
  return pid;
}

// The step of the checkpoint `checkpoints/latest` names (0 when there is none yet).
int64_t latest_step(const std::string& run) {
  const std::string ck = latest_run_checkpoint(run);
  return ck.empty() ? 0 : std::stoll(ck.substr(ck.rfind('_') + 1));
}

// Whether a checkpoint is being written: its scratch state folder or its .partial model folder exists.
bool saving(const std::string& run) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run + "/checkpoints", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(".state_tmp_", 0) == 0 || name.ends_with(".partial")) return true;
  }
  return false;
}

// "Compute a+b." with its answer, a JSONL line.
std::string prompt_line(int i) {
  const int a = i % 7 + 1, b = i * 3 % 5 + 2;
  const std::string prompt = "Compute " + std::to_string(a) + "+" + std::to_string(b) + ".";
  return Json{{"prompt", prompt}, {"answer", std::to_string(a + b)}}.dump() + "\n";
}

// 4 prompts x 8 samples of at most 8 tokens a step, rewarded when the response starts with a lowercase
// letter; every step saved; validation before training, every 3 steps and at the end.
std::string config_yaml(const std::string& dir) {
  return "data:\n"
         "  train_files: " + dir + "/train.jsonl\n"
         "  val_files: " + dir + "/val.jsonl\n"
         "  train_batch_size: 4\n"
         "  max_prompt_length: 32\n"
         "  max_response_length: 8\n"
         "  apply_chat_template: false\n"
         "actor_rollout_ref:\n"
         "  model:\n"
         "    path: " + dir + "/model\n"
         "  rollout:\n"
         "    n: 8\n"
         "    max_num_seqs: 32\n"
         "  actor:\n"
         "    ppo_mini_batch_size: 4\n"
         "    use_dynamic_bsz: true\n"
         "    ppo_max_token_len_per_gpu: 1024\n"
         "    optim:\n"
         "      lr: 1.0e-2\n"
         "reward:\n"
         "  functions:\n"
         "    - name: format\n"
         "      pattern: \"^[a-z]\"\n"
         "trainer:\n"
         "  total_training_steps: " + std::to_string(kSteps) + "\n"
         "  save_freq: 1\n"
         "  test_freq: 3\n"
         "  seed: 0\n";
}

class CliTrain : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("grpo_cli_train_" + std::to_string(getpid()))).string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const test::CommandResult init = run_grpo("init --arch qwen3 --preset tiny --seed 1 --out " + dir_ + "/model");
    ASSERT_EQ(init.status, 0) << init.output;
    std::string train_data, val_data;
    for (int i = 0; i < 16; ++i) (i < 4 ? val_data : train_data) += prompt_line(i);
    write_file_atomic(dir_ + "/train.jsonl", train_data);
    write_file_atomic(dir_ + "/val.jsonl", val_data);
    write_file_atomic(dir_ + "/config.yaml", config_yaml(dir_));
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<std::string> train_args(const std::string& run) const {
    return {"train", dir_ + "/config.yaml", "--threads", "1", "--set", "trainer.default_local_dir=" + run};
  }
  test::CommandResult train(const std::string& run, const std::string& more = "") const {
    std::string args;
    for (const std::string& a : train_args(run)) args += a + " ";
    return run_grpo(args + more);
  }

  std::string dir_;
};

TEST_F(CliTrain, ResumeAfterSigkillMatchesAnUninterruptedRun) {
  const std::string reference = dir_ + "/reference", run = dir_ + "/run", log = dir_ + "/killed.log";
  const test::CommandResult ref = train(reference);
  ASSERT_EQ(ref.status, 0) << ref.output;

  // Kill once step 2 is saved, as soon as a later save is seen in progress (or, failing that, at step 4).
  const pid_t pid = spawn_grpo(train_args(run), log);
  ASSERT_GT(pid, 0);
  bool mid_save = false;
  for (;;) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, WNOHANG), 0) << "the run ended before it was killed:\n" << read_file(log);
    const int64_t step = latest_step(run);
    mid_save = step >= 2 && saving(run);
    if (mid_save || step >= 4) break;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << read_file(log);
  std::printf("[ killed  ] %s\n", mid_save ? "while a checkpoint was being written" : "between checkpoints");

  // The newest complete checkpoint loads: weights, optimizer moments and trainer state.
  const std::string ck = latest_run_checkpoint(run);
  const int64_t saved = latest_step(run);
  ASSERT_GE(saved, 2);
  ASSERT_LT(saved, kSteps);
  std::unique_ptr<ModelWeights> w = ModelWeights::load(ck);
  train::AdamW adam(w->config());
  const TrainerState st = load_run_checkpoint(ck, *w, adam);
  EXPECT_EQ(st.global_step, saved);
  EXPECT_EQ(adam.steps(), saved);

  const test::CommandResult resumed = train(run, "--resume " + run);
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resumed"), std::string::npos) << resumed.output;
  const std::vector<Json> a = read_metrics(reference + "/metrics.jsonl"), b = read_metrics(run + "/metrics.jsonl");
  // Steps 1..8 plus validations at steps 0, 3, 6 and 8.
  ASSERT_EQ(a.size(), static_cast<size_t>(kSteps + 4));
  ASSERT_EQ(b.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(without_machine_dependent(a[i]), without_machine_dependent(b[i])) << "line " << i + 1;
  EXPECT_EQ(latest_step(run), kSteps);
  EXPECT_FALSE(saving(run)) << "the interrupted save left scratch folders behind";
}

TEST_F(CliTrain, UnknownConfigKeyIsNamedAndFails) {
  const test::CommandResult set = train(dir_ + "/bad", "--set trainer.totl_training_steps=3");
  EXPECT_NE(set.status, 0);
  EXPECT_NE(set.output.find("trainer.totl_training_steps"), std::string::npos) << set.output;
  EXPECT_NE(set.output.find("did you mean trainer.total_training_steps"), std::string::npos) << set.output;

  write_file_atomic(dir_ + "/bad.yaml", read_file(dir_ + "/config.yaml") + "  sav_freq: 2\n");
  const test::CommandResult file = run_grpo("train " + dir_ + "/bad.yaml --set trainer.default_local_dir=" + dir_ + "/bad");
  EXPECT_NE(file.status, 0);
  EXPECT_NE(file.output.find("bad.yaml:"), std::string::npos) << file.output;
  EXPECT_NE(file.output.find("trainer.sav_freq"), std::string::npos) << file.output;
  EXPECT_FALSE(fs::exists(dir_ + "/bad")) << "nothing is written before the config is valid";
}

TEST_F(CliTrain, BenchGrpoRefusesAMicroBatchThatDoesNotSplitTheStepBeforeAnyRun) {
  const test::CommandResult r =
      run_grpo("bench grpo --preset tiny --prompts 2 --n 2 --micro-batch 8 --out " + dir_ + "/bench");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("--micro-batch 8 must divide --prompts x --n = 4"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ + "/bench/run0")) << "no run started";
}

}  // namespace

namespace {

// A second `grpo train` into a run folder that holds a run is refused, naming the way out, and changes
// nothing; --overwrite starts over; --resume continues (here: the run is already complete).
TEST_F(CliTrain, ASecondRunIntoTheSameFolderIsRefusedUnlessAsked) {
  const std::string run = dir_ + "/run";
  const std::string one_step = "--set trainer.total_training_steps=1 --set trainer.test_freq=-1 --set trainer.val_before_train=false";
  const test::CommandResult first = train(run, one_step);
  ASSERT_EQ(first.status, 0) << first.output;
  const std::string metrics = read_file(run + "/metrics.jsonl");

  const test::CommandResult again = train(run, one_step);
  EXPECT_NE(again.status, 0);
  EXPECT_NE(again.output.find("already holds a run (metrics.jsonl, checkpoints, report.html)"), std::string::npos)
      << again.output;
  EXPECT_NE(again.output.find("--overwrite"), std::string::npos) << again.output;
  EXPECT_EQ(read_file(run + "/metrics.jsonl"), metrics) << "nothing lost";

  const test::CommandResult resumed = train(run, one_step + " --resume " + run);
  EXPECT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("already complete"), std::string::npos) << resumed.output;

  const test::CommandResult over = train(run, one_step + " --overwrite");
  EXPECT_EQ(over.status, 0) << over.output;
  EXPECT_NE(over.output.find("--overwrite: deleting the earlier run"), std::string::npos) << over.output;
  EXPECT_EQ(read_metrics(run + "/metrics.jsonl").size(), 2u) << "step 1 and its validation, nothing older";
}

// Errors say what was being done: the scopes an error left are printed under it.
TEST_F(CliTrain, ErrorsSayWhatWasBeingDone) {
  const test::CommandResult r = train(dir_ + "/nomodel", "--set actor_rollout_ref.model.path=" + dir_ + "/missing");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("error: [checkpoint] " + dir_ + "/missing: no such model folder"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\n  while loading the model " + dir_ + "/missing (actor_rollout_ref.model.path)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("\n  while setting up the GRPO run"), std::string::npos) << r.output;
}

}  // namespace
