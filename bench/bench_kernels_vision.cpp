// Google Benchmark of the vision-tower kernels (kernels/vision_ops.h) at Qwen3-VL-8B's tower shapes: one
// 512x512 picture = 1024 patch rows of hidden 1152 (16 heads of 72, ffn 4304, merged rows of 4608).
// Memory-bound kernels report GB/s (bytes read + written once); the non-causal attention reports GFLOP/s of
// its two GEMMs (forward) and five (backward), with the automatic SIMD path (Arg 0) and forced AVX2 (Arg 1).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/rng.h"
#include "kernels/backend.h"
#include "kernels/ops.h"
#include "kernels/vision_ops.h"

#include "bench_util.h"

namespace {

using grpo::bench::normal_floats;
using grpo::bench::set_rate;
using grpo::bench::IsaChoice;

constexpr int64_t kN = 1024, kD = 1152, kH = 16, kHd = 72, kF = 4304, kM = 4608, kSide = 48;

// state.range(1): 0 = the blocks' LayerNorm (N x 1152), 1 = a DeepStack merger's (N/4 x 4608).
void BM_LayernormForward(benchmark::State& state) {
  IsaChoice isa(state);
  const int64_t N = state.range(1) ? kN / 4 : kN, C = state.range(1) ? kM : kD;
  const auto x = normal_floats(N * C, 1), w = normal_floats(C, 2), b = normal_floats(C, 3);
  std::vector<float> y(N * C), mean(N), rstd(N);
  for (auto _ : state) {
    grpo::ops::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C, 1e-6f);
    benchmark::ClobberMemory();
  }
  set_rate(state, "GB/s", 2.0 * N * C * 4);
}

void BM_LayernormBackward(benchmark::State& state) {
  IsaChoice isa(state);
  const int64_t N = state.range(1) ? kN / 4 : kN, C = state.range(1) ? kM : kD;
  const auto x = normal_floats(N * C, 4), w = normal_floats(C, 5), b = normal_floats(C, 6), dy = normal_floats(N * C, 7);
  std::vector<float> y(N * C), mean(N), rstd(N), dx(N * C), dw(C), db(C), ws(grpo::ops::layernorm_backward_ws_floats(N, C));
  grpo::ops::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C, 1e-6f);
  for (auto _ : state) {
    grpo::ops::layernorm_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), mean.data(),
                                  rstd.data(), N, C, ws.data());
    benchmark::ClobberMemory();
  }
  set_rate(state, "GB/s", 3.0 * N * C * 4);
}

// state.range(1): 0 = tanh form on the blocks' fc1 output (N x 4304), 1 = erf form on a merger's (N/4 x 4608).
void BM_BiasGeluForward(benchmark::State& state) {
  IsaChoice isa(state);
  const bool erf = state.range(1) == 1;
  const int64_t N = erf ? kN / 4 : kN, F = erf ? kM : kF;
  const auto x0 = normal_floats(N * F, 8), b = normal_floats(F, 9);
  std::vector<float> x = x0, y(N * F);
  for (auto _ : state) {
    grpo::ops::bias_gelu_forward(y.data(), x.data(), b.data(), N, F, erf ? grpo::ops::Gelu::Erf : grpo::ops::Gelu::Tanh);
    benchmark::ClobberMemory();
  }
  set_rate(state, "GB/s", 3.0 * N * F * 4);
}

void BM_GeluBackward(benchmark::State& state) {
  IsaChoice isa(state);
  const bool erf = state.range(1) == 1;
  const int64_t N = erf ? kN / 4 : kN, F = erf ? kM : kF;
  const auto x = normal_floats(N * F, 10), dy = normal_floats(N * F, 11);
  std::vector<float> dx(N * F), db(F, 0.0f);
  for (auto _ : state) {
    grpo::ops::gelu_backward(dx.data(), db.data(), dy.data(), x.data(), N, F, erf ? grpo::ops::Gelu::Erf : grpo::ops::Gelu::Tanh);
    benchmark::ClobberMemory();
  }
  set_rate(state, "GB/s", 3.0 * N * F * 4);
}

void BM_BiasGrad(benchmark::State& state) {
  IsaChoice isa(state);
  const auto dy = normal_floats(kN * 3 * kD, 12);
  std::vector<float> db(3 * kD, 0.0f);
  for (auto _ : state) {
    grpo::ops::bias_grad(db.data(), dy.data(), kN, 3 * kD);
    benchmark::ClobberMemory();
  }
  set_rate(state, "GB/s", 1.0 * kN * 3 * kD * 4);
}

void BM_RopeRowsForward(benchmark::State& state) {
  IsaChoice isa(state);
  auto q = normal_floats(kN * kD, 13);
  const auto cos = normal_floats(kN * kHd / 2, 14), sin = normal_floats(kN * kHd / 2, 15);
  for (auto _ : state) {
    grpo::ops::rope_rows_forward(q.data(), cos.data(), sin.data(), kN, kH, kHd);
    benchmark::ClobberMemory();
  }
  set_rate(state, "GB/s", (2.0 * kN * kD + 2.0 * kN * kHd) * 4);
}

struct SegmentAttention {
  std::vector<float> q = normal_floats(kN * kD, 16), k = normal_floats(kN * kD, 17), v = normal_floats(kN * kD, 18),
                     dout = normal_floats(kN * kD, 19);
  std::vector<float> o = std::vector<float>(kN * kD), lse = std::vector<float>(kN * kH), dq = o, dk = o, dv = o;
  std::vector<float> ws = std::vector<float>(grpo::ops::attention_ws_floats(kN, kH, kH, kHd));
  std::vector<int32_t> cu{0, static_cast<int32_t>(kN)};
  float scale = 1.0f / std::sqrt(static_cast<float>(kHd));
  void forward() {
    grpo::ops::bidirectional_attention_forward(o.data(), lse.data(), q.data(), k.data(), v.data(), cu.data(), 1, kN, kH,
                                               kH, kHd, scale, ws.data());
  }
  void backward() {
    grpo::ops::bidirectional_attention_backward(dq.data(), dk.data(), dv.data(), dout.data(), q.data(), k.data(),
                                                v.data(), o.data(), lse.data(), cu.data(), 1, kN, kH, kH, kHd, scale,
                                                ws.data());
  }
  static double gemm_pair_flops() { return kH * 2.0 * 2.0 * kHd * kN * kN; }  // QK^T and PV over all pairs
};

void BM_VisionAttentionForward(benchmark::State& state) {
  IsaChoice isa(state);
  SegmentAttention a;
  for (auto _ : state) {
    a.forward();
    benchmark::ClobberMemory();
  }
  set_rate(state, "GFLOP/s", SegmentAttention::gemm_pair_flops());
}

void BM_VisionAttentionBackward(benchmark::State& state) {
  IsaChoice isa(state);
  SegmentAttention a;
  a.forward();
  for (auto _ : state) {
    a.backward();
    benchmark::ClobberMemory();
  }
  set_rate(state, "GFLOP/s", 2.5 * SegmentAttention::gemm_pair_flops());  // five GEMMs
}

struct Bilinear {
  std::vector<float> table = normal_floats(kSide * kSide * kD, 20), out = std::vector<float>(kN * kD),
                     dout = normal_floats(kN * kD, 21), dtable = std::vector<float>(kSide * kSide * kD);
  std::vector<int32_t> idx = std::vector<int32_t>(4 * kN);
  std::vector<float> w = std::vector<float>(4 * kN, 0.25f);
  Bilinear() {
    for (int64_t i = 0; i < 4 * kN; ++i) idx[i] = static_cast<int32_t>((i * 37) % (kSide * kSide));
  }
};

void BM_BilinearEmbedForward(benchmark::State& state) {
  IsaChoice isa(state);
  Bilinear b;
  for (auto _ : state) {
    grpo::ops::bilinear_embed_forward(b.out.data(), b.idx.data(), b.w.data(), b.table.data(), kN, kSide * kSide, kD);
    benchmark::ClobberMemory();
  }
  set_rate(state, "GB/s", 5.0 * kN * kD * 4);
}

void BM_BilinearEmbedBackward(benchmark::State& state) {
  IsaChoice isa(state);
  Bilinear b;
  for (auto _ : state) {
    grpo::ops::bilinear_embed_backward(b.dtable.data(), b.dout.data(), b.idx.data(), b.w.data(), kN, kSide * kSide, kD);
    benchmark::ClobberMemory();
  }
  set_rate(state, "GB/s", 9.0 * kN * kD * 4);
}

}  // namespace

BENCHMARK(BM_LayernormForward)->ArgsProduct({{0, 1}, {0, 1}})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_LayernormBackward)->ArgsProduct({{0, 1}, {0, 1}})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_BiasGeluForward)->ArgsProduct({{0, 1}, {0, 1}})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_GeluBackward)->ArgsProduct({{0, 1}, {0, 1}})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_BiasGrad)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_RopeRowsForward)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_VisionAttentionForward)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_VisionAttentionBackward)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_BilinearEmbedForward)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_BilinearEmbedBackward)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
