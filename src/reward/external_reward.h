// A reward computed by a user command: a pool of worker processes (`/bin/sh -c COMMAND`), each reading
// one JSON request a line on stdin, {"id", "prompt", "response", "answer"} plus verl's "data_source" and
// "extra_info" when the dataset has them, and writing one line on stdout per request: {"reward": number}
// (or a bare number). Each call has a timeout (the first call of a worker includes its start-up). A worker
// that crashes or times out (or cannot start: a missing command) is killed with its whole process group
// and restarted on its next call; the request scores 0. A reply that is not a number in
// [-kMaxRewardMagnitude, kMaxRewardMagnitude] scores 0 too. Each case is a failure: counted (score()'s
// result, stats()), logged to stderr; nothing can hang the run.
#pragma once
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "reward/rewards.h"

namespace grpo {

class ExternalReward : public RewardFunction {
 public:
  ExternalReward(std::string command, int64_t workers, double timeout_s);
  ~ExternalReward() override;
  ExternalReward(const ExternalReward&) = delete;
  ExternalReward& operator=(const ExternalReward&) = delete;

  std::string name() const override { return "external"; }
  // Scores the batch on up to `workers` processes in parallel; returns the failures.
  int64_t score(std::span<const RewardInput> batch, std::span<float> out) override;
  std::string last_failure() const override;

  struct Stats {
    int64_t calls = 0, crashes = 0, timeouts = 0, invalid = 0;
  };
  Stats stats() const;

 private:
  struct Worker {
    pid_t pid = -1;
    int fd = -1;         // our end of the socket pair (the worker's stdin and stdout)
    std::string buffer;  // bytes read past the last reply
  };
  float call(Worker& w, const RewardInput& in, bool* failed);
  void start(Worker& w);
  int stop(Worker& w);  // kills the worker's process group; returns its wait status
  void report(const char* what, const RewardInput& in, const std::string& detail);

  std::string command_;
  double timeout_s_;
  std::vector<Worker> workers_;
  std::atomic<int64_t> calls_{0}, crashes_{0}, timeouts_{0}, invalid_{0}, reports_{0};
  mutable std::mutex last_failure_mutex_;
  std::string last_failure_;
};

}  // namespace grpo
