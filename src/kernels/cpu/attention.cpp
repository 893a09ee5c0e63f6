// GQA attention over packed sequences, flash style: causal (ops.h: attention_forward/backward) or not
// (vision_ops.h: bidirectional_attention_forward/backward, the vision tower's attention within a picture),
// one implementation with a causal flag. The forward walks key tiles with an
// online softmax and stores only o and lse; the backward recomputes probabilities per tile from lse and uses
// Di = rowsum(dO * O). Tile kernels: nn_attention_impl.h, compiled for AVX-512 and for AVX2.
//
// Parallelism: the forward runs one task per (sequence, kv head, query tile, query head of the group). The
// backward runs one task per (sequence, kv head): that task alone writes the dk/dv rows of its kv head and the
// dq rows of the query heads that read it, so there are no races and no atomics, and every sum runs in a fixed
// order whatever the thread count.
//
// Workspace (attention_ws_floats): per-thread tile scratch for omp_get_max_threads() threads, so size it with
// the thread count that will be in effect at the call; plus transposed K and V, Di, and a padded dq buffer
// when D is not a multiple of 64.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/error.h"
#include "core/profiler.h"
#include "kernels/cpu/nn_simd.h"
#include "kernels/ops.h"
#include "kernels/vision_ops.h"

namespace grpo::cpu {
namespace {

constexpr int64_t kBlock = 64;  // queries per tile = keys per tile
constexpr float kNnLn2 = 0.693147180559945309f;

int64_t padded_head_dim(int64_t D) { return (D + 63) / 64 * 64; }
int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }  // keeps every scratch array 64-byte apart

struct AttnArgs {
  float *o = nullptr, *lse = nullptr;                                // forward outputs
  float *dq = nullptr, *dk = nullptr, *dv = nullptr;                 // backward outputs
  const float *o_in = nullptr, *lse_in = nullptr, *dout = nullptr;  // backward inputs
  const float *q = nullptr, *k = nullptr, *v = nullptr;
  const float *kt = nullptr, *vt = nullptr;  // [K, D, Tp] transposed keys and values (vt: backward only)
  const float* di = nullptr;                 // [T, H] rowsum(dO * O) (backward only)
  int64_t H = 0, K = 0, D = 0, Dp = 0, Tp = 0;
  float scale = 0.0f;
  bool causal = true;
};

// One thread's scratch, all tiles of kBlock rows (Dp-padded head dims).
struct AttnScratch {
  float* qs;   // [kBlock, Dp] scaled queries
  float* dos;  // [kBlock, Dp] output gradient rows
  float* kp;   // [kBlock, Dp] keys (backward) or values (forward), padded when D < Dp
  float* s;    // [kBlock, kBlock] scores, then probabilities
  float* dp;   // [kBlock, kBlock] dO V^T, then dS
  float* acc;  // [kBlock, Dp] forward output accumulator
  float* dk;   // [kBlock, Dp]
  float* dv;   // [kBlock, Dp]
  float* m;    // [kBlock] running max (log2 domain)
  float* l;    // [kBlock] running sum
};

int64_t scratch_floats(int64_t D) {
  const int64_t Dp = padded_head_dim(D), tile = round16(kBlock * Dp), row = round16(kBlock);
  return 5 * tile + 2 * round16(kBlock * kBlock) + 2 * row;
}

// Keys past T of the transposed copies: a tile that starts near the end reads kBlock columns.
int64_t transposed_len(int64_t T) { return round16(T + kBlock); }

// Workspace layout: [threads x scratch] [kt: K, D, Tp] [vt: K, D, Tp] [di: T, H] [dq buffer: T, H, Dp if D < Dp]
struct WsLayout {
  int64_t kt, vt, di, dq, total;  // offsets in floats; per-thread scratch starts at 0
  WsLayout(int64_t threads, int64_t T, int64_t H, int64_t K, int64_t D) {
    const int64_t Dp = padded_head_dim(D), transposed = round16(K * D * transposed_len(T));
    kt = threads * scratch_floats(D);
    vt = kt + transposed;
    di = vt + transposed;
    dq = di + round16(T * H);
    total = dq + (D == Dp ? 0 : T * H * Dp);
  }
};

// dst [K, D, Tp] = src [T, K, D] transposed, columns T..Tp zeroed; work split over (kv head, row block).
void transpose_kv(float* dst, const float* src, int64_t T, int64_t K, int64_t D) {
  const int64_t Tp = transposed_len(T), blocks = (Tp + kBlock - 1) / kBlock;
#pragma omp for schedule(static)
  for (int64_t item = 0; item < K * blocks; ++item) {
    const int64_t kvh = item / blocks, t0 = item % blocks * kBlock, t1 = std::min(Tp, t0 + kBlock);
    for (int64_t d = 0; d < D; ++d) {
      float* out = dst + (kvh * D + d) * Tp;
      for (int64_t t = t0; t < t1; ++t) out[t] = t < T ? src[(t * K + kvh) * D + d] : 0.0f;
    }
  }
}

// di [T, H] = rowsum(dout * o) per query row and head.
void output_dot(float* di, const float* dout, const float* o, int64_t T, int64_t H, int64_t D) {
#pragma omp for schedule(static)
  for (int64_t row = 0; row < T * H; ++row) {
    float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
    for (int64_t d = 0; d < D; ++d) acc += dout[row * D + d] * o[row * D + d];
    di[row] = acc;
  }
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
  w.s = take(round16(kBlock * kBlock));
  w.dp = take(round16(kBlock * kBlock));
  w.m = take(row);
  w.l = take(row);
  return w;
}

}  // namespace

namespace {  // internal linkage: each kernel file has its own nn_avx512 / nn_avx2 bodies
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
}  // namespace

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

namespace grpo::cpu {
namespace {

void attention_forward_impl(float* o, float* lse, const float* q, const float* k, const float* v,
                            const int32_t* cu_seqlens, int64_t S, int64_t T, int64_t H, int64_t K, int64_t D,
                            float scale, float* ws, bool causal, const char* op) {
  const int64_t max_blocks = cpu::check_attention_args(cu_seqlens, S, T, H, K, D, scale, op);
  const cpu::WsLayout layout(omp_get_max_threads(), T, H, K, D);
  float* kt = ws + layout.kt;
  const cpu::AttnArgs a{.o = o, .lse = lse, .q = q, .k = k, .v = v, .kt = kt, .H = H, .K = K, .D = D,
                        .Dp = cpu::padded_head_dim(D), .Tp = cpu::transposed_len(T), .scale = scale,
                        .causal = causal};
  const bool avx512 = cpu::nn_use_avx512();
  // Tasks ordered (sequence, kv head, query tile from the last, head of the group): consecutive tasks reuse
  // the same keys and values from cache, and each group starts with its largest tiles.
  const int64_t G = H / K, per_group = max_blocks * G, tasks = S * K * per_group;
#pragma omp parallel if (tasks > 1)
  {
    const cpu::AttnScratch w = cpu::carve_scratch(ws + omp_get_thread_num() * cpu::scratch_floats(D), D);
    cpu::transpose_kv(kt, k, T, K, D);
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t s = task / (K * per_group), kvh = task / per_group % K;
      const int64_t qb = max_blocks - 1 - task % per_group / G, h = kvh * G + task % G;
      const int64_t start = cu_seqlens[s], len = cu_seqlens[s + 1] - start;
      if (qb * cpu::kBlock >= len) continue;
      if (avx512)
        cpu::nn_avx512::forward_tile(a, w, start, len, h, qb);
      else
        cpu::nn_avx2::forward_tile(a, w, start, len, h, qb);
    }
  }
}

void attention_backward_impl(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
                             const float* v, const float* o, const float* lse, const int32_t* cu_seqlens, int64_t S,
                             int64_t T, int64_t H, int64_t K, int64_t D, float scale, float* ws, bool causal,
                             const char* op) {
  cpu::check_attention_args(cu_seqlens, S, T, H, K, D, scale, op);
  const int64_t Dp = cpu::padded_head_dim(D), G = H / K;
  const cpu::WsLayout layout(omp_get_max_threads(), T, H, K, D);
  float *kt = ws + layout.kt, *vt = ws + layout.vt, *di = ws + layout.di;
  const cpu::AttnArgs a{.dq = dq, .dk = dk, .dv = dv, .o_in = o, .lse_in = lse, .dout = dout, .q = q, .k = k,
                        .v = v, .kt = kt, .vt = vt, .di = di, .H = H, .K = K, .D = D, .Dp = Dp,
                        .Tp = cpu::transposed_len(T), .scale = scale, .causal = causal};
  const bool avx512 = cpu::nn_use_avx512();
  // dq accumulator: dq itself ([T, H, D]) or, when D is not a multiple of 64, a padded [T, H, Dp] buffer.
  float* dq_acc = D == Dp ? dq : ws + layout.dq;
  const int64_t ld_dq = D == Dp ? D : Dp;
  const int64_t tasks = S * K;
#pragma omp parallel if (tasks > 1)
  {
    const cpu::AttnScratch w = cpu::carve_scratch(ws + omp_get_thread_num() * cpu::scratch_floats(D), D);
    cpu::transpose_kv(kt, k, T, K, D);
    cpu::transpose_kv(vt, v, T, K, D);
    cpu::output_dot(di, dout, o, T, H, D);
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

}  // namespace
}  // namespace grpo::cpu

namespace grpo::ops {

int64_t attention_ws_floats(int64_t T, int64_t H, int64_t K, int64_t D) {
  return cpu::WsLayout(omp_get_max_threads(), T, H, K, D).total;
}

void attention_forward(float* o, float* lse, const float* q, const float* k, const float* v,
                       const int32_t* cu_seqlens, int64_t S, int64_t T, int64_t H, int64_t K, int64_t D,
                       float scale, float* ws) {
  GRPO_PROFILE("attention_forward");
  cpu::attention_forward_impl(o, lse, q, k, v, cu_seqlens, S, T, H, K, D, scale, ws, true, "attention_forward");
}

void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
                        const float* v, const float* o, const float* lse, const int32_t* cu_seqlens, int64_t S,
                        int64_t T, int64_t H, int64_t K, int64_t D, float scale, float* ws) {
  GRPO_PROFILE("attention_backward");
  cpu::attention_backward_impl(dq, dk, dv, dout, q, k, v, o, lse, cu_seqlens, S, T, H, K, D, scale, ws, true,
                               "attention_backward");
}

void bidirectional_attention_forward(float* o, float* lse, const float* q, const float* k, const float* v,
                                     const int32_t* cu_seqlens, int64_t S, int64_t T, int64_t H, int64_t K,
                                     int64_t D, float scale, float* ws) {
  GRPO_PROFILE("bidirectional_attention_forward");
  cpu::attention_forward_impl(o, lse, q, k, v, cu_seqlens, S, T, H, K, D, scale, ws, false,
                              "bidirectional_attention_forward");
}

void bidirectional_attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* q,
                                      const float* k, const float* v, const float* o, const float* lse,
                                      const int32_t* cu_seqlens, int64_t S, int64_t T, int64_t H, int64_t K,
                                      int64_t D, float scale, float* ws) {
  GRPO_PROFILE("bidirectional_attention_backward");
  cpu::attention_backward_impl(dq, dk, dv, dout, q, k, v, o, lse, cu_seqlens, S, T, H, K, D, scale, ws, false,
                               "bidirectional_attention_backward");
}

}  // namespace grpo::ops
