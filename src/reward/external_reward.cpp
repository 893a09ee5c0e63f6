// External reward worker pool over socket pairs with poll() deadlines (see external_reward.h).
#include "reward/external_reward.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <algorithm>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.h"

namespace grpo {

namespace {

using Clock = ExternalReward::Clock;
using Io = ExternalReward::Io;

int remaining_ms(Clock::time_point deadline) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return ms > 0 ? static_cast<int>(ms) : 0;
}

// Waits for `events` on fd until the deadline.
Io wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, remaining_ms(deadline));
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return Io::Closed;
    if (rc == 0) return Io::Timeout;
    if (p.revents & events) return Io::Ok;
    return Io::Closed;  // POLLHUP / POLLERR without data
  }
}

constexpr int64_t kMaxReports = 20;
constexpr double kPythonStartupSeconds = 120;  // importing the user's module (see exchange)  // problems logged one by one; later ones are only counted

}  // namespace

ExternalReward::ExternalReward(std::string command, int64_t workers, double timeout_s, Protocol protocol,
                               std::string name, std::string label)
    : command_(std::move(command)), timeout_s_(timeout_s), protocol_(protocol), name_(std::move(name)),
      label_(label.empty() ? command_ : std::move(label)) {
  GRPO_CHECK(!command_.empty(), "[reward] external: the command is empty");
  GRPO_CHECK(workers >= 1 && workers <= kMaxRewardWorkers, "[reward] external \"", command_,
             "\": workers must be in [1, ", kMaxRewardWorkers, "], got ", workers);
  GRPO_CHECK(timeout_s > 0 && timeout_s <= kMaxRewardTimeoutSeconds, "[reward] external \"", command_,
             "\": timeout_s must be in (0, ", kMaxRewardTimeoutSeconds, "], got ", timeout_s);
  workers_.resize(static_cast<size_t>(workers));
}

ExternalReward::~ExternalReward() {
  for (auto& w : workers_) stop(w);
}

void ExternalReward::start(Worker& w) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    fail("[reward] external: socketpair failed: ", std::strerror(errno));
  const char* cmd = command_.c_str();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    fail("[reward] external: fork failed: ", std::strerror(errno));
  }
  if (pid == 0) {  // child: only async-signal-safe calls until exec
    ::setpgid(0, 0);
    ::dup2(fds[1], 0);
    ::dup2(fds[1], 1);
    ::execl("/bin/sh", "sh", "-c", cmd, static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here, so that the group exists before any kill
  ::close(fds[1]);
  w.pid = pid;
  w.fd = fds[0];
  w.buffer.clear();
}

int ExternalReward::stop(Worker& w) {
  int status = 0;
  if (w.fd >= 0) ::close(w.fd);
  if (w.pid > 0) {
    ::kill(-w.pid, SIGKILL);  // the whole group: sh and anything it started
    ::kill(w.pid, SIGKILL);   // and the worker itself, should its own group not exist yet
    while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  w = Worker{};
  return status;
}

void ExternalReward::report(const char* what, const RewardInput& in, const std::string& detail) {
  const bool tool = protocol_ == Protocol::PythonTool;
  {
    std::lock_guard<std::mutex> lock(last_failure_mutex_);
    last_failure_ = cat(name_ == "external" ? "command \"" : "\"", label_, "\": ", what, " on request \"", in.id, "\"", detail);
  }
  const int64_t n = reports_++;
  if (n < kMaxReports)
    std::fprintf(stderr, "[%s] %s \"%s\": %s on request \"%s\"%s; %s\n", tool ? "tools" : "reward", name_.c_str(),
                 label_.c_str(), what, in.id.c_str(), detail.c_str(), tool ? "the call failed" : "scored 0");
  if (n == kMaxReports)
    std::fprintf(stderr, "[%s] %s \"%s\": further problems are only counted\n", tool ? "tools" : "reward",
                 name_.c_str(), label_.c_str());
}

std::optional<std::string> ExternalReward::exchange(Worker& w, const std::string& line, const RewardInput& in,
                                                    Io* io_out) {
  if (io_out) *io_out = Io::Ok;
  const auto timeout = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s_));
  auto deadline = Clock::now() + timeout;
  const bool fresh = w.pid < 0;
  try {
    if (fresh) start(w);
  } catch (const Error& e) {
    ++crashes_;
    if (io_out) *io_out = Io::Closed;
    report("cannot start a worker", in, cat(" (", e.what(), ")"));
    return std::nullopt;
  }
  auto broken = [&](Io io, const char* when) -> std::optional<std::string> {
    if (io_out) *io_out = io;
    if (io == Io::Timeout) {
      ++timeouts_;
      report("timed out", in, cat(" after ", timeout_s_, " s ", when));
      stop(w);
    } else {
      const int status = stop(w);
      ++crashes_;
      report("worker died", in,
             cat(WIFEXITED(status) ? cat(" (exit status ", WEXITSTATUS(status),
                                         WEXITSTATUS(status) == 127 ? ": command not found" : "", ")")
                                   : cat(" (signal ", WIFSIGNALED(status) ? WTERMSIG(status) : 0, ")"),
                 " ", when));
    }
    return std::nullopt;
  };
  if (fresh && protocol_ != Protocol::Command) {
    // The Python driver says {"ready": true} once the user's module is imported: the import (torch,
    // sympy, ...) has its own deadline, not the per-call timeout.
    std::string ready;
    const auto startup = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                            std::chrono::duration<double>(std::max(timeout_s_, kPythonStartupSeconds)));
    if (const Io io = read_line(w, startup, &ready); io != Io::Ok) return broken(io, "while starting");
    deadline = Clock::now() + timeout;
  }
  w.buffer.clear();  // anything unread belongs to earlier requests
  for (size_t sent = 0; sent < line.size();) {
    const Io io = wait_for(w.fd, POLLOUT, deadline);
    if (io != Io::Ok) return broken(io, "while sending");
    const ssize_t n = ::send(w.fd, line.data() + sent, line.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return broken(Io::Closed, "while sending");
    sent += static_cast<size_t>(n);
  }
  std::string reply;
  if (const Io io = read_line(w, deadline, &reply); io != Io::Ok) return broken(io, "while waiting for the reply");
  return reply;
}

ExternalReward::Io ExternalReward::read_line(Worker& w, Clock::time_point deadline, std::string* line) {
  size_t newline;
  while ((newline = w.buffer.find('\n')) == std::string::npos) {
    const Io io = wait_for(w.fd, POLLIN, deadline);
    if (io != Io::Ok) return io;
    char chunk[4096];
    const ssize_t n = ::recv(w.fd, chunk, sizeof chunk, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return Io::Closed;
    w.buffer.append(chunk, static_cast<size_t>(n));
  }
  *line = w.buffer.substr(0, newline);
  w.buffer.erase(0, newline + 1);
  return Io::Ok;
}

nlohmann::json ExternalReward::request_of(const RewardInput& in) const {
  if (protocol_ == Protocol::Command) {
    nlohmann::json r = {{"id", in.id}, {"prompt", in.prompt}, {"response", in.response}, {"answer", in.answer}};
    if (!in.data_source.empty()) r["data_source"] = in.data_source;
    if (!in.extra_info.is_null()) r["extra_info"] = in.extra_info;
    return r;
  }
  // verl's arguments. A ground truth stored as a JSON object (searchR1's {"target": [...]}) goes as the object.
  nlohmann::json truth = in.answer;
  if (!in.answer.empty() && in.answer[0] == '{') {
    auto parsed = nlohmann::json::parse(in.answer, nullptr, false);
    if (parsed.is_object()) truth = std::move(parsed);
  }
  return {{"data_source", in.data_source}, {"solution_str", in.response}, {"ground_truth", truth},
          {"extra_info", in.extra_info}};
}

bool ExternalReward::read_reply(const nlohmann::json& j, const std::string& text, const RewardInput& in, size_t index,
                                size_t batch_size, float* score) {
  if (j.is_object() && j.contains("error") && j["error"].is_string()) {
    ++invalid_;
    const std::string error = j["error"].get<std::string>();
    // The traceback is shown once per place it was raised (its lines but the last, which holds the
    // message); each sample's failure is reported with that last line.
    const size_t cut = error.find_last_not_of('\n');
    const size_t last_line = cut == std::string::npos ? std::string::npos : error.rfind('\n', cut);
    const std::string where = last_line == std::string::npos ? error : error.substr(0, last_line);
    bool shown;
    {
      std::lock_guard<std::mutex> lock(last_failure_mutex_);
      shown = std::find(errors_shown_.begin(), errors_shown_.end(), where) != errors_shown_.end();
      if (!shown) errors_shown_.push_back(where);
    }
    if (!shown) std::fprintf(stderr, "[reward] %s \"%s\" raised:\n%s\n", name_.c_str(), label_.c_str(), error.c_str());
    report("error", in, cat(": ", error.substr(last_line == std::string::npos ? 0 : last_line + 1)));
    return false;
  }
  const nlohmann::json* value = j.is_object() && j.contains("reward") ? &j["reward"] : &j;
  if (!value->is_number()) {
    ++invalid_;
    report("invalid reply", in, cat(": \"", text.substr(0, 80), "\" (expected {\"reward\": number})"));
    return false;
  }
  const double v = value->get<double>();  // JSON numbers beyond double (1e999) parse as inf
  if (!std::isfinite(v) || std::fabs(v) > kMaxRewardMagnitude) {
    ++invalid_;
    report("reward out of range", in,
           cat(": \"", text.substr(0, 80), "\" (expected a finite number in [-", kMaxRewardMagnitude, ", ",
               kMaxRewardMagnitude, "])"));
    return false;
  }
  if (j.is_object() && j.contains("extra") && j["extra"].is_object())
    for (const auto& [key, x] : j["extra"].items())
      if (x.is_number() || x.is_boolean()) add_extra(key, index, batch_size, x.is_boolean() ? x.get<bool>() : x.get<double>());
  *score = static_cast<float>(v);
  return true;
}

float ExternalReward::call(Worker& w, const RewardInput& in, size_t index, size_t batch_size, bool* failed) {
  ++calls_;
  *failed = true;  // until a valid reply arrives
  const std::string line = request_of(in).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  const auto reply = exchange(w, line, in);
  if (!reply) return 0.0f;
  const auto j = nlohmann::json::parse(*reply, nullptr, /*allow_exceptions=*/false);
  float score = 0.0f;
  *failed = !read_reply(j, *reply, in, index, batch_size, &score);
  return score;
}

int64_t ExternalReward::call_batch(Worker& w, std::span<const RewardInput> batch, size_t begin, size_t end,
                                   std::span<float> out) {
  calls_ += static_cast<int64_t>(end - begin);
  nlohmann::json items = nlohmann::json::array();
  for (size_t i = begin; i < end; ++i) items.push_back(request_of(batch[i]));
  const std::string line =
      nlohmann::json{{"batch", items}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  const int64_t n = static_cast<int64_t>(end - begin);
  const auto reply = exchange(w, line, batch[begin]);
  if (!reply) return n;
  const auto j = nlohmann::json::parse(*reply, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("error")) {
    float ignored;
    read_reply(j, *reply, batch[begin], begin, batch.size(), &ignored);
    return n;
  }
  if (!(j.is_object() && j.contains("rewards") && j["rewards"].is_array() &&
        j["rewards"].size() == static_cast<size_t>(n))) {
    ++invalid_;
    report("invalid reply", batch[begin],
           cat(": \"", reply->substr(0, 80), "\" (expected {\"rewards\": [", n, " numbers]})"));
    return n;
  }
  int64_t failures = 0;
  for (size_t i = begin; i < end; ++i) {
    nlohmann::json one = {{"reward", j["rewards"][i - begin]}};
    if (j.contains("extras") && j["extras"].is_array() && j["extras"].size() == static_cast<size_t>(n))
      one["extra"] = j["extras"][i - begin];
    float score = 0.0f;
    failures += !read_reply(one, *reply, batch[i], i, batch.size(), &score);
    out[i] = score;
  }
  return failures;
}

int64_t ExternalReward::score(std::span<const RewardInput> batch, std::span<float> out) {
  extras_.clear();
  std::fill(out.begin(), out.end(), 0.0f);
  const size_t n = std::min(workers_.size(), batch.size());
  std::atomic<int64_t> failures{0};
  std::function<void(size_t)> run;
  std::atomic<size_t> next{0};
  if (protocol_ == Protocol::PythonBatch) {  // worker t takes one contiguous share
    run = [&](size_t t) {
      const size_t begin = batch.size() * t / n, end = batch.size() * (t + 1) / n;
      if (begin < end) failures += call_batch(workers_[t], batch, begin, end, out);
    };
  } else {
    run = [&](size_t t) {
      for (size_t i; (i = next++) < batch.size();) {
        bool failed = false;
        out[i] = call(workers_[t], batch[i], i, batch.size(), &failed);
        failures += failed;
      }
    };
  }
  std::vector<std::thread> threads;
  for (size_t t = 1; t < n; ++t) threads.emplace_back(run, t);
  if (n > 0) run(0);
  for (auto& t : threads) t.join();
  return failures.load();
}

std::optional<std::string> ExternalReward::request(size_t index, const std::string& line, const std::string& what,
                                                   Io* io) {
  GRPO_CHECK(index < workers_.size(), "[reward] external: worker ", index, " of ", workers_.size());
  ++calls_;
  RewardInput in;
  in.id = what;
  return exchange(workers_[index], line, in, io);
}

std::string ExternalReward::last_failure() const {
  std::lock_guard<std::mutex> lock(last_failure_mutex_);
  return last_failure_;
}

ExternalReward::Stats ExternalReward::stats() const {
  return Stats{calls_.load(), crashes_.load(), timeouts_.load(), invalid_.load()};
}

}  // namespace grpo
