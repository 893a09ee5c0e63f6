// `grpo generate`'s settings checked before the model is loaded (see options.h).
#include "generate/options.h"

#include <cmath>
#include <limits>

#include "core/error.h"

namespace grpo::generate {

using rollout::SamplingParams;

ops::KvDType kv_dtype_of(const std::string& s) {
  if (s == "f32") return ops::KvDType::F32;
  if (s == "bf16") return ops::KvDType::BF16;
  if (s == "int8") return ops::KvDType::I8;
  fail("[generate] --kv-dtype: expected f32, bf16 or int8, got \"", s, "\"");
}

float to_float(double v) {
  if (std::fabs(v) > std::numeric_limits<float>::max()) return std::copysign(std::numeric_limits<float>::infinity(), v);
  return static_cast<float>(v);
}

void check_stops(const std::vector<std::string>& stops, const std::string& what) {
  for (const std::string& s : stops) GRPO_CHECK(!s.empty(), what, ": a stop string must not be empty");
}

rollout::Request request_defaults(const GenerateOptions& a) {
  rollout::Request r;
  GRPO_CHECK(a.n >= 1, "[generate] --n must be >= 1, got ", a.n);
  GRPO_CHECK(a.max_new_tokens >= 1, "[generate] --max-new-tokens must be >= 1, got ", a.max_new_tokens);
  GRPO_CHECK(a.seed >= 0, "[generate] --seed must be >= 0, got ", a.seed);
  check_stops(a.stop, "[generate] --stop");
  r.n = a.n;
  r.max_new_tokens = a.max_new_tokens;
  r.seed = static_cast<uint64_t>(a.seed);
  r.stop_strings = a.stop;
  set_sampling(r.sampling, &SamplingParams::temperature, to_float(a.temperature), "--temperature");
  set_sampling(r.sampling, &SamplingParams::top_p, to_float(a.top_p), "--top-p");
  set_sampling(r.sampling, &SamplingParams::top_k, a.top_k, "--top-k");
  set_sampling(r.sampling, &SamplingParams::min_p, to_float(a.min_p), "--min-p");
  return r;
}

void check_engine_options(const GenerateOptions& a) {
  kv_dtype_of(a.kv_dtype);
  GRPO_CHECK(a.kv_bytes >= 0, "[generate] --kv-cache-memory must be >= 0, got ", a.kv_bytes);
  GRPO_CHECK(std::isfinite(a.kv_fraction) && a.kv_fraction > 0 && a.kv_fraction <= 1,
             "[generate] --kv-cache-fraction must be in (0, 1], got ", a.kv_fraction);
  GRPO_CHECK(a.threads >= 0, "[generate] --threads must be >= 0 (0: all cores), got ", a.threads);
}

}  // namespace grpo::generate
