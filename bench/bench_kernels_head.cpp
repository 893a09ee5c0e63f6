// Google Benchmark of the head kernels: GEMM (f32 and bf16, square, prefill-like and training-like shapes
// with transposes; bf16 is native or emulated as the ISA decision says, and the label tells which), batched
// f32 GEMM (attention scores), the fused output layer forward/backward, AdamW and f32 <-> bf16 conversion.
// Counters: GFLOP/s for GEMM and lm_head (2 M N K per GEMM), GB/s of memory traffic for AdamW / conversion.
#include <benchmark/benchmark.h>

#include <vector>

#include "core/dtype.h"
#include "core/rng.h"
#include "kernels/backend.h"
#include "kernels/ops.h"

#include "bench_util.h"

namespace {

using grpo::bench::uniform_floats;

using grpo::DType;
using grpo::bf16_t;
using grpo::ops::Trans;

std::vector<bf16_t> to_bf16(const std::vector<float>& v) {
  std::vector<bf16_t> out(v.size());
  grpo::ops::f32_to_bf16(out.data(), v.data(), static_cast<int64_t>(v.size()));
  return out;
}

// Args: M, N, K, ta, tb, dtype (0 f32, 1 bf16). A and B are stored as op() requires, tightly packed.
void BM_gemm(benchmark::State& state) {
  const int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  const Trans ta = state.range(3) ? Trans::T : Trans::N, tb = state.range(4) ? Trans::T : Trans::N;
  const DType dt = state.range(5) ? DType::BF16 : DType::F32;
  const int64_t lda = ta == Trans::N ? K : M, ldb = tb == Trans::N ? N : K;
  auto a = uniform_floats(M * K, 1), b = uniform_floats(K * N, 2);
  auto a16 = to_bf16(a), b16 = to_bf16(b);
  std::vector<float> c(static_cast<size_t>(M * N));
  const void* A = dt == DType::BF16 ? static_cast<const void*>(a16.data()) : a.data();
  const void* B = dt == DType::BF16 ? static_cast<const void*>(b16.data()) : b.data();
  for (auto _ : state) {
    grpo::ops::gemm(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, c.data(), N, dt);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * M * N * K * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  const bool emulated = dt == DType::BF16 && !grpo::gemm_bf16_native();
  state.SetLabel(std::string(grpo::dtype_name(dt)) + (emulated ? " emulated" : "") + (ta == Trans::T ? " T" : " N") +
                 (tb == Trans::T ? "T" : "N") + " " + grpo::isa_name(grpo::isa()));
}

void gemm_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"M", "N", "K", "ta", "tb", "bf16"});
  for (int bf16 : {0, 1}) {
    b->Args({2048, 2048, 2048, 0, 0, bf16});
    b->Args({512, 3072, 1024, 0, 0, bf16});
    b->Args({512, 3072, 1024, 0, 1, bf16});     // x W^T: forward of a linear layer
    b->Args({4096, 1536, 512, 0, 1, bf16});     // forward, training micro-batch
    b->Args({4096, 512, 1536, 0, 0, bf16});     // dx = dy W (backward data)
    b->Args({1536, 512, 4096, 1, 0, bf16});     // dW = dy^T x (backward weights)
    b->Args({4096, 512, 1536, 0, 1, bf16});
  }
}
BENCHMARK(BM_gemm)->Apply(gemm_args)->Unit(benchmark::kMillisecond)->UseRealTime();

// Batched f32 GEMM of attention scores, one call for all heads: S [H, L, L] = Q K^T with Q, K [H, L, D].
// Args: H, L, D.
void BM_gemm_batched(benchmark::State& state) {
  const int64_t H = state.range(0), L = state.range(1), D = state.range(2);
  auto q = uniform_floats(H * L * D, 1), k = uniform_floats(H * L * D, 2);
  std::vector<float> s(static_cast<size_t>(H * L * L));
  for (auto _ : state) {
    grpo::ops::gemm_batched(Trans::N, Trans::T, H, L, L, D, 1.0f, q.data(), D, L * D, k.data(), D, L * D, 0.0f,
                            s.data(), L, L * L);
    benchmark::DoNotOptimize(s.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * H * L * L * D * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_gemm_batched)
    ->ArgNames({"H", "L", "D"})
    ->Args({8, 512, 64})
    ->Args({16, 1024, 128})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Args: T, C, V, chunk, dtype (0 f32, 1 bf16), backward (0 forward only, 1 backward only).
void BM_lm_head(benchmark::State& state) {
  const int64_t T = state.range(0), C = state.range(1), V = state.range(2), chunk = state.range(3);
  const DType dt = state.range(4) ? DType::BF16 : DType::F32;
  const bool backward = state.range(5) != 0;
  auto h = uniform_floats(T * C, 3), W = uniform_floats(V * C, 4, 0.05f);
  auto h16 = to_bf16(h), W16 = to_bf16(W);
  const void* hp = dt == DType::BF16 ? static_cast<const void*>(h16.data()) : h.data();
  const void* Wp = dt == DType::BF16 ? static_cast<const void*>(W16.data()) : W.data();
  std::vector<int32_t> target(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) target[t] = static_cast<int32_t>((t * 7919) % V);
  std::vector<float> logprob(T), entropy(T), lse(T), dlogprob(T, 1.0f / T), dentropy(T, 0.01f / T);
  std::vector<float> ws(static_cast<size_t>(grpo::ops::lm_head_ws_floats(chunk, V, C)));
  std::vector<float> dh(backward ? T * C : 0), dW(backward ? V * C : 0);
  grpo::ops::lm_head_forward(logprob.data(), entropy.data(), lse.data(), hp, Wp, dt, target.data(), T, C, V, 1.0f,
                             chunk, ws.data());
  for (auto _ : state) {
    if (backward)
      grpo::ops::lm_head_backward(dh.data(), dW.data(), dlogprob.data(), dentropy.data(), hp, Wp, dt, target.data(),
                                  lse.data(), entropy.data(), T, C, V, 1.0f, chunk, ws.data());
    else
      grpo::ops::lm_head_forward(logprob.data(), entropy.data(), lse.data(), hp, Wp, dt, target.data(), T, C, V,
                                 1.0f, chunk, ws.data());
    benchmark::ClobberMemory();
  }
  const double gemm_flops = (backward ? 6.0 : 2.0) * T * C * V;  // backward recomputes the logits: 3 GEMMs
  state.counters["GFLOP/s"] = benchmark::Counter(gemm_flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(T), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["ws_MiB"] = static_cast<double>(ws.size()) * 4 / (1 << 20);
  state.SetLabel(std::string(grpo::dtype_name(dt)) + (backward ? " backward" : " forward"));
}

void lm_head_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"T", "C", "V", "chunk", "bf16", "bwd"});
  for (int bwd : {0, 1})
    for (int bf16 : {0, 1}) {
      b->Args({4096, 512, 384, 512, bf16, bwd});      // the 25M-parameter model of performance-facts.md
      b->Args({256, 512, 151936, 64, bf16, bwd});     // a Qwen-sized vocabulary, 56 MiB workspace
      b->Args({256, 512, 151936, 256, bf16, bwd});    // the decoder's default chunk: fewer passes over dW
      b->Args({2048, 1024, 151936, 256, bf16, bwd});  // qwen3-0.6b's output layer, a training micro-batch
    }
}
BENCHMARK(BM_lm_head)->Apply(lm_head_args)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_adamw(benchmark::State& state) {
  const int64_t n = state.range(0);
  auto p = uniform_floats(n, 5), g = uniform_floats(n, 6);
  std::vector<float> m(static_cast<size_t>(n), 0.0f), v(static_cast<size_t>(n), 0.0f);
  int64_t step = 0;
  for (auto _ : state) {
    grpo::ops::adamw_step(p.data(), g.data(), m.data(), v.data(), n, 1e-4f, 0.9f, 0.999f, 1e-8f, 0.01f, ++step,
                          1.0f);
    benchmark::ClobberMemory();
  }
  // reads p, g, m, v and writes p, m, v: 7 floats per element
  state.counters["GB/s"] = benchmark::Counter(7.0 * 4 * n * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_adamw)->Arg(25 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_sum_squares(benchmark::State& state) {
  const int64_t n = state.range(0);
  auto x = uniform_floats(n, 7);
  for (auto _ : state) benchmark::DoNotOptimize(grpo::ops::sum_squares(x.data(), n));
  state.counters["GB/s"] = benchmark::Counter(4.0 * n * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_sum_squares)->Arg(25 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_f32_to_bf16(benchmark::State& state) {
  const int64_t n = state.range(0);
  auto x = uniform_floats(n, 8);
  std::vector<bf16_t> y(static_cast<size_t>(n));
  for (auto _ : state) {
    grpo::ops::f32_to_bf16(y.data(), x.data(), n);
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] = benchmark::Counter(6.0 * n * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_f32_to_bf16)->Arg(1 << 16)->Arg(25 << 20)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_bf16_to_f32(benchmark::State& state) {
  const int64_t n = state.range(0);
  const auto x = to_bf16(uniform_floats(n, 9));
  std::vector<float> y(static_cast<size_t>(n));
  for (auto _ : state) {
    grpo::ops::bf16_to_f32(y.data(), x.data(), n);
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] = benchmark::Counter(6.0 * n * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_bf16_to_f32)->Arg(1 << 16)->Arg(25 << 20)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
