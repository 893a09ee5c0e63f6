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
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.h"

namespace grpo {

namespace {

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return ms > 0 ? static_cast<int>(ms) : 0;
}

enum class Io { Ok, Closed, Timeout };

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

constexpr int64_t kMaxReports = 20;  // problems logged one by one; later ones are only counted

}  // namespace

ExternalReward::ExternalReward(std::string command, int64_t workers, double timeout_s)
    : command_(std::move(command)), timeout_s_(timeout_s) {
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
  {
    std::lock_guard<std::mutex> lock(last_failure_mutex_);
    last_failure_ = cat("command \"", command_, "\": ", what, " on request \"", in.id, "\"", detail);
  }
  const int64_t n = reports_++;
  if (n < kMaxReports)
    std::fprintf(stderr, "[reward] external \"%s\": %s on request \"%s\"%s; scored 0\n", command_.c_str(), what,
                 in.id.c_str(), detail.c_str());
  if (n == kMaxReports)
    std::fprintf(stderr, "[reward] external \"%s\": further problems are only counted\n", command_.c_str());
}

float ExternalReward::call(Worker& w, const RewardInput& in, bool* failed) {
  ++calls_;
  *failed = true;  // until a valid reply arrives
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_s_));
  try {
    if (w.pid < 0) start(w);
  } catch (const Error& e) {
    ++crashes_;
    report("cannot start a worker", in, cat(" (", e.what(), ")"));
    return 0.0f;
  }
  auto broken = [&](Io io, const char* when) {
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
    return 0.0f;
  };

  nlohmann::json request = {{"id", in.id}, {"prompt", in.prompt}, {"response", in.response}, {"answer", in.answer}};
  if (!in.data_source.empty()) request["data_source"] = in.data_source;
  if (!in.extra_info.is_null()) request["extra_info"] = in.extra_info;
  const std::string line = request.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  w.buffer.clear();  // anything unread belongs to earlier requests
  for (size_t sent = 0; sent < line.size();) {
    const Io io = wait_for(w.fd, POLLOUT, deadline);
    if (io != Io::Ok) return broken(io, "while sending");
    const ssize_t n = ::send(w.fd, line.data() + sent, line.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return broken(Io::Closed, "while sending");
    sent += static_cast<size_t>(n);
  }
  size_t newline;
  while ((newline = w.buffer.find('\n')) == std::string::npos) {
    const Io io = wait_for(w.fd, POLLIN, deadline);
    if (io != Io::Ok) return broken(io, "while waiting for the reply");
    char chunk[4096];
    const ssize_t n = ::recv(w.fd, chunk, sizeof chunk, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return broken(Io::Closed, "while waiting for the reply");
    w.buffer.append(chunk, static_cast<size_t>(n));
  }
  const std::string reply = w.buffer.substr(0, newline);
  w.buffer.erase(0, newline + 1);
  const auto j = nlohmann::json::parse(reply, nullptr, /*allow_exceptions=*/false);
  const nlohmann::json* value = j.is_object() && j.contains("reward") ? &j["reward"] : &j;
  if (!value->is_number()) {
    ++invalid_;
    report("invalid reply", in, cat(": \"", reply.substr(0, 80), "\" (expected {\"reward\": number})"));
    return 0.0f;
  }
  const double v = value->get<double>();  // JSON numbers beyond double (1e999) parse as inf
  if (!std::isfinite(v) || std::fabs(v) > kMaxRewardMagnitude) {
    ++invalid_;
    report("reward out of range", in,
           cat(": \"", reply.substr(0, 80), "\" (expected a finite number in [-", kMaxRewardMagnitude, ", ",
               kMaxRewardMagnitude, "])"));
    return 0.0f;
  }
  *failed = false;
  return static_cast<float>(v);
}

int64_t ExternalReward::score(std::span<const RewardInput> batch, std::span<float> out) {
  std::atomic<size_t> next{0};
  std::atomic<int64_t> failures{0};
  auto run = [&](Worker& w) {
    for (size_t i; (i = next++) < batch.size();) {
      bool failed = false;
      out[i] = call(w, batch[i], &failed);
      failures += failed;
    }
  };
  const size_t n = std::min(workers_.size(), batch.size());
  std::vector<std::thread> threads;
  for (size_t t = 1; t < n; ++t) threads.emplace_back(run, std::ref(workers_[t]));
  if (n > 0) run(workers_[0]);
  for (auto& t : threads) t.join();
  return failures.load();
}

std::string ExternalReward::last_failure() const {
  std::lock_guard<std::mutex> lock(last_failure_mutex_);
  return last_failure_;
}

ExternalReward::Stats ExternalReward::stats() const {
  return Stats{calls_.load(), crashes_.load(), timeouts_.load(), invalid_.load()};
}

}  // namespace grpo
