// Google Benchmark of the plain (eager-like) decoder kernels against the fused ones on the same data:
// each benchmark takes the kernel set as its first argument (0 = fused ops::, 1 = plain::) so the two
// rows of a shape sit next to each other. Shapes of the performance guide's model (hidden 512, 8 heads /
// 4 kv heads, head_dim 64, ffn 1536), 4 packed sequences of 512 tokens. Counter ws_MiB: the workspace the
// kernel needs (the plain attention's grows as len^2, the plain output layer's as T x V).
#include <benchmark/benchmark.h>

#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "core/rng.h"
#include "kernels/ops.h"
#include "kernels/plain_ops.h"

#include "bench_util.h"

namespace {

using grpo::bench::uniform_floats;

using grpo::DecoderKernels;
using grpo::DType;

constexpr int64_t kSeqs = 4, kSeqLen = 512, kT = kSeqs * kSeqLen;
constexpr int64_t kC = 512, kH = 8, kK = 4, kD = 64, kF = 1536;

const DecoderKernels& kernel_set(const benchmark::State& state) {
  return state.range(0) ? grpo::plain_kernels() : grpo::fused_kernels();
}

void label(benchmark::State& state, int64_t ws_floats) {
  state.SetLabel(kernel_set(state).name);
  state.counters["ws_MiB"] = static_cast<double>(ws_floats) * 4.0 / (1 << 20);
}

void BM_rmsnorm_fwd_bwd(benchmark::State& state) {
  const DecoderKernels& k = kernel_set(state);
  const auto x = uniform_floats(kT * kC, 1), w = uniform_floats(kC, 2), dy = uniform_floats(kT * kC, 3);
  std::vector<float> y(kT * kC), rstd(kT), dx(kT * kC), dw(kC), ws(k.rmsnorm_backward_ws_floats(kT, kC));
  for (auto _ : state) {
    k.rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), kT, kC, 1e-6f);
    k.rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), rstd.data(), kT, kC, ws.data());
    benchmark::DoNotOptimize(dx.data());
  }
  label(state, static_cast<int64_t>(ws.size()));
}

void BM_rope_fwd_bwd(benchmark::State& state) {
  const DecoderKernels& k = kernel_set(state);
  const int64_t half = kD / 2;
  std::vector<float> cos_t(kSeqLen * half), sin_t(kSeqLen * half);
  for (int64_t p = 0; p < kSeqLen; ++p)
    for (int64_t i = 0; i < half; ++i) {
      cos_t[p * half + i] = std::cos(p * std::pow(1e4f, -2.0f * i / kD));
      sin_t[p * half + i] = std::sin(p * std::pow(1e4f, -2.0f * i / kD));
    }
  std::vector<int32_t> pos(kT);
  for (int64_t t = 0; t < kT; ++t) pos[t] = static_cast<int32_t>(t % kSeqLen);
  auto x = uniform_floats(kT * kH * kD, 4);
  for (auto _ : state) {
    k.rope_forward(x.data(), pos.data(), cos_t.data(), sin_t.data(), kT, kH, kD);
    k.rope_backward(x.data(), pos.data(), cos_t.data(), sin_t.data(), kT, kH, kD);
    benchmark::DoNotOptimize(x.data());
  }
  label(state, 0);
}

void BM_swiglu_fwd_bwd(benchmark::State& state) {
  const DecoderKernels& k = kernel_set(state);
  const auto gu = uniform_floats(kT * 2 * kF, 5), dout = uniform_floats(kT * kF, 6);
  std::vector<float> out(kT * kF), dgu(kT * 2 * kF);
  for (auto _ : state) {
    k.swiglu_forward(out.data(), gu.data(), kT, kF);
    k.swiglu_backward(dgu.data(), dout.data(), gu.data(), kT, kF);
    benchmark::DoNotOptimize(dgu.data());
  }
  label(state, 0);
}

void BM_attention_fwd_bwd(benchmark::State& state) {
  const DecoderKernels& k = kernel_set(state);
  std::vector<int32_t> cu(kSeqs + 1);
  for (int64_t s = 0; s <= kSeqs; ++s) cu[s] = static_cast<int32_t>(s * kSeqLen);
  const auto q = uniform_floats(kT * kH * kD, 7), kk = uniform_floats(kT * kK * kD, 8),
             v = uniform_floats(kT * kK * kD, 9), dout = uniform_floats(kT * kH * kD, 10);
  std::vector<float> o(kT * kH * kD), lse(kT * kH), dq(kT * kH * kD), dk(kT * kK * kD), dv(kT * kK * kD);
  // The plain set needs sequences up to kSeqLen only: its workspace is sized for the longest sequence.
  const int64_t ws_floats = state.range(0) ? k.attention_ws_floats(kSeqLen, kH, kK, kD)
                                           : k.attention_ws_floats(kT, kH, kK, kD);
  std::vector<float> ws(ws_floats);
  const float scale = 1.0f / std::sqrt(static_cast<float>(kD));
  for (auto _ : state) {
    k.attention_forward(o.data(), lse.data(), q.data(), kk.data(), v.data(), cu.data(), kSeqs, kT, kH, kK, kD, scale,
                        ws.data());
    k.attention_backward(dq.data(), dk.data(), dv.data(), dout.data(), q.data(), kk.data(), v.data(), o.data(),
                         lse.data(), cu.data(), kSeqs, kT, kH, kK, kD, scale, ws.data());
    benchmark::DoNotOptimize(dq.data());
  }
  // 4 GEMMs of 2 L^2 D flops per head forward+backward are causal-useful only in half; count the full ones.
  state.counters["GFLOP/s"] = benchmark::Counter(kSeqs * kH * 5.0 * 2.0 * kSeqLen * kSeqLen * kD * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
  label(state, ws_floats);
}

// Args: set, V, bf16.
void BM_lm_head_fwd_bwd(benchmark::State& state) {
  const DecoderKernels& k = kernel_set(state);
  const int64_t V = state.range(1), chunk = 256;
  const DType dt = state.range(2) ? DType::BF16 : DType::F32;
  const auto h32 = uniform_floats(kT * kC, 11), W32 = uniform_floats(V * kC, 12), dlp = uniform_floats(kT, 13);
  std::vector<grpo::bf16_t> h16(h32.size()), W16(W32.size());
  grpo::ops::f32_to_bf16(h16.data(), h32.data(), kT * kC);
  grpo::ops::f32_to_bf16(W16.data(), W32.data(), V * kC);
  const void* h = dt == DType::BF16 ? static_cast<const void*>(h16.data()) : h32.data();
  const void* W = dt == DType::BF16 ? static_cast<const void*>(W16.data()) : W32.data();
  std::vector<int32_t> target(kT);
  for (int64_t t = 0; t < kT; ++t) target[t] = static_cast<int32_t>((t * 31) % V);
  std::vector<float> lp(kT), ent(kT), lse(kT), dh(kT * kC), dW(V * kC);
  const int64_t ws_floats = k.lm_head_ws_floats(k.full_logits ? kT : chunk, V, kC);
  std::vector<float> ws(ws_floats);
  for (auto _ : state) {
    k.lm_head_forward(lp.data(), ent.data(), lse.data(), h, W, dt, target.data(), kT, kC, V, 1.0f, chunk, ws.data());
    k.lm_head_backward(dh.data(), dW.data(), dlp.data(), dlp.data(), h, W, dt, target.data(), lse.data(), ent.data(),
                       kT, kC, V, 1.0f, chunk, ws.data());
    benchmark::DoNotOptimize(dh.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(4.0 * 2.0 * kT * V * kC * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  label(state, ws_floats);
}

BENCHMARK(BM_rmsnorm_fwd_bwd)->ArgName("plain")->DenseRange(0, 1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_rope_fwd_bwd)->ArgName("plain")->DenseRange(0, 1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_swiglu_fwd_bwd)->ArgName("plain")->DenseRange(0, 1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_attention_fwd_bwd)->ArgName("plain")->DenseRange(0, 1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_lm_head_fwd_bwd)
    ->ArgNames({"plain", "V", "bf16"})
    ->ArgsProduct({{0, 1}, {384, 32000}, {1}})
    ->Unit(benchmark::kMillisecond);

}  // namespace
