// How fast this core's AVX-512 BF16 dot products are next to its f32 fused multiply-adds, measured once
// for the instruction-set decision (kernels/backend.cpp): whether bf16 GEMMs run natively or emulated
// through the f32 GEMM depends on it. CPUs differ by 4x here: AMD Zen 4 / Zen 5 issue vdpbf16ps at the
// rate of vfmadd231ps (twice the flops), while an Intel Xeon (Sapphire Rapids class, AMX not exposed)
// measured here issues it at half that rate, so its native bf16 GEMM ran at 0.69x of the emulated one.
// Each measurement runs 12 independent accumulator chains (more than latency x ports on any of those CPUs)
// of one instruction; the fastest of several alternating trials counts, so a preempted trial does not.
#include "core/clock.h"
#include "kernels/cpu/bf16_dot_rate.h"

// GCC 12's AVX-512 headers trip -Wuninitialized on their own _mm512_undefined_*() (GCC bug 105593) in
// _mm512_reduce_add_ps; as in lane_sums.h, the warning is off here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <chrono>

namespace grpo::cpu {
namespace {

#define GRPO_AVX512_BF16 [[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")]]

constexpr int kChains = 12;
constexpr long kSteps = 8192;  // per trial: 12 x 8192 instructions, ~50-100 us
constexpr int kTrials = 7;

// The accumulators' sum, so that the compiler keeps every chain.
GRPO_AVX512_BF16 float sum_of(const __m512 (&acc)[kChains]) {
  __m512 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm512_add_ps(s, acc[i]);
  return _mm512_reduce_add_ps(s);
}

// The operands come through volatiles, so that nothing is folded at compile time; the chains stay in
// registers (12 of the 32).
volatile float g_one = 1.0f, g_small = 1e-4f;

GRPO_AVX512_BF16 double time_fma(float* sink) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(1.0f + 1e-3f * static_cast<float>(i));
  const __m512 a = _mm512_set1_ps(0.999f * g_one), b = _mm512_set1_ps(g_small);
  const auto t0 = std::chrono::steady_clock::now();
  for (long s = 0; s < kSteps; ++s) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  const double t = seconds_since(t0);
  *sink += sum_of(acc);
  return t;
}

GRPO_AVX512_BF16 double time_dot(float* sink) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(1e-3f * static_cast<float>(i));
  // pairs of bf16 (1, 1e-4): each step adds 2e-4 to every lane
  const __m512 one = _mm512_set1_ps(g_one), small = _mm512_set1_ps(g_small);
  const __m512bh a = _mm512_cvtne2ps_pbh(one, one), b = _mm512_cvtne2ps_pbh(small, small);
  const auto t0 = std::chrono::steady_clock::now();
  for (long s = 0; s < kSteps; ++s) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  }
  const double t = seconds_since(t0);
  *sink += sum_of(acc);
  return t;
}

}  // namespace

double bf16_dot_flops_vs_fma() {
  float sink = 0.0f;
  double fma = 1e30, dot = 1e30;
  for (int t = 0; t < kTrials; ++t) {
    fma = std::min(fma, time_fma(&sink));
    dot = std::min(dot, time_dot(&sink));
  }
  asm volatile("" ::"g"(sink));
  // vdpbf16ps: 16 lanes x 2 products and 2 sums = 64 flops; vfmadd231ps: 16 lanes x 2 = 32 flops.
  return dot > 0 ? (64.0 / dot) / (32.0 / fma) : 0.0;
}

}  // namespace grpo::cpu
