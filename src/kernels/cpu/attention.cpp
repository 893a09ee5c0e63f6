// Causal GQA attention over packed sequences, flash style (see ops.h). The forward walks key tiles with an
// online softmax and stores only o and lse; the backward recomputes probabilities per tile from lse and uses
// Di = rowsum(dO * O). Tile kernels: nn_attention_impl.h, compiled for AVX-512 and for AVX2.
//
// Parallelism: the forward runs one task per (query tile, sequence, head), largest tiles first. The backward
// runs one task per (sequence, kv head): that task alone writes the dk/dv rows of its kv head and the dq rows
// of the query heads that read it, so there are no races and no atomics, and every sum runs in a fixed order
// whatever the thread count.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/error.h"
#include "core/profiler.h"
#include "kernels/cpu/nn_simd.h"
#include "kernels/ops.h"

namespace grpo::cpu {
namespace {

constexpr int64_t kBlock = 64;  // queries per tile = keys per tile
constexpr float kNnLn2 = 0.693147180559945309f;

int64_t padded_head_dim(int64_t D) { return (D + 63) / 64 * 64; }
int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }  // keeps every scratch array 64-byte apart

struct AttnArgs {
  float *o, *lse;                    // forward outputs
  float *dq, *dk, *dv;               // backward outputs
  const float *o_in, *lse_in, *dout;  // backward inputs
  const float *q, *k, *v;
  int64_t H, K, D, Dp;
  float scale;
};

// One thread's scratch, all tiles of kBlock rows (Dp-padded head dims).
struct AttnScratch {
  float* qs;    // [kBlock, Dp] scaled queries
  float* dos;   // [kBlock, Dp] output gradient rows
  float* kt;    // [D, kBlock] keys, transposed
  float* vt;    // [D, kBlock] values, transposed
  float* kp;    // [kBlock, Dp] keys (backward) or values (forward), padded
  float* s;     // [kBlock, kBlock] scores, then probabilities
  float* dp;    // [kBlock, kBlock] dO V^T, then dS
  float* acc;   // [kBlock, Dp] forward output accumulator
  float* dk;    // [kBlock, Dp]
  float* dv;    // [kBlock, Dp]
  float* m;     // [kBlock] running max (log2 domain)
  float* l;     // [kBlock] running sum
  float* lse2;  // [kBlock] lse * log2(e)
  float* di;    // [kBlock] rowsum(dO * O)
};

int64_t scratch_floats(int64_t D) {
  const int64_t Dp = padded_head_dim(D), tile = round16(kBlock * Dp), row = round16(kBlock);
  return 5 * tile + 2 * round16(D * kBlock) + 2 * round16(kBlock * kBlock) + 4 * row;
}

AttnScratch carve_scratch(float* base, int64_t D) {
  const int64_t Dp = padded_head_dim(D), tile = round16(kBlock * Dp), row = round16(kBlock);
  AttnScratch w;
  float* p = base;
  auto take = [&p](int64_t n) {
    float* r = p;
    p += n;
    return r;
  };
  w.qs = take(tile);
  w.dos = take(tile);
  w.kp = take(tile);
  w.dk = take(tile);
  w.dv = take(tile);
  w.acc = w.dk;  // the forward never touches dk
  w.kt = take(round16(D * kBlock));
  w.vt = take(round16(D * kBlock));
  w.s = take(round16(kBlock * kBlock));
  w.dp = take(round16(kBlock * kBlock));
  w.m = take(row);
  w.l = take(row);
  w.lse2 = take(row);
  w.di = take(row);
  return w;
}

}  // namespace

NN_BEGIN_AVX512
namespace nn_avx512 {
using V = Vec512;
#include "kernels/cpu/nn_attention_impl.h"
}  // namespace nn_avx512
NN_END_TARGET
NN_BEGIN_AVX2
namespace nn_avx2 {
using V = Vec256;
#include "kernels/cpu/nn_attention_impl.h"
}  // namespace nn_avx2
NN_END_TARGET

namespace {

// Validates sizes and cu_seqlens; returns the largest number of tiles of one sequence.
int64_t check_attention_args(const int32_t* cu_seqlens, int64_t S, int64_t T, int64_t H, int64_t K, int64_t D,
                             float scale, const char* op) {
  GRPO_CHECK(S >= 0 && T >= 0 && H > 0 && K > 0 && D > 0, "[", op,
             "] expected S >= 0, T >= 0, H, K, D > 0, got S=", S, " T=", T, " H=", H, " K=", K, " D=", D);
  GRPO_CHECK(H % K == 0, "[", op, "] query heads H=", H, " must be a multiple of kv heads K=", K);
  GRPO_CHECK(std::isfinite(scale) && scale > 0.0f, "[", op, "] scale must be finite and > 0, got ", scale);
  GRPO_CHECK(S == 0 ? T == 0 : cu_seqlens[0] == 0, "[", op, "] cu_seqlens[0] must be 0, got ",
             S == 0 ? 0 : cu_seqlens[0]);
  int64_t max_blocks = 0;
  for (int64_t s = 0; s < S; ++s) {
    const int64_t len = int64_t{cu_seqlens[s + 1]} - cu_seqlens[s];
    GRPO_CHECK(len >= 0, "[", op, "] cu_seqlens must be non-decreasing: cu_seqlens[", s, "]=", cu_seqlens[s],
               " > cu_seqlens[", s + 1, "]=", cu_seqlens[s + 1]);
    max_blocks = std::max(max_blocks, (len + kBlock - 1) / kBlock);
  }
  GRPO_CHECK(S == 0 || cu_seqlens[S] == T, "[", op, "] cu_seqlens[S=", S, "]=", S == 0 ? 0 : cu_seqlens[S],
             " must equal T=", T);
  return max_blocks;
}

}  // namespace
}  // namespace grpo::cpu

namespace grpo::ops {

int64_t attention_ws_floats(int64_t T, int64_t H, int64_t K, int64_t D) {
  const int64_t Dp = cpu::padded_head_dim(D);
  const int64_t dq_buffer = D == Dp ? 0 : T * H * Dp;  // dq accumulates in place unless D needs padding
  return omp_get_max_threads() * cpu::scratch_floats(D) + dq_buffer;
}

void attention_forward(float* o, float* lse, const float* q, const float* k, const float* v,
                       const int32_t* cu_seqlens, int64_t S, int64_t T, int64_t H, int64_t K, int64_t D,
                       float scale, float* ws) {
  GRPO_PROFILE("attention_forward");
  const int64_t max_blocks = cpu::check_attention_args(cu_seqlens, S, T, H, K, D, scale, "attention_forward");
  const cpu::AttnArgs a{o,       lse,     nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                        q,       k,       v,       H,       K,       D,       cpu::padded_head_dim(D), scale};
  const bool avx512 = cpu::nn_isa() == cpu::NnIsa::Avx512;
  const int64_t per_block = S * H, tasks = max_blocks * per_block;
#pragma omp parallel if (tasks > 1)
  {
    const cpu::AttnScratch w = cpu::carve_scratch(ws + omp_get_thread_num() * cpu::scratch_floats(D), D);
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t qb = max_blocks - 1 - task / per_block;  // the longest rows first
      const int64_t s = task % per_block / H, h = task % H;
      const int64_t start = cu_seqlens[s], len = cu_seqlens[s + 1] - start;
      if (qb * cpu::kBlock >= len) continue;
      if (avx512)
        cpu::nn_avx512::forward_tile(a, w, start, len, h, qb);
      else
        cpu::nn_avx2::forward_tile(a, w, start, len, h, qb);
    }
  }
}

void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
                        const float* v, const float* o, const float* lse, const int32_t* cu_seqlens, int64_t S,
                        int64_t T, int64_t H, int64_t K, int64_t D, float scale, float* ws) {
  GRPO_PROFILE("attention_backward");
  cpu::check_attention_args(cu_seqlens, S, T, H, K, D, scale, "attention_backward");
  const int64_t Dp = cpu::padded_head_dim(D), G = H / K;
  const cpu::AttnArgs a{nullptr, nullptr, dq, dk, dv, o, lse, dout, q, k, v, H, K, D, Dp, scale};
  const bool avx512 = cpu::nn_isa() == cpu::NnIsa::Avx512;
  const int threads = omp_get_max_threads();
  // dq accumulator: dq itself ([T, H, D]) or, when D is not a multiple of 64, a padded [T, H, Dp] buffer.
  float* dq_acc = D == Dp ? dq : ws + threads * cpu::scratch_floats(D);
  const int64_t ld_dq = D == Dp ? D : Dp;
  const int64_t tasks = S * K;
#pragma omp parallel if (tasks > 1)
  {
    const cpu::AttnScratch w = cpu::carve_scratch(ws + omp_get_thread_num() * cpu::scratch_floats(D), D);
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t s = task / K, kvh = task % K;
      const int64_t start = cu_seqlens[s], len = cu_seqlens[s + 1] - start;
      float* dq_rows = dq_acc + start * H * ld_dq;  // row (t, h) at ((t - start) * H + h) * ld_dq
      for (int64_t t = 0; t < len; ++t)
        std::fill_n(dq_rows + (t * H + kvh * G) * ld_dq, G * ld_dq, 0.0f);
      if (avx512)
        cpu::nn_avx512::backward_sequence(a, w, start, len, kvh, dq_rows, ld_dq);
      else
        cpu::nn_avx2::backward_sequence(a, w, start, len, kvh, dq_rows, ld_dq);
      for (int64_t t = 0; t < len; ++t)  // dq = scale * dS K, copied out of the padded buffer if any
        for (int64_t g = 0; g < G; ++g) {
          const float* src = dq_rows + (t * H + kvh * G + g) * ld_dq;
          float* dst = dq + ((start + t) * H + kvh * G + g) * D;
          for (int64_t d = 0; d < D; ++d) dst[d] = src[d] * scale;
        }
    }
  }
}

}  // namespace grpo::ops
