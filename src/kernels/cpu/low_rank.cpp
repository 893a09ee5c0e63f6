// add_low_rank (y += alpha u V with a small inner dimension r), the LoRA adapters' product added into a
// linear's output, and add_low_rank_t, the same with V given transposed (a LoRA B matrix as it is stored,
// [N, r]): each tile of 64 columns of it is transposed once into a small local block and added to every row,
// in the same order of terms (the same bits as add_low_rank of its transpose), so that B is never
// transposed whole on every call. A GEMM with K = r writes a fresh [T, N] and a second pass adds it (oneDNN's
// accumulating GEMM is slower still): both move the [T, N] output through memory two to four times. Here each output
// row is read once, 64 columns at a time get their r scaled rows of V added in registers, and are written once: a plain
// loop compiled for AVX-512 and AVX2 (chosen at run time), rows split over threads. Each row's sum runs over j in order
// whatever T and the thread count, so a row's result does not depend on the batch (batch invariance). Every term
// is an explicit fma(alpha u, v, acc), so that the bits do not depend on whether the compiler contracts a * v + acc
// (GCC does at -O2 and above, not at the sanitizer build's -O1) and the register tiles of low_rank_impl.h match.
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/profiler.h"
#include "core/threads.h"
#include "kernels/cpu/nn_simd.h"
#include "kernels/ops.h"

namespace grpo::ops {
namespace {

constexpr int64_t kLowRankTile = 64;  // columns of a row summed in registers (4 AVX-512 / 8 AVX2 vectors)

// y[0, n) += sum_j (alpha u[j]) V[j, 0..n) (row stride ldv): a tile of columns is loaded once, gets the r
// terms added in registers, and is stored once.
[[gnu::always_inline]] inline void low_rank_row(float* y, const float* u, const float* V, int64_t ldv, int64_t n,
                                                int64_t r, float alpha) {
  int64_t c0 = 0;
  for (; c0 + kLowRankTile <= n; c0 += kLowRankTile) {
    float acc[kLowRankTile];
#pragma omp simd
    for (int64_t i = 0; i < kLowRankTile; ++i) acc[i] = y[c0 + i];
    for (int64_t j = 0; j < r; ++j) {
      const float a = alpha * u[j];
      const float* v = V + j * ldv + c0;
#pragma omp simd
      for (int64_t i = 0; i < kLowRankTile; ++i) acc[i] = std::fma(a, v[i], acc[i]);
    }
#pragma omp simd
    for (int64_t i = 0; i < kLowRankTile; ++i) y[c0 + i] = acc[i];
  }
  for (int64_t j = 0; j < r && c0 < n; ++j) {  // the last n % 64 columns, in the same order of terms
    const float a = alpha * u[j];
    const float* v = V + j * ldv;
#pragma omp simd
    for (int64_t i = c0; i < n; ++i) y[i] = std::fma(a, v[i], y[i]);
  }
}
NN_BEGIN_AVX512
void low_rank_row_avx512(float* y, const float* u, const float* V, int64_t ldv, int64_t n, int64_t r, float alpha) {
  low_rank_row(y, u, V, ldv, n, r, alpha);
}
NN_END_TARGET
NN_BEGIN_AVX2
void low_rank_row_avx2(float* y, const float* u, const float* V, int64_t ldv, int64_t n, int64_t r, float alpha) {
  low_rank_row(y, u, V, ldv, n, r, alpha);
}
NN_END_TARGET

// Columns [c0, c0 + nt) of rows [0, T) of y += alpha u W^T, W [N, r] (row stride ldw), j in chunks of
// kTChunk whose transposed block vt [kTChunk, 64] stays in L1; per element the terms come in order of j, as
// in low_rank_row (a row's sum is stored and reloaded between chunks, which changes no bit). Full tiles go
// through full_tile (low_rank_impl.h) of the instruction set of the caller.
constexpr int64_t kTChunk = 128;
template <auto full_tile>
[[gnu::always_inline]] inline void low_rank_t_tile(float* y, int64_t ldy, const float* u, int64_t ldu, const float* W,
                                                   int64_t ldw, int64_t T, int64_t c0, int64_t nt, int64_t r,
                                                   float alpha) {
  alignas(64) float vt[kTChunk * kLowRankTile];
  for (int64_t j0 = 0; j0 < r; j0 += kTChunk) {
    const int64_t jn = std::min(kTChunk, r - j0);
    for (int64_t i = 0; i < nt; ++i)
      for (int64_t j = 0; j < jn; ++j) vt[j * kLowRankTile + i] = W[(c0 + i) * ldw + j0 + j];
    if (nt == kLowRankTile) {
      full_tile(y + c0, ldy, u + j0, ldu, vt, T, jn, alpha);
      continue;
    }
    for (int64_t t = 0; t < T; ++t) {  // the last N % 64 columns, as low_rank_row adds them
      float* yr = y + t * ldy + c0;
      const float* ur = u + t * ldu + j0;
      for (int64_t j = 0; j < jn; ++j) {
        const float a = alpha * ur[j];
        const float* v = vt + j * kLowRankTile;
#pragma omp simd
        for (int64_t i = 0; i < nt; ++i) yr[i] = std::fma(a, v[i], yr[i]);
      }
    }
  }
}
NN_BEGIN_AVX512
namespace nn_avx512 {
using V = cpu::Vec512;
#include "kernels/cpu/low_rank_impl.h"
}  // namespace nn_avx512
void low_rank_t_tile_avx512(float* y, int64_t ldy, const float* u, int64_t ldu, const float* W, int64_t ldw, int64_t T,
                            int64_t c0, int64_t nt, int64_t r, float alpha) {
  low_rank_t_tile<nn_avx512::full_tile>(y, ldy, u, ldu, W, ldw, T, c0, nt, r, alpha);
}
NN_END_TARGET
NN_BEGIN_AVX2
namespace nn_avx2 {
using V = cpu::Vec256;
#include "kernels/cpu/low_rank_impl.h"
}  // namespace nn_avx2
void low_rank_t_tile_avx2(float* y, int64_t ldy, const float* u, int64_t ldu, const float* W, int64_t ldw, int64_t T,
                          int64_t c0, int64_t nt, int64_t r, float alpha) {
  low_rank_t_tile<nn_avx2::full_tile>(y, ldy, u, ldu, W, ldw, T, c0, nt, r, alpha);
}
NN_END_TARGET

}  // namespace

void add_low_rank_t(float* y, int64_t ldy, const float* u, int64_t ldu, const float* W, int64_t ldw, int64_t T,
                    int64_t N, int64_t r, float alpha) {
  GRPO_PROFILE("add_low_rank");
  GRPO_CHECK(T >= 0 && N >= 0 && r >= 0, "[add_low_rank_t] sizes must be >= 0, got T=", T, " N=", N, " r=", r);
  GRPO_CHECK(ldy >= N && ldw >= r && ldu >= r, "[add_low_rank_t] leading dimensions ldy=", ldy, " ldw=", ldw,
             " ldu=", ldu, " below N=", N, " / r=", r);
  const bool avx512 = cpu::nn_use_avx512();
  const int64_t tiles = (N + kLowRankTile - 1) / kLowRankTile;
  parallel_for(tiles, T * N * std::max<int64_t>(r, 1) >= (1 << 16), [&](int64_t k) {
    const int64_t c0 = k * kLowRankTile, nt = std::min(kLowRankTile, N - c0);
    if (avx512)
      low_rank_t_tile_avx512(y, ldy, u, ldu, W, ldw, T, c0, nt, r, alpha);
    else
      low_rank_t_tile_avx2(y, ldy, u, ldu, W, ldw, T, c0, nt, r, alpha);
  });
}

void add_low_rank(float* y, int64_t ldy, const float* u, int64_t ldu, const float* V, int64_t ldv, int64_t T,
                  int64_t N, int64_t r, float alpha) {
  GRPO_PROFILE("add_low_rank");
  GRPO_CHECK(T >= 0 && N >= 0 && r >= 0, "[add_low_rank] sizes must be >= 0, got T=", T, " N=", N, " r=", r);
  GRPO_CHECK(ldy >= N && ldv >= N && ldu >= r, "[add_low_rank] leading dimensions ldy=", ldy, " ldv=", ldv,
             " ldu=", ldu, " below N=", N, " / r=", r);
  const bool avx512 = cpu::nn_use_avx512();
  parallel_for(T, T * N * std::max<int64_t>(r, 1) >= (1 << 16), [&](int64_t t) {
    if (avx512)
      low_rank_row_avx512(y + t * ldy, u + t * ldu, V, ldv, N, r, alpha);
    else
      low_rank_row_avx2(y + t * ldy, u + t * ldu, V, ldv, N, r, alpha);
  });
}

}  // namespace grpo::ops
