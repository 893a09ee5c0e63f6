// The bridge between HTTP handler threads and the one thread that owns the rollout engine. A handler
// submits a Job (the engine requests of one HTTP request) to a bounded queue and waits on it; the engine
// thread runs Engine::serve with this object as its RequestFeed, so queued requests join the running batch
// between decode steps. A job that is cancelled (its client went away) leaves the engine at the next step
// and its KV blocks are freed. stop() refuses new jobs and lets the admitted ones finish; cancel_all() ends
// the rest. Metrics (requests, tokens, tokens/s, queue, KV blocks, preemptions) as Prometheus text.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rollout/engine.h"
#include "rollout/serving.h"

namespace grpo::serve {

// A sample's new tokens, streamed to its job's handler.
struct TokenEvent {
  size_t request;  // index in Job::requests
  int32_t sample;
  std::vector<int32_t> tokens;             // the new tokens
  std::vector<float> logprobs;             // [tokens]
  std::vector<rollout::TokenLogprob> top;  // [tokens, the request's top_logprobs]
  std::string text;                        // the sample's whole text so far
};

struct Job {
  std::vector<rollout::Request> requests;  // fixed once submitted
  bool stream = false;                     // on_tokens events wanted
  // Filled by the engine thread, under mu:
  std::mutex mu;
  std::condition_variable cv;
  std::vector<rollout::RequestResult> results;  // [requests]
  std::string error;                            // the first refusal, if any
  size_t done = 0;
  std::deque<TokenEvent> events;
  bool finished() const { return done == requests.size(); }
};

enum class Submit { Queued, QueueFull, Stopping };

class EngineQueue : public rollout::RequestFeed {
 public:
  // max_requests: engine requests queued or running at most (beyond: QueueFull).
  EngineQueue(rollout::Engine& engine, int64_t max_requests);
  ~EngineQueue() override;  // cancels what is left and joins the engine thread

  Submit submit(const std::shared_ptr<Job>& job);
  void cancel(const std::shared_ptr<Job>& job);  // its requests end with finish reason abort
  void stop();                                   // no new jobs; the engine ends when the admitted ones have
  void cancel_all();
  // Waits until no job is left or `deadline`; true when none is.
  bool wait_empty(std::chrono::steady_clock::time_point deadline);
  std::string metrics_text(int64_t http_requests, int64_t http_errors);
  int64_t queued_requests();

  bool poll(std::vector<rollout::Admission>& admit, std::vector<uint64_t>& cancel, bool idle,
            const rollout::ServeState& state) override;
  void on_tokens(uint64_t ticket, int32_t sample, const rollout::SampleProgress& progress) override;
  void on_done(uint64_t ticket, rollout::RequestResult result, const std::string& error) override;

 private:
  struct Entry {
    std::shared_ptr<Job> job;
    size_t index;
  };
  void finish(const Entry& e, rollout::RequestResult result, const std::string& error);
  void note_rate(const rollout::ServeState& state);  // tokens/s over the last 10 s

  rollout::Engine& engine_;
  int64_t max_requests_;
  std::mutex mu_;
  std::condition_variable cv_;         // the engine thread waits for work; wait_empty for the end
  std::map<uint64_t, Entry> tickets_;  // every request queued or running
  std::vector<uint64_t> pending_;      // not yet handed to the engine
  std::vector<uint64_t> cancels_;      // handed over, to cancel
  uint64_t next_ticket_ = 1;
  bool stopping_ = false;
  rollout::ServeState state_;
  std::deque<std::pair<std::chrono::steady_clock::time_point, int64_t>> rate_;  // (time, generated tokens)
  int64_t completed_ = 0, cancelled_ = 0, refused_ = 0;
  std::thread thread_;
};

}  // namespace grpo::serve
