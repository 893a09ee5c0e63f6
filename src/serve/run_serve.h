// `grpo serve` as a function: loads the model (with its adapter), sizes the KV cache, binds the address,
// prints "[serve] listening on http://HOST:PORT" and serves until SIGTERM or SIGINT, which finish the
// requests in flight (at most the drain time) before it returns.
#pragma once
#include <cstdint>
#include <string>

#include "serve/server.h"

namespace grpo::serve {

struct ServeOptions {
  std::string model, adapter, dtype = "bf16", kv_dtype = "bf16";
  double kv_fraction = 0.3;
  int64_t kv_bytes = 0;
  int threads = 0;
  int64_t max_seqs = 64;  // sequences per engine step
  ServerOptions server;
};

// The API key: --api-key, else the GRPO_API_KEY environment variable (empty: none).
std::string api_key_of(const std::string& option);

void run_serve(ServeOptions options);

}  // namespace grpo::serve
