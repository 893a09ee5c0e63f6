// `grpo serve`: an OpenAI-compatible HTTP server (cpp-httplib, Debian's libcpp-httplib-dev) over one rollout
// engine. Routes: GET / (the chat page), GET /health, GET /metrics (Prometheus text), GET /v1/models,
// POST /v1/chat/completions, POST /v1/completions. With an API key every request but GET / needs
// "Authorization: Bearer KEY" (401 otherwise; keys compared in constant time). Bodies over max_body_bytes
// get 413, a full queue 429 with Retry-After, requests after shutdown began 503. A client that goes away
// cancels its engine requests. shutdown() stops taking requests, lets the admitted ones finish within the
// drain time, cancels the rest and makes run() return.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "generate/loaded_model.h"
#include "rollout/engine.h"
#include "serve/engine_queue.h"
#include "serve/openai_request.h"

namespace httplib {
class Server;
}

namespace grpo::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;  // 0: any free port (port() tells which)
  std::string api_key;
  std::string model_name;
  int64_t max_body_bytes = 16 << 20;
  int64_t max_queue = 64;  // engine requests queued or running
  int32_t max_n = 16;
  double drain_seconds = 30;
};

// `a` and `b` equal, in a time that depends only on b's length (b: the server's key).
bool keys_equal(const std::string& a, const std::string& b);

class Server {
 public:
  Server(const ServerOptions& options, const generate::LoadedModel& model, rollout::Engine& engine);
  ~Server();
  int bind();  // binds host:port; returns the port (throws when it cannot)
  void run();  // serves until shutdown()
  void shutdown();

 private:
  void add_routes();
  void add_completion_route(const char* path, Endpoint endpoint);
  void handle_auth_and_errors();
  // 400 naming the max-tokens field when a request's samples could never fit the KV cache.
  void check_kv_fit(const ParsedRequest& p, const std::string& body) const;
  // Responses admitted and not yet released by their connection (written out, or the client gone): the
  // engine finishing a job is not its client having read it.
  void response_opened();
  void response_released();
  bool wait_responses_released(std::chrono::steady_clock::time_point deadline);

  ServerOptions options_;
  const generate::LoadedModel& model_;
  std::unique_ptr<PictureReader> pictures_;
  ModelInfo info_;
  std::unique_ptr<EngineQueue> queue_;
  std::unique_ptr<httplib::Server> http_;
  int64_t kv_blocks_, block_size_;  // the engine's KV cache (fixed at its construction)
  std::atomic<int64_t> http_requests_{0}, http_errors_{0}, next_id_{0};
  int64_t created_;
  int listen_socket_ = -1;  // the socket bind() listens on
  std::mutex responses_mu_;
  std::condition_variable responses_cv_;
  int64_t open_responses_ = 0;
};

}  // namespace grpo::serve
