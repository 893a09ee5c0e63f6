// Google Benchmark of the decoder-layer kernels at the `small` model's shapes (C=512, H=8, K=4, D=64,
// F=1536) on a packed batch of T=4096 tokens (8 sequences of 512). Memory-bound kernels report GB/s (bytes
// read + written once); attention reports GFLOP/s of the causal half (2 GEMMs forward, 5 backward), with
// the automatic SIMD path (Arg 0) and forced AVX2 (Arg 1).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/rng.h"
#include "kernels/backend.h"
#include "kernels/ops.h"

#include "bench_util.h"

namespace {

using grpo::bench::normal_floats;
using grpo::bench::set_rate;
using grpo::bench::IsaChoice;

constexpr int64_t kT = 4096, kSeqs = 8, kC = 512, kH = 8, kK = 4, kD = 64, kF = 1536, kV = 384;

void BM_AddInplace(benchmark::State& state) {
  auto y = normal_floats(kT * kC, 1), x = normal_floats(kT * kC, 2);
  for (auto _ : state) {
    grpo::ops::add_inplace(y.data(), x.data(), kT * kC);
    benchmark::ClobberMemory();
  }
  set_rate(state, "GB/s", 3.0 * kT * kC * 4);
}

void BM_EmbeddingForward(benchmark::State& state) {
  const auto table = normal_floats(kV * kC, 3);
  std::vector<int32_t> ids(kT);
  for (int64_t t = 0; t < kT; ++t) ids[t] = static_cast<int32_t>(t * 131 % kV);
  std::vector<float> out(kT * kC);
  for (auto _ : state) {
    grpo::ops::embedding_forward(out.data(), ids.data(), table.data(), kT, kC);
    benchmark::ClobberMemory();
  }
  set_rate(state, "GB/s", 2.0 * kT * kC * 4);
}

void BM_EmbeddingBackward(benchmark::State& state) {
  const auto dout = normal_floats(kT * kC, 4);
  std::vector<int32_t> ids(kT);
  for (int64_t t = 0; t < kT; ++t) ids[t] = static_cast<int32_t>(t * 131 % kV);
  std::vector<float> dtable(kV * kC, 0.0f);
  for (auto _ : state) {
    grpo::ops::embedding_backward(dtable.data(), dout.data(), ids.data(), kT, kC);
    benchmark::ClobberMemory();
  }
  set_rate(state, "GB/s", 3.0 * kT * kC * 4);  // read dout and the table row, write the row
}

// state.range(0): 0 = hidden norm (N = T, C = 512), 1 = per-head q norm (N = T*H, C = D).
void BM_RmsnormForward(benchmark::State& state) {
  const int64_t N = state.range(0) ? kT * kH : kT, C = state.range(0) ? kD : kC;
  const auto x = normal_floats(N * C, 5), w = normal_floats(C, 6);
  std::vector<float> y(N * C), rstd(N);
  for (auto _ : state) {
    grpo::ops::rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C, 1e-6f);
    benchmark::ClobberMemory();
  }
  set_rate(state, "GB/s", 2.0 * N * C * 4);
}

void BM_RmsnormBackward(benchmark::State& state) {
  const int64_t N = state.range(0) ? kT * kH : kT, C = state.range(0) ? kD : kC;
  const auto x = normal_floats(N * C, 7), w = normal_floats(C, 8), dy = normal_floats(N * C, 9);
  std::vector<float> y(N * C), rstd(N), dx(N * C), dw(C, 0.0f);
  std::vector<float> ws(grpo::ops::rmsnorm_backward_ws_floats(N, C));
  grpo::ops::rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C, 1e-6f);
  for (auto _ : state) {
    grpo::ops::rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), rstd.data(), N, C, ws.data());
    benchmark::ClobberMemory();
  }
  set_rate(state, "GB/s", 3.0 * N * C * 4);
}

void BM_RopeForward(benchmark::State& state) {
  const int64_t P = 512, half = kD / 2;
  auto x = normal_floats(kT * kH * kD, 10);
  std::vector<float> cos(P * half), sin(P * half);
  for (int64_t p = 0; p < P; ++p)
    for (int64_t i = 0; i < half; ++i) {
      cos[p * half + i] = std::cos(p * std::pow(1e6f, -static_cast<float>(i) / half));
      sin[p * half + i] = std::sin(p * std::pow(1e6f, -static_cast<float>(i) / half));
    }
  std::vector<int32_t> pos(kT);
  for (int64_t t = 0; t < kT; ++t) pos[t] = static_cast<int32_t>(t % P);
  for (auto _ : state) {
    grpo::ops::rope_forward(x.data(), pos.data(), cos.data(), sin.data(), kT, kH, kD);
    benchmark::ClobberMemory();
  }
  set_rate(state, "GB/s", 2.0 * kT * kH * kD * 4);
}

void BM_SwigluForward(benchmark::State& state) {
  const auto gu = normal_floats(kT * 2 * kF, 11);
  std::vector<float> out(kT * kF);
  for (auto _ : state) {
    grpo::ops::swiglu_forward(out.data(), gu.data(), kT, kF);
    benchmark::ClobberMemory();
  }
  set_rate(state, "GB/s", 3.0 * kT * kF * 4);
}

void BM_SwigluBackward(benchmark::State& state) {
  const auto gu = normal_floats(kT * 2 * kF, 12), dout = normal_floats(kT * kF, 13);
  std::vector<float> dgu(kT * 2 * kF);
  for (auto _ : state) {
    grpo::ops::swiglu_backward(dgu.data(), dout.data(), gu.data(), kT, kF);
    benchmark::ClobberMemory();
  }
  set_rate(state, "GB/s", 5.0 * kT * kF * 4);
}

struct AttentionData {
  std::vector<float> q = normal_floats(kT * kH * kD, 14), k = normal_floats(kT * kK * kD, 15),
                     v = normal_floats(kT * kK * kD, 16), dout = normal_floats(kT * kH * kD, 17);
  std::vector<float> o = std::vector<float>(kT * kH * kD), lse = std::vector<float>(kT * kH);
  std::vector<float> dq = std::vector<float>(kT * kH * kD), dk = std::vector<float>(kT * kK * kD),
                     dv = std::vector<float>(kT * kK * kD);
  std::vector<float> ws = std::vector<float>(grpo::ops::attention_ws_floats(kT, kH, kK, kD));
  std::vector<int32_t> cu;
  float scale = 1.0f / std::sqrt(static_cast<float>(kD));
  AttentionData() {
    for (int64_t s = 0; s <= kSeqs; ++s) cu.push_back(static_cast<int32_t>(s * kT / kSeqs));
  }
  void forward() {
    grpo::ops::attention_forward(o.data(), lse.data(), q.data(), k.data(), v.data(), cu.data(), kSeqs, kT, kH, kK,
                                 kD, scale, ws.data());
  }
  void backward() {
    grpo::ops::attention_backward(dq.data(), dk.data(), dv.data(), dout.data(), q.data(), k.data(), v.data(),
                                  o.data(), lse.data(), cu.data(), kSeqs, kT, kH, kK, kD, scale, ws.data());
  }
  // FLOPs of one causal GEMM pair (QK^T and PV) over the lower triangle incl. the diagonal.
  static double causal_gemm_pair_flops() {
    const double L = static_cast<double>(kT / kSeqs);
    return kSeqs * kH * 2.0 * kD * L * (L + 1.0);
  }
};

void BM_AttentionForward(benchmark::State& state) {
  IsaChoice isa(state);
  AttentionData a;
  for (auto _ : state) {
    a.forward();
    benchmark::ClobberMemory();
  }
  set_rate(state, "GFLOP/s", AttentionData::causal_gemm_pair_flops());
}

void BM_AttentionBackward(benchmark::State& state) {
  IsaChoice isa(state);
  AttentionData a;
  a.forward();
  for (auto _ : state) {
    a.backward();
    benchmark::ClobberMemory();
  }
  set_rate(state, "GFLOP/s", 2.5 * AttentionData::causal_gemm_pair_flops());  // 5 GEMMs: S, dP, dV, dK, dQ
}

BENCHMARK(BM_AddInplace)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_EmbeddingForward)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_EmbeddingBackward)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_RmsnormForward)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_RmsnormBackward)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_RopeForward)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_SwigluForward)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_SwigluBackward)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_AttentionForward)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_AttentionBackward)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
