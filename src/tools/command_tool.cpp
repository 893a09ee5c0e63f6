// External command tools (see command_tool.h): fork + exec with pipes on stdin / stdout / stderr, driven
// by poll() until the command exits, the deadline passes or the output cap is reached.
#include "tools/command_tool.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/error.h"

namespace grpo::tools {

namespace {

using CommandClock = std::chrono::steady_clock;

constexpr size_t kStderrKept = 4096;  // the end of stderr kept for error texts

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// The last non-empty line of a tool's stderr, for an error text.
std::string last_line(const std::string& err) {
  size_t end = err.find_last_not_of("\n\r ");
  if (end == std::string::npos) return "";
  const size_t begin = err.rfind('\n', end);
  return err.substr(begin == std::string::npos ? 0 : begin + 1, end + 1 - (begin == std::string::npos ? 0 : begin + 1));
}

class CommandTool : public Tool {
 public:
  CommandTool(std::string name, std::string command) : name_(std::move(name)), command_(std::move(command)) {}

  ToolResult run(const nlohmann::json& arguments, const ToolLimits& limits) override {
    // stdin is a socket pair, so that writing to a command that stopped reading fails with EPIPE
    // (MSG_NOSIGNAL) instead of raising SIGPIPE in this process.
    int in[2], out[2], err[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0) return start_failure();
    if (::pipe2(out, O_CLOEXEC) != 0) {
      ::close(in[0]), ::close(in[1]);
      return start_failure();
    }
    if (::pipe2(err, O_CLOEXEC) != 0) {
      ::close(in[0]), ::close(in[1]), ::close(out[0]), ::close(out[1]);
      return start_failure();
    }
    const char* cmd = command_.c_str();
    const pid_t pid = ::fork();
    if (pid == 0) {  // child: only async-signal-safe calls until exec
      ::setpgid(0, 0);
      ::dup2(in[1], 0);
      ::dup2(out[1], 1);
      ::dup2(err[1], 2);
      ::execl("/bin/sh", "sh", "-c", cmd, static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(in[1]);
    ::close(out[1]);
    ::close(err[1]);
    int to_child = in[0], from_child = out[0], errors = err[0];
    if (pid < 0) {
      close_fd(to_child), close_fd(from_child), close_fd(errors);
      return start_failure();
    }
    ::setpgid(pid, pid);  // also here, so that the group exists before any kill
    for (int fd : {to_child, from_child, errors}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);

    const std::string input = arguments.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    size_t sent = 0;
    std::string output, error_text;
    const auto deadline =
        CommandClock::now() + std::chrono::duration_cast<CommandClock::duration>(std::chrono::duration<double>(limits.timeout_s));
    ToolFailure cut = ToolFailure::None;
    while (from_child >= 0 || errors >= 0) {
      pollfd fds[3];
      int n = 0;
      if (to_child >= 0) fds[n++] = {to_child, POLLOUT, 0};
      if (from_child >= 0) fds[n++] = {from_child, POLLIN, 0};
      if (errors >= 0) fds[n++] = {errors, POLLIN, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - CommandClock::now()).count();
      if (left <= 0) {
        cut = ToolFailure::Timeout;
        break;
      }
      const int rc = ::poll(fds, static_cast<nfds_t>(n), static_cast<int>(left));
      if (rc < 0 && errno == EINTR) continue;
      if (rc < 0) break;
      for (int i = 0; i < n; ++i) {
        if (fds[i].revents == 0) continue;
        if (fds[i].fd == to_child) {
          const ssize_t w = ::send(to_child, input.data() + sent, input.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
          if (w > 0) sent += static_cast<size_t>(w);
          if (w < 0 && errno != EAGAIN && errno != EINTR) close_fd(to_child);  // it stopped reading: fine
          if (sent == input.size()) close_fd(to_child);
          continue;
        }
        char chunk[4096];
        const ssize_t r = ::read(fds[i].fd, chunk, sizeof chunk);
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (r <= 0) {
          close_fd(fds[i].fd == from_child ? from_child : errors);
          continue;
        }
        if (fds[i].fd == from_child) {
          output.append(chunk, static_cast<size_t>(r));
          if (static_cast<int64_t>(output.size()) > limits.max_output_bytes) cut = ToolFailure::OutputTooLong;
        } else {
          error_text.append(chunk, static_cast<size_t>(r));
          if (error_text.size() > 2 * kStderrKept) error_text.erase(0, error_text.size() - kStderrKept);
        }
      }
      if (cut != ToolFailure::None) break;
    }
    close_fd(to_child), close_fd(from_child), close_fd(errors);
    // Its output is closed: wait for the command itself to exit (left un-reaped, so that its pid, and so its
    // group's id, cannot be taken by another process before the kill below).
    while (cut == ToolFailure::None) {
      siginfo_t info{};
      if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 && errno != EINTR) break;
      if (info.si_pid == pid) break;
      if (CommandClock::now() >= deadline) cut = ToolFailure::Timeout;
      else ::usleep(1000);
    }
    // The whole group goes, whatever happened: a command cut off, and anything a finished one left behind.
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (cut == ToolFailure::Timeout)
      return tool_error(ToolFailure::Timeout, cat(name_, " timed out after ", limits.timeout_s, " s"));
    if (cut == ToolFailure::OutputTooLong)
      return tool_error(ToolFailure::OutputTooLong,
                        cat(name_, " wrote more than ", limits.max_output_bytes, " bytes of output"));
    return finished(status, std::move(output), error_text);
  }

 private:
  ToolResult start_failure() {
    return tool_error(ToolFailure::Crashed, cat(name_, " could not be started: ", std::strerror(errno)));
  }

  ToolResult finished(int status, std::string output, const std::string& error_text) {
    const std::string why = last_line(error_text);
    const std::string said = why.empty() ? "" : ": " + why;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return ToolResult{std::move(output), ToolFailure::None, 0.0};
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
      return tool_error(ToolFailure::Crashed, cat(name_, ": command not found (exit status 127)", said));
    if (WIFEXITED(status))
      return tool_error(ToolFailure::Crashed, cat(name_, " exited with status ", WEXITSTATUS(status), said));
    return tool_error(ToolFailure::Crashed,
                      cat(name_, " was killed by signal ", WIFSIGNALED(status) ? WTERMSIG(status) : 0, said));
  }

  std::string name_;
  std::string command_;
};

}  // namespace

std::shared_ptr<Tool> make_command_tool(std::string name, std::string command) {
  GRPO_CHECK(!command.empty(), "[tools] ", name, ": the command is empty");
  return std::make_shared<CommandTool>(std::move(name), std::move(command));
}

}  // namespace grpo::tools
