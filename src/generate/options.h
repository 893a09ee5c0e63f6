// `grpo generate`'s settings (GenerateOptions) and what they give before any model is loaded: the request
// every prompt line starts from and the checks of the engine's options. Each error names the option.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/paged_ops.h"
#include "rollout/request.h"

namespace grpo::generate {

struct GenerateOptions {
  std::string model, adapter, prompts, out, kv_dtype = "bf16", dtype = "bf16";
  int n = 1, max_new_tokens = 256, top_k = 0, threads = 0;
  double temperature = 1.0, top_p = 1.0, min_p = 0.0, kv_fraction = 0.3;
  int64_t kv_bytes = 0, seed = 0;
  bool chat = false;
  std::vector<std::string> stop;
  bool tools = false;       // the built-in calculator
  std::string tool_config;  // verl's tool config YAML
  int max_assistant_turns = 0;
};

// "f32", "bf16" or "int8"; anything else is an error naming --kv-dtype.
ops::KvDType kv_dtype_of(const std::string& s);
// v as a float; beyond float's range it becomes +-inf (rejected as not finite) rather than undefined.
float to_float(double v);
// Stores one sampling value in p after checking it with the engine's rules (rollout::validate_sampling) on
// otherwise default (valid) parameters, so that an error is about this value alone and names `what`.
template <typename T>
void set_sampling(rollout::SamplingParams& p, T rollout::SamplingParams::*field, T value, const std::string& what) {
  rollout::SamplingParams one;
  one.*field = value;
  rollout::validate_sampling(one, what);
  p.*field = value;
}
// Every stop string non-empty, else an error naming `what`.
void check_stops(const std::vector<std::string>& stops, const std::string& what);
// The command line's settings as the request every line starts from. Throws naming the option.
rollout::Request request_defaults(const GenerateOptions& a);
// --kv-dtype, --kv-cache-memory, --kv-cache-fraction and --threads in range.
void check_engine_options(const GenerateOptions& a);

}  // namespace grpo::generate
