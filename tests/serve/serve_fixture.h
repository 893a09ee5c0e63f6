// Test helper of the serve suite: a `grpo init` tiny model (byte tokenizer, context 4096) made once with the
// built binary, a server over it run in this process on a free loopback port, and HTTP calls to it
// (whole responses, and streams read event by event, optionally dropped after a number of bytes).
#pragma once
#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "cli_run.h"
#include "generate/loaded_model.h"
#include "rollout/engine.h"
#include "rollout/tokenizer_text.h"
#include "serve/server.h"
#include "temp_dir.h"

namespace grpo::serve::test {

// The tiny model's folder, made on first use (kept for the process, removed when it exits).
inline const std::string& tiny_model() {
  static const grpo::test::TempDir dir;
  static const std::string path = [] {
    const std::string p = dir.path() + "/tiny";
    const grpo::test::CommandResult r = grpo::test::run_grpo("init --arch qwen3 --preset tiny --seed 3 --out " + p);
    if (r.status != 0) throw std::runtime_error("grpo init failed: " + r.output);
    return p;
  }();
  return path;
}

class TestServer {
 public:
  explicit TestServer(ServerOptions options = {}, int64_t kv_bytes = 64 << 20) {
    model_ = std::make_unique<generate::LoadedModel>(generate::load_model(tiny_model(), "", "f32", 16, ""));
    rollout::EngineConfig ec;
    ec.kv_memory_bytes = kv_bytes;
    engine_ = std::make_unique<rollout::Engine>(*model_->model, ec, rollout::tokenizer_decode_fn(*model_->tok));
    options.port = 0;
    if (options.model_name.empty()) options.model_name = "tiny";
    server_ = std::make_unique<Server>(options, *model_, *engine_);
    port_ = server_->bind();
    thread_ = std::thread([this] { server_->run(); });
  }
  ~TestServer() {
    server_->shutdown();
    thread_.join();
  }
  int port() const { return port_; }
  const generate::LoadedModel& model() const { return *model_; }
  rollout::Engine& engine() { return *engine_; }

  httplib::Result post(const std::string& path, const std::string& body, const httplib::Headers& headers = {}) const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(120);
    return c.Post(path.c_str(), headers, body, "application/json");
  }
  httplib::Result get(const std::string& path, const httplib::Headers& headers = {}) const {
    httplib::Client c("127.0.0.1", port_);
    return c.Get(path.c_str(), headers);
  }
  // A POST whose response body is read as it comes; the connection is dropped once `drop_after` bytes came
  // (0: read to the end). Returns what was read.
  std::string stream(const std::string& path, const std::string& body, size_t drop_after = 0) const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(120);
    httplib::Request req;
    req.method = "POST";
    req.path = path;
    req.body = body;
    req.set_header("Content-Type", "application/json");
    std::string out;
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      out.append(data, n);
      return drop_after == 0 || out.size() < drop_after;
    };
    httplib::Response res;
    httplib::Error err;
    c.send(req, res, err);
    return out;
  }
  // The value of a metric line "NAME VALUE" of GET /metrics.
  double metric(const std::string& name) const {
    const httplib::Result r = get("/metrics");
    const std::string& text = r->body;
    const size_t at = text.find("\n" + name + " ");
    return at == std::string::npos ? -1 : std::stod(text.substr(at + name.size() + 2));
  }

 private:
  std::unique_ptr<generate::LoadedModel> model_;
  std::unique_ptr<rollout::Engine> engine_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
  int port_ = 0;
};

// The request's results from an engine of its own on `model` (generate(), no server).
inline rollout::RequestResult direct_on(const std::string& model, const rollout::Request& r) {
  const generate::LoadedModel m = generate::load_model(model, "", "f32", 16, "");
  rollout::EngineConfig ec;
  ec.kv_memory_bytes = 64 << 20;
  rollout::Engine engine(*m.model, ec, rollout::tokenizer_decode_fn(*m.tok));
  return engine.generate({r})[0];
}
inline rollout::RequestResult direct(const rollout::Request& r) { return direct_on(tiny_model(), r); }

// The "data: ..." payloads of a server-sent event stream, in order ("[DONE]" included).
inline std::vector<std::string> sse_events(const std::string& body) {
  std::vector<std::string> out;
  size_t from = 0;
  for (size_t at = body.find("\n\n"); at != std::string::npos; from = at + 2, at = body.find("\n\n", from)) {
    const std::string event = body.substr(from, at - from);
    if (event.rfind("data: ", 0) == 0) out.push_back(event.substr(6));
  }
  return out;
}

}  // namespace grpo::serve::test
