// AVX2 + FMA body of ops::gemv (CPUs without AVX-512): y [B,N] = x [B,K] . W[N,K]^T, W f32 or bf16. The
// summation is the AVX-512 body's: one 8-lane accumulator per output, each lane summing its share of k in
// order from zero, then the fixed tree of lane_sums.h (reduce8).
//   f32 W: steps of 8 k, lane j takes k = 8i + j.
//   bf16 W: x is rounded to bf16 first (into x_scratch, as ops::gemm's bf16 path); steps of 16 k: 16 bf16 of
//   x and of W split into their even values (shifted up 16 bits) and odd ones (the high halves), so lane j
//   takes k = 16i + 2j, then 16i + 2j + 1.
//   The last K % step values of k go through zero-filled copies (products of zeros add +0).
// Every y[b,n] is therefore summed the same way whatever B, the tile it falls in and the thread count
// (batch-invariant rollouts, bitwise). Threads share out blocks of weight rows; the tiles:
//   direct (x and W read along k, no transposes): MR batch rows x 4 weight rows, MR = 3 (f32) or 2 (bf16),
//   the 4 rows staying in L1 for every batch row. A batch of one row streams W from memory with prefetches
//   ahead (decode is bandwidth-bound) through 8 (bf16) or 4 (f32) weight rows at a time: the measured best
//   on a Zen 5 (f32 from DRAM: 62-66 GB/s with 4 rows, 52 with 8; bf16 decode of the `small` model faster
//   with 8).
//   bf16 batches over kDirectMaxB rows: x and W split into f32 first, then the f32 tiles (see
//   split_rows_then_f32): the splits are shared by more multiply-adds than in the bf16 tiles.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/threads.h"
#include "kernels/cpu/bf16_avx2.h"
#include "kernels/cpu/gemv_kernels.h"
#include "kernels/cpu/lane_sums.h"

namespace grpo::ops::cpu_gemv {
namespace {

#define GRPO_AVX2 [[gnu::target("avx2,fma")]]

constexpr int kRowTile = 4;              // weight rows per direct tile
constexpr int kDirectMaxB = 16;          // bf16 W: larger batches split x and W to f32 first ...
constexpr int64_t kSplitMaxK = 2048;     // ... for rows up to this long (padded to 16)
constexpr int64_t kSplitFloats = 64 * 1024;  // ... at most 256 KiB of split weight rows at a time (in L2;
                                             // half of it: 0-7% slower on a Zen 5, 1 MiB L2)
static_assert(kSplitFloats >= kRowTile * kSplitMaxK);
constexpr int64_t kBlockRows = 128;      // weight rows per thread block ...
constexpr int64_t kBlockAlign = 8;       // ... a multiple of this (the widest one-row tile)
constexpr int64_t kBlocksPerThread = 4;  // when W is small, at least this many blocks per thread
constexpr int64_t kPrefetchTiles = 2;    // one-row tiles prefetch W this many tiles ahead

// Weight rows per direct tile for a batch of one row (see the header).
template <typename E>
constexpr int kOneRowTile = std::is_same_v<E, float> ? 4 : 8;

// Batch rows per direct tile: MR x 4 accumulators, MR (f32) or 2 MR (bf16: even and odd values) x vectors
// and the W vectors fit the 16 ymm registers.
template <typename E>
constexpr int kBatchTile = std::is_same_v<E, float> ? 3 : 2;

// The even and odd bf16 values of 16 as f32 (8 each).
GRPO_AVX2 [[gnu::always_inline]] inline __m256 even_bf16(__m256i v) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}
GRPO_AVX2 [[gnu::always_inline]] inline __m256 odd_bf16(__m256i v, __m256i high) {
  return _mm256_castsi256_ps(_mm256_and_si256(v, high));
}

// One step of k for an MR x NR tile: x rows at x (stride ldx), W rows at w (stride ldw), both at the step's
// first k. ahead: W rows to prefetch (one line per row), or null.
// f32 x and W: 8 values of k.
template <int MR, int NR>
GRPO_AVX2 [[gnu::always_inline]] inline void step(__m256 (&acc)[MR][NR], const float* x, int64_t ldx, const float* w,
                                                  int64_t ldw, const float* ahead) {
  __m256 xv[MR];
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m) xv[m] = _mm256_loadu_ps(x + m * ldx);
#pragma GCC unroll 8
  for (int r = 0; r < NR; ++r) {
    if (ahead) _mm_prefetch(reinterpret_cast<const char*>(ahead + r * ldw), _MM_HINT_T0);
    const __m256 wv = _mm256_loadu_ps(w + r * ldw);
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) acc[m][r] = _mm256_fmadd_ps(xv[m], wv, acc[m][r]);
  }
}

// bf16 x and W: 16 values of k, both split in registers.
template <int MR, int NR>
GRPO_AVX2 [[gnu::always_inline]] inline void step(__m256 (&acc)[MR][NR], const bf16_t* x, int64_t ldx,
                                                  const bf16_t* w, int64_t ldw, const bf16_t* ahead) {
  const __m256i high = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  __m256 xe[MR], xo[MR];
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + m * ldx));
    xe[m] = even_bf16(v);
    xo[m] = odd_bf16(v, high);
  }
#pragma GCC unroll 8
  for (int r = 0; r < NR; ++r) {
    if (ahead) _mm_prefetch(reinterpret_cast<const char*>(ahead + r * ldw), _MM_HINT_T0);
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + r * ldw));
    const __m256 we = even_bf16(v), wo = odd_bf16(v, high);
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      acc[m][r] = _mm256_fmadd_ps(xe[m], we, acc[m][r]);
      acc[m][r] = _mm256_fmadd_ps(xo[m], wo, acc[m][r]);
    }
  }
}

// Values of k per step: 8 f32 lanes, or 16 bf16 split into 8 even and 8 odd values.
template <typename E>
constexpr int64_t kStep = std::is_same_v<E, bf16_t> ? 16 : 8;

// The last K % kStep values of k, through zero-filled copies of the rows (a product of zeros adds +0, in
// every path alike).
template <int MR, int NR, typename E>
GRPO_AVX2 [[gnu::always_inline]] inline void tail_step(__m256 (&acc)[MR][NR], const E* x, int64_t ldx, const E* w,
                                                       int64_t ldw, int64_t n) {
  constexpr int64_t S = kStep<E>;
  alignas(32) E xt[MR][S] = {}, wt[NR][S] = {};
  for (int m = 0; m < MR; ++m) std::memcpy(xt[m], x + m * ldx, n * sizeof(E));
  for (int r = 0; r < NR; ++r) std::memcpy(wt[r], w + r * ldw, n * sizeof(E));
  step<MR, NR>(acc, xt[0], S, wt[0], S, static_cast<const E*>(nullptr));
}

// y[m, r] (row stride ldy) = x row m . W row r for m < MR, r < NR over K values of k (x rows: stride ldx,
// W rows: stride K). prefetch: also stream the W rows kPrefetchTiles tiles on (one-row batches read W once,
// from memory).
template <int MR, int NR, bool kPrefetch, typename E>
GRPO_AVX2 void tile(float* y, int64_t ldy, const E* x, int64_t ldx, const E* w, int64_t K) {
  constexpr int64_t S = kStep<E>;
  __m256 acc[MR][NR];
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) acc[m][r] = _mm256_setzero_ps();
  const E* ahead = kPrefetch ? w + kPrefetchTiles * NR * K : nullptr;
  int64_t k = 0;
  for (; k + S <= K; k += S) step<MR, NR>(acc, x + k, ldx, w + k, K, kPrefetch ? ahead + k : nullptr);
  if (k < K) tail_step<MR, NR>(acc, x + k, ldx, w + k, K, K - k);
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m) {
    if constexpr (NR % 4 == 0) {
#pragma GCC unroll 8
      for (int r = 0; r < NR; r += 4)
        _mm_storeu_ps(y + m * ldy + r, cpu::reduce4x8(acc[m][r], acc[m][r + 1], acc[m][r + 2], acc[m][r + 3]));
    } else {
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r) y[m * ldy + r] = cpu::reduce8(acc[m][r]);
    }
  }
}

// tile<mr, nr> for run-time sizes mr <= MR, nr <= NR (the last batch rows, the last weight rows of a block).
template <int MR, int NR, bool kPrefetch, typename E>
void tile_any(int64_t mr, int64_t nr, float* y, int64_t ldy, const E* x, int64_t ldx, const E* w, int64_t K) {
  if constexpr (MR > 0 && NR > 0) {
    if (mr < MR) return tile_any<MR - 1, NR, kPrefetch>(mr, nr, y, ldy, x, ldx, w, K);
    if (nr < NR) return tile_any<MR, NR - 1, kPrefetch>(mr, nr, y, ldy, x, ldx, w, K);
    tile<MR, NR, kPrefetch>(y, ldy, x, ldx, w, K);
  }
}

// rows rows of bf16 (x or W, stride K) -> f32 [rows][ldx], per step of 16 k its 8 even values then its 8 odd
// ones (as step() splits them), zeros past K (ldx: K rounded up to 16).
GRPO_AVX2 void split_rows(float* dst, int64_t ldx, const bf16_t* x, int64_t rows, int64_t K) {
  const __m256i high = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < K; k += 16) {
      alignas(32) bf16_t t[16] = {};
      const bf16_t* src = x + r * K + k;
      if (k + 16 > K) src = static_cast<const bf16_t*>(std::memcpy(t, src, (K - k) * sizeof(bf16_t)));
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
      _mm256_store_ps(dst + r * ldx + k, even_bf16(v));
      _mm256_store_ps(dst + r * ldx + k + 8, odd_bf16(v, high));
    }
}

// Weight rows n0 .. n1 (bf16) against B > kDirectMaxB batch rows (bf16, rounded), K <= kSplitMaxK: the bf16
// values split once into f32, then the f32 tiles. A split row holds per step of 16 k its 8 even values, then
// its 8 odd ones, so the f32 tiles' steps of 8 over it add exactly what the bf16 steps do, in the same order.
// As many weight rows as kSplitFloats holds are split at a time (kept in L2), then each tile of batch rows is
// split once (kept in L1) and runs against all of them. Not inlined into block(): its buffers would take
// their stack pages on every call of the other paths too.
[[gnu::noinline]] void split_rows_then_f32(float* y, const bf16_t* x, const bf16_t* W, int64_t B, int64_t n0,
                                           int64_t n1, int64_t N, int64_t K) {
  constexpr int MR = kBatchTile<float>;
  const int64_t ld = (K + 15) / 16 * 16;
  alignas(32) float ws[kSplitFloats];     // [rows][ld]
  alignas(32) float xs[MR * kSplitMaxK];  // [MR][ld]
  const int64_t region = kSplitFloats / ld / kRowTile * kRowTile;
  for (int64_t n = n0; n < n1; n += region) {
    const int64_t rows = std::min(region, n1 - n);
    split_rows(ws, ld, W + n * K, rows, K);
    for (int64_t b = 0; b < B; b += MR) {
      const int64_t mr = std::min<int64_t>(MR, B - b);
      split_rows(xs, ld, x + b * K, mr, K);
      for (int64_t r = 0; r < rows; r += kRowTile)
        tile_any<MR, kRowTile, false>(mr, std::min<int64_t>(kRowTile, rows - r), y + b * N + n + r, N,
                                      static_cast<const float*>(xs), ld, static_cast<const float*>(ws + r * ld), ld);
    }
  }
}

// Weight rows n0 .. n1 against every batch row. x: f32 [B, K] for f32 W, bf16 (rounded) for bf16 W.
template <typename E>
void block(float* y, const E* x, const E* W, int64_t B, int64_t n0, int64_t n1, int64_t N, int64_t K) {
  if (B == 1) {
    constexpr int NR = kOneRowTile<E>;
    for (int64_t n = n0; n < n1; n += NR)
      tile_any<1, NR, true>(1, std::min<int64_t>(NR, n1 - n), y + n, N, x, K, W + n * K, K);
    return;
  }
  if constexpr (std::is_same_v<E, bf16_t>) {
    const int64_t padded = (K + 15) / 16 * 16;
    if (B > kDirectMaxB && padded <= kSplitMaxK) {
      return split_rows_then_f32(y, x, W, B, n0, n1, N, K);
    }
  }
  // W's tile of rows stays in L1 while every batch row runs against it; the first batch tile also streams
  // in the W tiles that follow, so that memory works while the rest of the batch computes
  constexpr int MR = kBatchTile<E>;
  for (int64_t n = n0; n < n1; n += kRowTile) {
    const int64_t nr = std::min<int64_t>(kRowTile, n1 - n), mr = std::min<int64_t>(MR, B);
    tile_any<MR, kRowTile, true>(mr, nr, y + n, N, x, K, W + n * K, K);
    for (int64_t b = mr; b < B; b += MR)
      tile_any<MR, kRowTile, false>(std::min<int64_t>(MR, B - b), nr, y + b * N + n, N, x + b * K, K, W + n * K, K);
  }
}

template <typename E>
void run(float* y, const E* x, const E* W, int64_t B, int64_t N, int64_t K) {
  // blocks of at most kBlockRows rows (a multiple of the one-row tile), at least kBlocksPerThread per
  // thread when W is small
  const int64_t threads = num_threads();
  const int64_t by_threads = (N + kBlocksPerThread * threads - 1) / (kBlocksPerThread * threads);
  const int64_t rows_per_block =
      std::min(kBlockRows, std::max<int64_t>(kBlockAlign, (by_threads + kBlockAlign - 1) / kBlockAlign * kBlockAlign));
  const int64_t blocks = (N + rows_per_block - 1) / rows_per_block;
  parallel_for(blocks, B * N * K > (1 << 17), [&](int64_t i) {
    const int64_t n0 = i * rows_per_block, n1 = std::min(N, n0 + rows_per_block);
    block(y, x, W, B, n0, n1, N, K);
  });
}

}  // namespace

void gemv_avx2(float* y, const float* x, bf16_t* x_scratch, const void* W, DType w_dtype, int64_t B, int64_t N,
               int64_t K) {
  if (K == 0) return std::fill(y, y + B * N, 0.0f);
  if (w_dtype == DType::F32) return run(y, x, static_cast<const float*>(W), B, N, K);
  cpu::f32_to_bf16_avx2(x_scratch, x, B * K);
  run<bf16_t>(y, x_scratch, static_cast<const bf16_t*>(W), B, N, K);
}

}  // namespace grpo::ops::cpu_gemv
