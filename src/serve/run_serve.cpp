// `grpo serve`'s start-up and signal handling (see run_serve.h).
#include "serve/run_serve.h"

#include <pthread.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "core/error.h"
#include "core/threads.h"
#include "generate/options.h"
#include "rollout/tokenizer_text.h"

namespace grpo::serve {

namespace {
bool is_loopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// SIGTERM and SIGINT blocked in this thread and every thread started after (the engine's, OpenMP's, the
// HTTP pool's), so that only the thread waiting in sigwait receives them.
sigset_t block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}
}  // namespace

std::string api_key_of(const std::string& option) {
  if (!option.empty()) return option;
  const char* env = std::getenv("GRPO_API_KEY");
  return env ? env : "";
}

void run_serve(ServeOptions o) {
  const sigset_t stop_signals = block_stop_signals();
  GRPO_CHECK(o.server.port >= 0 && o.server.port <= 65535, "[serve] --port must be in [0, 65535], got ", o.server.port);
  GRPO_CHECK(o.max_seqs >= 1, "[serve] --max-seqs must be >= 1, got ", o.max_seqs);
  generate::GenerateOptions engine_options;
  engine_options.kv_dtype = o.kv_dtype;
  engine_options.kv_bytes = o.kv_bytes;
  engine_options.kv_fraction = o.kv_fraction;
  engine_options.threads = o.threads;
  generate::check_engine_options(engine_options);
  if (o.threads > 0) set_num_threads(o.threads);
  o.server.api_key = api_key_of(o.server.api_key);
  if (o.server.model_name.empty()) o.server.model_name = std::filesystem::path(o.model).lexically_normal().filename();
  if (o.server.model_name.empty()) o.server.model_name = std::filesystem::path(o.model).parent_path().filename();
  if (!is_loopback(o.server.host) && o.server.api_key.empty())
    std::fprintf(stderr,
                 "[serve] warning: listening on %s without an API key: anyone who reaches this address can use "
                 "the model (give --api-key or GRPO_API_KEY)\n",
                 o.server.host.c_str());

  rollout::EngineConfig ec;
  ec.kv_dtype = generate::kv_dtype_of(o.kv_dtype);
  ec.kv_memory_bytes = o.kv_bytes;
  ec.kv_memory_fraction = o.kv_fraction;
  ec.max_seqs = o.max_seqs;
  const generate::LoadedModel m = generate::load_model(o.model, o.adapter, o.dtype, ec.block_size, "");
  rollout::Engine engine(*m.model, ec, m.tok ? rollout::tokenizer_decode_fn(*m.tok) : rollout::DecodeFn{});
  std::fprintf(stderr, "[serve] %s\n", engine.kv_budget().describe().c_str());
  Server server(o.server, m, engine);
  const int port = server.bind();
  std::fprintf(stderr, "[serve] model \"%s\" listening on http://%s:%d%s\n", o.server.model_name.c_str(),
               o.server.host.c_str(), port, o.server.api_key.empty() ? "" : " (API key required)");
  std::atomic<bool> stopping{false};
  std::thread signals([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    stopping = true;
    std::fprintf(stderr, "[serve] %s: finishing the requests in flight (at most %.0f s)\n",
                 sig == SIGTERM ? "SIGTERM" : "SIGINT", o.server.drain_seconds);
    server.shutdown();
  });
  server.run();
  if (!stopping) pthread_kill(signals.native_handle(), SIGTERM);  // the server ended on its own
  signals.join();
  std::fprintf(stderr, "[serve] stopped\n");
}

}  // namespace grpo::serve
