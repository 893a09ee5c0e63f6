// Test helpers of the multi-process suites (cli_dist, cli_netns): the `tiny` GRPO run they launch (data
// and config), starting `grpo` (or its launcher) with its output in a log, and comparing two runs' metrics
// (tests/cli_dist/test_cli_dist.cpp says which metrics are equal and which agree to a tolerance, and why).
#pragma once
#include <fcntl.h>
#include <signal.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/files.h"
#include "loop/trainer_state.h"

namespace grpo::test {

using Clock = std::chrono::steady_clock;

inline std::string prompt_line(int i) {
  const int a = i % 7 + 1, b = i * 3 % 5 + 2;
  const std::string sum = std::to_string(a) + "+" + std::to_string(b);
  return nlohmann::json{{"prompt", "Compute " + sum + "."},
                        {"answer", std::to_string(a + b)},
                        {"response", sum + "=" + std::to_string(a + b) + ". \\boxed{" + std::to_string(a + b) + "}"}}
             .dump() +
         "\n";
}

// 4 prompts x 8 samples of at most 8 tokens a step, rewarded when the response starts with a lowercase
// letter; `steps` steps, every one saved; validation before training, every 3 steps and at the end.
inline std::string config_yaml(const std::string& dir, int64_t steps) {
  return "data:\n"
         "  train_files: " +
         dir +
         "/train.jsonl\n"
         "  val_files: " +
         dir +
         "/val.jsonl\n"
         "  train_batch_size: 4\n"
         "  max_prompt_length: 32\n"
         "  max_response_length: 8\n"
         "  apply_chat_template: false\n"
         "actor_rollout_ref:\n"
         "  model:\n"
         "    path: " +
         dir +
         "/model\n"
         "  rollout:\n"
         "    n: 8\n"
         "    max_num_seqs: 32\n"
         "  actor:\n"
         "    ppo_mini_batch_size: 4\n"
         "    use_dynamic_bsz: true\n"
         "    ppo_max_token_len_per_gpu: 128\n"
         "    optim:\n"
         "      lr: 1.0e-2\n"
         "reward:\n"
         "  functions:\n"
         "    - name: format\n"
         "      pattern: \"^[a-z]\"\n"
         "trainer:\n"
         "  total_training_steps: " +
         std::to_string(steps) +
         "\n"
         "  save_freq: 1\n"
         "  test_freq: 3\n"
         "  seed: 0\n"
         "sft:\n"
         "  batch_size: 6\n"
         "  epochs: 2\n"
         "  lr: 5.0e-3\n"
         "  max_length: 64\n";
}

// Starts `argv` with stdout and stderr going to `log`.
inline pid_t spawn(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> a;
  for (const std::string& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    execvp(a[0], a.data());
    _exit(127);
  }
  return pid;
}

struct Outcome {
  int status;  // exit status, -1 when killed by a signal
  std::string output;
  double seconds;
};

inline Outcome wait_for(pid_t pid, const std::string& log, Clock::time_point t0) {
  int st = 0;
  waitpid(pid, &st, 0);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, read_file(log),
          std::chrono::duration<double>(Clock::now() - t0).count()};
}

// wait_for with a deadline: past it, `pid` is killed (SIGKILL) and the outcome's status is -2.
inline Outcome wait_for(pid_t pid, const std::string& log, Clock::time_point t0, Clock::time_point deadline) {
  int st = 0;
  while (waitpid(pid, &st, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      return {-2, read_file(log), std::chrono::duration<double>(Clock::now() - t0).count()};
    }
    usleep(10000);
  }
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, read_file(log),
          std::chrono::duration<double>(Clock::now() - t0).count()};
}

inline Outcome run_to_end(const std::vector<std::string>& argv, const std::string& log) {
  const auto t0 = Clock::now();
  return wait_for(spawn(argv, log), log, t0);
}

inline int64_t latest_step(const std::string& run) {
  const std::string ck = latest_run_checkpoint(run);
  return ck.empty() ? 0 : std::stoll(ck.substr(ck.rfind('_') + 1));
}

inline bool clock_or_machine(const std::string& key) {
  return key.rfind("timing_s/", 0) == 0 ||
         (key.rfind("perf/", 0) == 0 && key != "perf/train_tokens" && key != "perf/packing_efficiency");
}

// Metrics of the update that sum fp32 values in an order that depends on the ranks (the trainer's log-probs
// against the rollout's included: each rank recomputes its own share's).
inline bool continuous(const std::string& key) {
  static const std::set<std::string> keys = {"actor/pg_loss",           "actor/kl_loss", "actor/entropy",
                                             "actor/pg_clipfrac",       "actor/ppo_kl",  "actor/grad_norm",
                                             "actor/pg_clipfrac_lower", "train/loss"};
  return keys.count(key) != 0 || key.rfind("training/rollout_probs_diff_", 0) == 0 ||
         key.rfind("rollout_corr/", 0) == 0;
}

// Compares two runs' metrics line by line: equal, continuous metrics (and those starting with one of
// `also_continuous`) within `rel` (relative, or absolute below 1). Lines from `from_line` on.
inline void expect_same_metrics(const std::vector<nlohmann::json>& a, const std::vector<nlohmann::json>& b, double rel,
                                size_t from_line = 0, const std::vector<std::string>& also_continuous = {}) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = from_line; i < a.size(); ++i) {
    SCOPED_TRACE(testing::Message() << "line " << i + 1 << ": " << a[i].dump() << "\nvs " << b[i].dump());
    for (const auto& [key, va] : a[i].items()) {
      if (clock_or_machine(key)) continue;
      ASSERT_TRUE(b[i].contains(key)) << key;
      const nlohmann::json& vb = b[i][key];
      bool cont = continuous(key);
      for (const std::string& prefix : also_continuous) cont = cont || key.rfind(prefix, 0) == 0;
      if (cont && va.is_number() && vb.is_number()) {
        const double x = va.get<double>(), y = vb.get<double>();
        EXPECT_LE(std::fabs(x - y), rel * std::max(1.0, std::fabs(x))) << key;
      } else {
        EXPECT_EQ(va, vb) << key;
      }
    }
  }
}

}  // namespace grpo::test
