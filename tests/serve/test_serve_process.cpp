// The `grpo serve` binary: it prints the port it listens on; SIGTERM lets a streaming request in flight
// finish (its stream ends with [DONE]) and the process exits 0; the chat page in headless Chromium (Debian's
// chromium, driven by scripts/check_chat_page.py; the test is skipped when it is not installed) takes a typed
// message, shows the reply as it streams in and the tokens/s.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "serve_fixture.h"

extern char** environ;

namespace grpo::serve {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// `grpo serve` on the tiny model, stderr to a file; the port it printed.
class ServeProcess {
 public:
  explicit ServeProcess(const std::string& log) : log_(log) {
    const std::string cmd = std::string("exec ") + GRPO_BINARY + " serve --model " + test::tiny_model() +
                            " --port 0 --kv-cache-memory 67108864 --drain-seconds 120 2>" + log;
    const char* argv[] = {"/bin/sh", "-c", cmd.c_str(), nullptr};
    if (posix_spawn(&pid_, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ) != 0) pid_ = -1;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (pid_ > 0 && port_ == 0 && std::chrono::steady_clock::now() < deadline) {
      const std::string text = read_text(log);
      const size_t at = text.find("listening on http://127.0.0.1:");
      if (at != std::string::npos) port_ = std::stoi(text.substr(at + 30));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~ServeProcess() {
    if (pid_ > 0 && !waited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  int port() const { return port_; }
  // SIGTERM, then the exit status (-1: killed or still running after `timeout`).
  int terminate(std::chrono::seconds timeout) {
    kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        waited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }
  std::string log() const { return read_text(log_); }

 private:
  std::string log_;
  pid_t pid_ = -1;
  int port_ = 0;
  bool waited_ = false;
};

TEST(ServeProcess, SigtermFinishesTheStreamInFlightAndExitsZero) {
  const grpo::test::TempDir d;
  ServeProcess p(d.path() + "/serve.log");
  ASSERT_GT(p.port(), 0) << p.log();
  const nlohmann::json body = {{"prompt", "go"}, {"max_tokens", 200}, {"stream", true}, {"ignore_eos", true}};
  std::atomic<size_t> received{0};
  auto reply = std::async(std::launch::async, [&] {
    httplib::Client c("127.0.0.1", p.port());
    c.set_read_timeout(60);
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = body.dump();
    req.set_header("Content-Type", "application/json");
    std::string out;
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      out.append(data, n);
      received = out.size();
      return true;
    };
    httplib::Response res;
    httplib::Error err;
    c.send(req, res, err);
    return out;
  });
  while (received == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(p.terminate(std::chrono::seconds(150)), 0) << p.log();
  const std::vector<std::string> events = test::sse_events(reply.get());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back(), "[DONE]");
  const nlohmann::json last = nlohmann::json::parse(events[events.size() - 2]);
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");  // ran to its end, not cut by the shutdown
  EXPECT_NE(p.log().find("SIGTERM"), std::string::npos);
}

TEST(ServeProcess, ChatPageStreamsAReplyInHeadlessChromium) {
  if (!std::filesystem::exists("/usr/bin/chromium"))
    GTEST_SKIP() << "chromium is not installed (apt-get install chromium)";
  const grpo::test::TempDir d;
  ServeProcess p(d.path() + "/serve.log");
  ASSERT_GT(p.port(), 0) << p.log();
  // scripts/check_chat_page.py types the message, clicks Send and watches the reply until the page marks it done.
  const std::string cmd =
      "python3 " GRPO_SOURCE_DIR "/scripts/check_chat_page.py http://127.0.0.1:" + std::to_string(p.port()) +
      "/ 'hello there' 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int status = pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  const nlohmann::json j = nlohmann::json::parse(out);
  EXPECT_TRUE(j["done"].get<bool>()) << out;
  EXPECT_NE(j["stats"].get<std::string>().find("tokens/s: "), std::string::npos) << out;
  EXPECT_GT(j["states"].get<int>(), 1) << out;  // the reply was seen in parts, as it streamed
  EXPECT_EQ(p.terminate(std::chrono::seconds(30)), 0);
}

}  // namespace
}  // namespace grpo::serve
