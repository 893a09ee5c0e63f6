// The engine thread's request feed (see engine_queue.h).
#include "serve/engine_queue.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace grpo::serve {

namespace {
using Clock = std::chrono::steady_clock;
constexpr double kRateWindowS = 10.0;
}  // namespace

EngineQueue::EngineQueue(rollout::Engine& engine, int64_t max_requests) : engine_(engine), max_requests_(max_requests) {
  thread_ = std::thread([this] {
    try {
      engine_.serve(*this);
    } catch (const std::exception& e) {  // the engine gave up: every job left fails with its error
      std::fprintf(stderr, "[serve] the engine stopped: %s\n", e.what());
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      for (auto& [ticket, entry] : tickets_) finish(entry, {}, e.what());
      tickets_.clear();
      pending_.clear();
      cv_.notify_all();
    }
  });
}

EngineQueue::~EngineQueue() {
  stop();
  cancel_all();
  thread_.join();
}

Submit EngineQueue::submit(const std::shared_ptr<Job>& job) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return Submit::Stopping;
  if (static_cast<int64_t>(tickets_.size() + job->requests.size()) > max_requests_) return Submit::QueueFull;
  job->results.resize(job->requests.size());
  for (size_t i = 0; i < job->requests.size(); ++i) {
    const uint64_t t = next_ticket_++;
    tickets_[t] = {job, i};
    pending_.push_back(t);
  }
  cv_.notify_all();
  return Submit::Queued;
}

void EngineQueue::finish(const Entry& e, rollout::RequestResult result, const std::string& error) {
  std::lock_guard<std::mutex> lock(e.job->mu);
  e.job->results[e.index] = std::move(result);
  if (!error.empty() && e.job->error.empty()) e.job->error = error;
  ++e.job->done;
  e.job->cv.notify_all();
}

void EngineQueue::cancel(const std::shared_ptr<Job>& job) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = tickets_.begin(); it != tickets_.end();) {
    if (it->second.job != job) {
      ++it;
      continue;
    }
    const auto p = std::find(pending_.begin(), pending_.end(), it->first);
    if (p == pending_.end()) {  // in the engine: it leaves at the next step
      if (std::find(cancels_.begin(), cancels_.end(), it->first) == cancels_.end()) cancels_.push_back(it->first);
      ++it;
      continue;
    }
    pending_.erase(p);
    ++cancelled_;
    finish(it->second, {}, "");
    it = tickets_.erase(it);
  }
  cv_.notify_all();
}

void EngineQueue::stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stopping_ = true;
  cv_.notify_all();
}

void EngineQueue::cancel_all() {
  std::vector<std::shared_ptr<Job>> jobs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [ticket, entry] : tickets_) jobs.push_back(entry.job);
  }
  for (const std::shared_ptr<Job>& job : jobs) cancel(job);
}

bool EngineQueue::wait_empty(Clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_until(lock, deadline, [&] { return tickets_.empty(); });
}

int64_t EngineQueue::queued_requests() {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(pending_.size());
}

void EngineQueue::note_rate(const rollout::ServeState& state) {
  const Clock::time_point now = Clock::now();
  if (rate_.empty() || now - rate_.back().first > std::chrono::milliseconds(250))
    rate_.emplace_back(now, state.generated_tokens);
  while (rate_.size() > 2 && std::chrono::duration<double>(now - rate_.front().first).count() > kRateWindowS)
    rate_.pop_front();
}

bool EngineQueue::poll(std::vector<rollout::Admission>& admit, std::vector<uint64_t>& cancel, bool idle,
                       const rollout::ServeState& state) {
  std::unique_lock<std::mutex> lock(mu_);
  state_ = state;
  note_rate(state);
  if (idle) cv_.wait(lock, [&] { return !pending_.empty() || !cancels_.empty() || stopping_; });
  for (const uint64_t t : pending_) {
    const Entry& e = tickets_.at(t);
    admit.push_back({t, &e.job->requests[e.index]});
  }
  pending_.clear();
  for (const uint64_t t : cancels_)
    if (tickets_.count(t)) cancel.push_back(t);
  cancels_.clear();
  return !stopping_;
}

void EngineQueue::on_tokens(uint64_t ticket, int32_t sample, const rollout::SampleProgress& progress) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = tickets_.find(ticket);
  if (it == tickets_.end() || !it->second.job->stream) return;
  Job& job = *it->second.job;
  const size_t fresh = progress.fresh, top_fresh = progress.top.size() / progress.tokens.size() * fresh;
  TokenEvent ev{it->second.index,
                sample,
                {progress.tokens.end() - fresh, progress.tokens.end()},
                {progress.logprobs.end() - fresh, progress.logprobs.end()},
                {progress.top.end() - top_fresh, progress.top.end()},
                std::string(progress.text)};
  std::lock_guard<std::mutex> job_lock(job.mu);
  job.events.push_back(std::move(ev));
  job.cv.notify_all();
}

void EngineQueue::on_done(uint64_t ticket, rollout::RequestResult result, const std::string& error) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = tickets_.find(ticket);
  if (it == tickets_.end()) return;
  bool aborted = !error.empty();
  for (const rollout::SampleResult& s : result.samples)
    aborted = aborted || s.finish_reason == rollout::FinishReason::Abort;
  ++(error.empty() ? (aborted ? cancelled_ : completed_) : refused_);
  finish(it->second, std::move(result), error);
  tickets_.erase(it);
  cv_.notify_all();
}

std::string EngineQueue::metrics_text(int64_t http_requests, int64_t http_errors) {
  std::lock_guard<std::mutex> lock(mu_);
  double rate = 0;
  const Clock::time_point now = Clock::now();
  while (rate_.size() > 1 && std::chrono::duration<double>(now - rate_.front().first).count() > kRateWindowS)
    rate_.pop_front();
  if (rate_.size() > 1) {
    const double span = std::chrono::duration<double>(now - rate_.front().first).count();
    rate = span > 0 ? static_cast<double>(rate_.back().second - rate_.front().second) / span : 0;
  }
  std::ostringstream o;
  auto metric = [&](const char* name, const char* type, const char* help, double value) {
    o << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n" << name << " " << value << "\n";
  };
  metric("grpo_http_requests_total", "counter", "HTTP requests received.", static_cast<double>(http_requests));
  metric("grpo_http_errors_total", "counter", "HTTP requests answered with an error status.",
         static_cast<double>(http_errors));
  metric("grpo_requests_completed_total", "counter", "Engine requests completed.", static_cast<double>(completed_));
  metric("grpo_requests_cancelled_total", "counter", "Engine requests cancelled (client gone, shutdown).",
         static_cast<double>(cancelled_));
  metric("grpo_requests_refused_total", "counter", "Engine requests refused by the engine.",
         static_cast<double>(refused_));
  metric("grpo_requests_running", "gauge", "Engine requests admitted and not done.",
         static_cast<double>(state_.running_requests));
  metric("grpo_queue_requests", "gauge", "Engine requests queued, not yet admitted.",
         static_cast<double>(pending_.size()));
  metric("grpo_generated_tokens_total", "counter", "Tokens generated.", static_cast<double>(state_.generated_tokens));
  metric("grpo_generated_tokens_per_second", "gauge", "Tokens generated per second over the last 10 s.", rate);
  metric("grpo_kv_blocks_used", "gauge", "KV cache blocks in use.", static_cast<double>(state_.kv_blocks_used));
  metric("grpo_kv_blocks_total", "gauge", "KV cache blocks.", static_cast<double>(state_.kv_blocks));
  metric("grpo_preemptions_total", "counter", "Sequences preempted (recomputed) when KV blocks ran out.",
         static_cast<double>(state_.preemptions));
  metric("grpo_engine_steps_total", "counter", "Engine steps.", static_cast<double>(state_.steps));
  return o.str();
}

}  // namespace grpo::serve
