// Google Benchmark of the LoRA linear (model/linear.h) at the `small` model's MLP shape (T=4096 tokens,
// in 512, out 1536, rank 16): forward (x A^T, then s u B^T added to the output) and backward (dB, du, dA,
// dx), in GFLOP/s of the adapter's matmuls, next to the base linear's bf16 forward for scale; and the
// add_low_rank kernel alone in GB/s (the output rows read and written once), and add_low_rank_t (B as stored)
// at a decode step's shape.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "kernels/ops.h"
#include "model/linear.h"

#include "bench_util.h"

namespace {

using grpo::bench::normal_floats;
using grpo::bench::set_rate;

constexpr int64_t kT = 4096, kIn = 512, kOut = 1536, kRank = 16;

void BM_LoraForward(benchmark::State& state) {
  const auto x = normal_floats(kT * kIn, 1), A = normal_floats(kRank * kIn, 2), B = normal_floats(kOut * kRank, 3);
  std::vector<float> y(kT * kOut), u(kT * kRank);
  for (auto _ : state) {
    grpo::lora_linear_forward(y.data(), kOut, x.data(), A.data(), B.data(), u.data(), kT, kOut, kIn, kRank, 0.5f);
    benchmark::ClobberMemory();
  }
  set_rate(state, "GFLOP/s", 2.0 * kT * kRank * (kIn + kOut));
}

void BM_LoraBackward(benchmark::State& state) {
  const auto x = normal_floats(kT * kIn, 1), A = normal_floats(kRank * kIn, 2), B = normal_floats(kOut * kRank, 3),
             dy = normal_floats(kT * kOut, 4), u = normal_floats(kT * kRank, 5);
  std::vector<float> dx(kT * kIn), dA(kRank * kIn), dB(kOut * kRank), du(kT * kRank);
  for (auto _ : state) {
    grpo::lora_linear_backward(dx.data(), dA.data(), dB.data(), dy.data(), kOut, x.data(), A.data(), B.data(),
                               u.data(), du.data(), kT, kOut, kIn, kRank, 0.5f);
    benchmark::ClobberMemory();
  }
  set_rate(state, "GFLOP/s", 4.0 * kT * kRank * (kIn + kOut));
}

// The frozen base's bf16 forward of the same linear, for scale (what the adapter adds to).
void BM_BaseLinearForwardBf16(benchmark::State& state) {
  const auto x = normal_floats(kT * kIn, 1), w = normal_floats(kOut * kIn, 2);
  std::vector<grpo::bf16_t> w16(kOut * kIn), x16(kT * kIn);
  grpo::ops::f32_to_bf16(w16.data(), w.data(), kOut * kIn);
  std::vector<float> y(kT * kOut);
  for (auto _ : state) {
    grpo::linear_forward(grpo::ComputeMode::BF16, y.data(), x.data(), x16.data(), nullptr, w16.data(), kT, kOut, kIn);
    benchmark::ClobberMemory();
  }
  set_rate(state, "GFLOP/s", 2.0 * kT * kIn * kOut);
}

void BM_AddLowRank(benchmark::State& state) {
  const auto u = normal_floats(kT * kRank, 1), V = normal_floats(kRank * kOut, 2);
  std::vector<float> y(kT * kOut);
  for (auto _ : state) {
    grpo::ops::add_low_rank(y.data(), kOut, u.data(), kRank, V.data(), kOut, kT, kOut, kRank, 0.5f);
    benchmark::ClobberMemory();
  }
  set_rate(state, "GB/s", 2.0 * kT * kOut * 4);
}

// B as stored ([N, r]), rank 32, at decode steps' shapes (Args: T rows, N outputs): 16 rows through a
// gate/up projection of qwen3-1.7b (N = 12288), and 128 rows (GRPO's 16 x 8) through one of `small` (1536).
// B is read once per call; the rows read and written once.
void BM_AddLowRankTransposedDecode(benchmark::State& state) {
  const int64_t T = state.range(0), N = state.range(1), r = 32;
  const auto u = normal_floats(T * r, 1), W = normal_floats(N * r, 2);
  std::vector<float> y(T * N);
  for (auto _ : state) {
    grpo::ops::add_low_rank_t(y.data(), N, u.data(), r, W.data(), r, T, N, r, 0.5f);
    benchmark::ClobberMemory();
  }
  set_rate(state, "GB/s", (2.0 * T * N + N * r) * 4);
  set_rate(state, "GFLOP/s", 2.0 * T * N * r);
}

BENCHMARK(BM_AddLowRank)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_AddLowRankTransposedDecode)
    ->ArgNames({"T", "N"})
    ->Args({16, 12288})
    ->Args({128, 1536})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_LoraForward)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LoraBackward)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_BaseLinearForwardBf16)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
