// Helpers shared by the Google Benchmark files: random inputs (uniform or normal), a rate counter, and the
// ISA cap that lets one benchmark run the automatic SIMD path and the AVX2 one side by side.
#pragma once
#include <benchmark/benchmark.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "core/rng.h"
#include "kernels/backend.h"

namespace grpo::bench {

// n values uniform in [-scale, scale), from the keyed generator `seed`.
inline std::vector<float> uniform_floats(int64_t n, uint64_t seed, float scale = 1.0f) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = scale * (2.0f * rng.uniform_f() - 1.0f);
  return v;
}

// n standard normal values from the keyed generator `seed`.
inline std::vector<float> normal_floats(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(rng.normal());
  return v;
}

// Counter `name` = per_iteration x 1e-9 per second (GB/s of bytes, GFLOP/s of FLOPs).
inline void set_rate(benchmark::State& state, const char* name, double per_iteration) {
  state.counters[name] = benchmark::Counter(per_iteration * static_cast<double>(state.iterations()) * 1e-9,
                                            benchmark::Counter::kIsRate);
}

// Caps the ISA at AVX2 for the benchmark's lifetime when state.range(0) == 1.
struct IsaChoice {
  explicit IsaChoice(const benchmark::State& state) {
    if (state.range(0) == 1) set_isa_for_tests(Isa::Avx2);
  }
  ~IsaChoice() { set_isa_for_tests(std::nullopt); }
  IsaChoice(const IsaChoice&) = delete;
  IsaChoice& operator=(const IsaChoice&) = delete;
};

}  // namespace grpo::bench
