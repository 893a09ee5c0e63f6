// The HTTP server of `grpo serve` (see server.h).
#include "serve/server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <random>

#include "core/error.h"
#include "serve/api_error.h"
#include "serve/chat_page.h"
#include "serve/openai_response.h"
#include "serve/pictures.h"
#include "serve/stream.h"

namespace grpo::serve {

namespace {
using namespace std::chrono_literals;
constexpr auto kPollInterval = 100ms;  // how often a waiting response checks that its client is still there

void reply_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(error_body(e), "application/json");
}

const char* status_message(int status) {
  switch (status) {
    case 404:
      return "no such route";
    case 405:
      return "method not allowed";
    case 413:
      return "the request body is over the server's limit (--max-body-bytes)";
    default:
      return "bad request";
  }
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace

bool keys_equal(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() != b.size();
  for (size_t i = 0; i < b.size(); ++i) diff |= static_cast<unsigned char>((i < a.size() ? a[i] : 0) ^ b[i]);
  return diff == 0;
}

Server::Server(const ServerOptions& options, const generate::LoadedModel& model, rollout::Engine& engine)
    : options_(options),
      model_(model),
      kv_blocks_(engine.kv_cache().num_blocks()),
      block_size_(engine.kv_cache().block_size()),
      created_(unix_now()) {
  GRPO_CHECK(options.max_queue >= 1, "[serve] --max-queue must be >= 1, got ", options.max_queue);
  GRPO_CHECK(options.max_body_bytes >= 1024, "[serve] --max-body-bytes must be >= 1024, got ", options.max_body_bytes);
  GRPO_CHECK(options.max_n >= 1, "[serve] --max-n must be >= 1, got ", options.max_n);
  GRPO_CHECK(options.drain_seconds >= 0, "[serve] --drain-seconds must be >= 0, got ", options.drain_seconds);
  if (model.images) pictures_ = std::make_unique<DataUrlPictures>(*model.images, model.image_pad);
  info_ = ModelInfo{.name = options.model_name,
                    .tok = model.tokenizer(),
                    .vocab = model.model->vocab_size(),
                    .context = model.model->max_positions(),
                    .stop_ids = model.stop_ids,
                    .pictures = pictures_.get(),
                    .max_n = options.max_n};
  queue_ = std::make_unique<EngineQueue>(engine, options.max_queue);
  http_ = std::make_unique<httplib::Server>();
  // One thread per connection that waits on the engine: the queue's bound plus a few for /health and /metrics.
  const size_t threads = static_cast<size_t>(options.max_queue) + 8;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http_->set_payload_max_length(static_cast<size_t>(options.max_body_bytes));
  // httplib's own options set SO_REUSEPORT, which would let a second server bind the same port and share its
  // connections; ours only lets a restarted server reuse a port in TIME_WAIT. The socket is kept: bind()
  // enlarges its backlog.
  http_->set_socket_options([this](int sock) {
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listen_socket_ = sock;
  });
  handle_auth_and_errors();
  add_routes();
}

Server::~Server() = default;

void Server::handle_auth_and_errors() {
  http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    ++http_requests_;
    if (options_.api_key.empty() || (req.method == "GET" && req.path == "/"))
      return httplib::Server::HandlerResponse::Unhandled;
    if (keys_equal(req.get_header_value("Authorization"), "Bearer " + options_.api_key))
      return httplib::Server::HandlerResponse::Unhandled;
    reply_error(res, ApiError(401, "", "Incorrect or missing API key: send \"Authorization: Bearer KEY\"",
                              "invalid_request_error", "invalid_api_key"));
    return httplib::Server::HandlerResponse::Handled;
  });
  http_->set_error_handler(
      httplib::Server::HandlerWithResponse([this](const httplib::Request&, httplib::Response& res) {
        ++http_errors_;
        if (res.body.empty()) reply_error(res, ApiError(res.status, "", status_message(res.status)));
        return httplib::Server::HandlerResponse::Handled;
      }));
  http_->set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    reply_error(res, ApiError(500, "", what, "server_error"));
  });
}

void Server::check_kv_fit(const ParsedRequest& p, const std::string& body) const {
  for (const rollout::Request& r : p.requests) {
    const int64_t tokens = static_cast<int64_t>(r.prompt.size()) + r.max_new_tokens;
    const int64_t need = (tokens + block_size_ - 1) / block_size_;
    if (need <= kv_blocks_) continue;
    const char* key =
        body.find("\"max_completion_tokens\"") != std::string::npos ? "max_completion_tokens" : "max_tokens";
    throw ApiError(400, key,
                   "the prompt's " + std::to_string(r.prompt.size()) + " tokens + " + key + " " +
                       std::to_string(r.max_new_tokens) + " need " + std::to_string(need) + " KV blocks of " +
                       std::to_string(block_size_) + " tokens; the server's cache has " + std::to_string(kv_blocks_) +
                       " (lower " + key + ", or start the server with more --kv-cache-memory)");
  }
}

void Server::add_routes() {
  http_->Get("/", [](const httplib::Request&, httplib::Response& res) { res.set_content(kChatPage, "text/html"); });
  http_->Get("/health", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"ok"})", "application/json");
  });
  http_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(queue_->metrics_text(http_requests_.load(), http_errors_.load()), "text/plain; version=0.0.4");
  });
  http_->Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(model_list(options_.model_name, created_).dump(), "application/json");
  });
  add_completion_route("/v1/chat/completions", Endpoint::Chat);
  add_completion_route("/v1/completions", Endpoint::Completions);
}

void Server::add_completion_route(const char* path, Endpoint endpoint) {
  http_->Post(path, [this, endpoint](const httplib::Request& req, httplib::Response& res) {
    auto parsed = std::make_shared<ParsedRequest>();
    const uint64_t seed = std::random_device{}() | (static_cast<uint64_t>(std::random_device{}()) << 32);
    try {
      *parsed = endpoint == Endpoint::Chat ? parse_chat_request(req.body, info_, seed)
                                           : parse_completion_request(req.body, info_, seed);
      check_kv_fit(*parsed, req.body);
    } catch (const ApiError& e) {
      reply_error(res, e);
      return;
    }
    auto job = std::make_shared<Job>();
    job->requests = parsed->requests;
    job->stream = parsed->stream;
    response_opened();  // (before the job is admitted: a shutdown that sees it queued waits for its reply too)
    const Submit submitted = queue_->submit(job);
    if (submitted != Submit::Queued) {
      response_released();
      const bool full = submitted == Submit::QueueFull;
      if (full) res.set_header("Retry-After", "1");
      reply_error(res, full ? ApiError(429, "", "the server's queue is full (--max-queue); retry later",
                                       "rate_limit_error", "rate_limit_exceeded")
                            : ApiError(503, "", "the server is shutting down", "server_error"));
      return;
    }
    const ResponseHead head{(endpoint == Endpoint::Chat ? "chatcmpl-" : "cmpl-") + std::to_string(++next_id_) + "-" +
                                std::to_string(seed % 100000),
                            unix_now(), options_.model_name, model_.tokenizer()};
    auto stream = parsed->stream ? std::make_shared<ResponseStream>(*parsed, head) : nullptr;
    auto started = std::make_shared<bool>(false);
    // Runs on this connection's thread until the job is done; httplib checks before each call that the client
    // is still there, and a false return (or a client gone) ends the response: the releaser cancels the job.
    auto provider = [this, parsed, job, stream, started, head](size_t, httplib::DataSink& sink) {
      std::string out = stream && !*started ? stream->start() : "";
      *started = true;
      std::deque<TokenEvent> events;
      bool finished;
      {
        std::unique_lock<std::mutex> lock(job->mu);
        job->cv.wait_for(lock, kPollInterval, [&] { return !job->events.empty() || job->finished(); });
        events.swap(job->events);
        finished = job->finished();
      }
      for (const TokenEvent& e : events) out += stream->on_tokens(e);
      if (finished) {
        if (!job->error.empty())
          out += stream ? "data: " + error_body(ApiError(400, "", job->error)) + "\n\n" + kStreamDone
                        : error_body(ApiError(400, "", job->error));
        else if (stream)
          out += stream->finish(job->results);
        else
          out += (parsed->endpoint == Endpoint::Chat ? chat_response(head, *parsed, job->results)
                                                     : completion_response(head, *parsed, job->results))
                     .dump();
      }
      if (!out.empty() && !sink.write(out.data(), out.size())) return false;
      if (finished) sink.done();
      return true;
    };
    auto releaser = [this, job](bool) {
      bool finished;
      {
        std::lock_guard<std::mutex> lock(job->mu);
        finished = job->finished();
      }
      if (!finished) queue_->cancel(job);  // the client went away: its sequences leave the engine
      response_released();
    };
    res.set_chunked_content_provider(stream ? "text/event-stream" : "application/json", provider, releaser);
  });
}

int Server::bind() {
  const int port = options_.port == 0 ? http_->bind_to_any_port(options_.host)
                                      : (http_->bind_to_port(options_.host, options_.port) ? options_.port : -1);
  GRPO_CHECK(port > 0, "[serve] cannot listen on ", options_.host, ":", options_.port,
             " (address in use, or not an address of this machine)");
  // The library listens with a backlog of 5: more clients connecting at once overflow the accept queue and
  // some see their connection dropped. listen() again on the listening socket sets the system's maximum.
  GRPO_CHECK(::listen(listen_socket_, SOMAXCONN) == 0, "[serve] cannot set the listen backlog of ", options_.host, ":",
             port);
  return port;
}

void Server::run() { http_->listen_after_bind(); }

void Server::response_opened() {
  std::lock_guard<std::mutex> lock(responses_mu_);
  ++open_responses_;
}

void Server::response_released() {
  std::lock_guard<std::mutex> lock(responses_mu_);
  --open_responses_;
  responses_cv_.notify_all();
}

bool Server::wait_responses_released(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(responses_mu_);
  return responses_cv_.wait_until(lock, deadline, [&] { return open_responses_ == 0; });
}

void Server::shutdown() {
  queue_->stop();
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(options_.drain_seconds * 1000));
  // Done when the engine has finished every job and every connection has written its reply out.
  if (!queue_->wait_empty(deadline) || !wait_responses_released(deadline)) {
    std::fprintf(stderr, "[serve] requests still running after %.0f s: cancelled\n", options_.drain_seconds);
    queue_->cancel_all();
    queue_->wait_empty(std::chrono::steady_clock::now() + 5s);
    wait_responses_released(std::chrono::steady_clock::now() + 5s);
  }
  http_->stop();
}

}  // namespace grpo::serve
