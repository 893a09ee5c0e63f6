// A reward computed by a user command: a pool of worker processes (`/bin/sh -c COMMAND`), each reading
// one JSON request a line on stdin, {"id", "prompt", "response", "answer"} plus verl's "data_source" and
// "extra_info" when the dataset has them, and writing one line on stdout per request: {"reward": number}
// (or a bare number). Each call has a timeout (the first call of a worker includes its start-up). A worker
// that crashes or times out (or cannot start: a missing command) is killed with its whole process group
// and restarted on its next call; the request scores 0. A reply that is not a number in
// [-kMaxRewardMagnitude, kMaxRewardMagnitude] scores 0 too. Each case is a failure: counted (score()'s
// result, stats()), logged to stderr; nothing can hang the run. A reply may also carry
// "extra": {key: number} (extra results, as metrics) or "error": text (a failure whose text is shown
// once: a Python traceback).
//
// The Python reward (python_reward.h) runs on the same pool with its own protocol (Protocol::Python):
// requests {"data_source", "solution_str", "ground_truth", "extra_info"}, or in batch mode one request
// {"batch": [...]} per worker with a share of the batch and a reply {"rewards": [...], "extras": [...]}.
// A fresh Python worker first says {"ready": true} once the user's module is imported; that start-up has
// its own deadline (the larger of timeout_s and 120 s), and the call's timeout starts after it.
#pragma once
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "reward/rewards.h"

namespace grpo {

class ExternalReward : public RewardFunction {
 public:
  // PythonTool: the Python tools' requests (tools/python_tool.h), sent through request(), never score().
  enum class Protocol { Command, Python, PythonBatch, PythonTool };
  ExternalReward(std::string command, int64_t workers, double timeout_s, Protocol protocol = Protocol::Command,
                 std::string name = "external", std::string label = "");
  ~ExternalReward() override;
  ExternalReward(const ExternalReward&) = delete;
  ExternalReward& operator=(const ExternalReward&) = delete;

  std::string name() const override { return name_; }
  // Scores the batch on up to `workers` processes in parallel; returns the failures.
  int64_t score(std::span<const RewardInput> batch, std::span<float> out) override;
  std::string last_failure() const override;

  using Clock = std::chrono::steady_clock;
  enum class Io { Ok, Closed, Timeout };

  struct Stats {
    int64_t calls = 0, crashes = 0, timeouts = 0, invalid = 0;
  };
  Stats stats() const;

  // For other users of the pool (the Python tools): sends one request line to worker `index` (each worker
  // used by one caller at a time) and returns its reply line; nullopt when the worker timed out (*io is
  // Timeout) or died or could not start (*io is Closed), counted and logged as for rewards, naming `what`.
  std::optional<std::string> request(size_t index, const std::string& line, const std::string& what, Io* io);
  size_t workers() const { return workers_.size(); }

 private:
  struct Worker {
    pid_t pid = -1;
    int fd = -1;         // our end of the socket pair (the worker's stdin and stdout)
    std::string buffer;  // bytes read past the last reply
  };
  // Sends one request line and returns the reply line; nullopt (the failure counted and reported) when
  // the worker died or timed out.
  std::optional<std::string> exchange(Worker& w, const std::string& line, const RewardInput& in, Io* io = nullptr);
  // Reads one line from the worker (bytes past it stay in its buffer).
  Io read_line(Worker& w, Clock::time_point deadline, std::string* line);
  float call(Worker& w, const RewardInput& in, size_t index, size_t batch_size, bool* failed);
  // Batch mode: one request for batch[begin, end); returns the failures.
  int64_t call_batch(Worker& w, std::span<const RewardInput> batch, size_t begin, size_t end, std::span<float> out);
  // A reply's value (a number or {"reward": number, "extra": {...}}) -> the score; false (counted and
  // reported) when it is not a number in range.
  bool read_reply(const nlohmann::json& reply, const std::string& text, const RewardInput& in, size_t index,
                  size_t batch_size, float* score);
  nlohmann::json request_of(const RewardInput& in) const;
  void start(Worker& w);
  int stop(Worker& w);  // kills the worker's process group; returns its wait status
  void report(const char* what, const RewardInput& in, const std::string& detail);

  std::string command_;
  double timeout_s_;
  Protocol protocol_;
  std::string name_;
  std::string label_;  // how messages name the worker: the command, or the Python function
  std::vector<std::string> errors_shown_;  // tracebacks already printed, without their message line
  std::vector<Worker> workers_;
  std::atomic<int64_t> calls_{0}, crashes_{0}, timeouts_{0}, invalid_{0}, reports_{0};
  mutable std::mutex last_failure_mutex_;
  std::string last_failure_;
};

}  // namespace grpo
