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
//   ahead (decode is bandwidth-bound): 4 rows at a time read W from DRAM at 62-66 (f32) and 78-81 (bf16)
//   GB/s on a Zen 5 against 80-84 for a plain read, 8 rows at a time (more chains) at 52 and 57-60.
//   packed (bf16 W, batches over kDirectMaxB rows): a GEMM-like kernel that computes the same sums, see
//   packed_rows. The 8 x 8 transposes and the broadcasts it needs cost more than direct tiles below that.
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
constexpr int kDirectMaxB = 32;          // bf16 W: batches up to this size run direct tiles, larger ones packed
constexpr int64_t kPackRows = 16;        // bf16 W, larger batches: weight rows per packed group (2 panels) ...
constexpr int kPackBatch = 6;            // ... against this many batch rows (12 accumulators)
constexpr int64_t kPackMaxK = 2048;      // ... for rows up to this long (padded to 16)
constexpr int64_t kPackFloats = 64 * 1024;  // packed weight rows (f32): at most 256 KiB, kept in L2
static_assert(kPackRows * kPackMaxK <= kPackFloats);
constexpr int64_t kBlockRows = 128;      // weight rows per thread block
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

// Larger batches of bf16 W (B > kDirectMaxB): the summation above, computed like a GEMM. A group of weight
// rows is widened to f32 once and packed by lane ("class" j < 8: the values of k lane j takes, in its
// order 2j, 2j+1, 16+2j, 16+2j+1, ..., zeros past K), 8 weight rows per vector; a tile of MR batch rows
// (split to f32 the same way) runs class after class with one x value broadcast per multiply-add, each
// class's sums from zero, and the 8 class sums of each output are added in reduce8's tree. The sums are
// bitwise those of the direct tiles (tested in tests/kernels_paged).

// c[j] = u[0..3][j] in each 128-bit half: four 4 x 4 transposes at once (in-lane shuffles only).
GRPO_AVX2 [[gnu::always_inline]] inline void transpose4x2(__m256* c, const __m256 (&u)[4]) {
  const __m256 t0 = _mm256_unpacklo_ps(u[0], u[1]), t1 = _mm256_unpackhi_ps(u[0], u[1]);
  const __m256 t2 = _mm256_unpacklo_ps(u[2], u[3]), t3 = _mm256_unpackhi_ps(u[2], u[3]);
  c[0] = _mm256_shuffle_ps(t0, t2, 0x44);
  c[1] = _mm256_shuffle_ps(t0, t2, 0xEE);
  c[2] = _mm256_shuffle_ps(t1, t3, 0x44);
  c[3] = _mm256_shuffle_ps(t1, t3, 0xEE);
}

// c[j] = (w[0][j], w[ld][j], .., w[7 ld][j]) as f32 for j < 8: 8 rows x 8 bf16 values of k, transposed as
// pairs (32-bit elements; rows i and i+4 share a register, so in-lane shuffles suffice), then split: value
// 2q is pair q's low half shifted up, value 2q+1 its high half.
GRPO_AVX2 [[gnu::always_inline]] inline void columns8(__m256 (&c)[8], const bf16_t* w, int64_t ld) {
  __m256 u[4], p[4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i)
    u[i] = _mm256_castsi256_ps(_mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + i * ld))),
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + (i + 4) * ld)), 1));
  transpose4x2(p, u);
  const __m256i high = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) {
    c[2 * q] = even_bf16(_mm256_castps_si256(p[q]));
    c[2 * q + 1] = odd_bf16(_mm256_castps_si256(p[q]), high);
  }
}

// rows <= 8 * panels weight rows (bf16, stride K) -> wp, panel p (8 rows) and class j at
// wp + (p * 8 + j) * L * 8: L = Kpad / 8 vectors of 8 rows, zeros past K and past the rows.
GRPO_AVX2 void pack_group(float* wp, const bf16_t* w, int64_t K, int64_t rows, int64_t panels, int64_t L) {
  for (int64_t p = 0; p < panels; ++p) {
    const int64_t prow = std::min<int64_t>(8, rows - p * 8);
    float* dst = wp + p * 8 * L * 8;
    for (int64_t i = 0; 16 * i < K; ++i) {
      const int64_t k = 16 * i;
      alignas(32) bf16_t t[8][16] = {};
      const bf16_t* src = w + p * 8 * K + k;
      int64_t ld = K;
      if (prow < 8 || k + 16 > K) {  // the last rows or values: a zero-filled copy
        const int64_t n = std::min<int64_t>(16, K - k);
        for (int64_t r = 0; r < prow; ++r) std::memcpy(t[r], src + r * K, n * sizeof(bf16_t));
        src = t[0], ld = 16;
      }
      __m256 c[8];
      for (int half = 0; half < 2; ++half) {  // values k .. k+8: classes 0..3, k+8 .. k+16: classes 4..7
        columns8(c, src + 8 * half, ld);
#pragma GCC unroll 4
        for (int q = 0; q < 4; ++q) {
          float* cls = dst + (4 * half + q) * L * 8;
          _mm256_store_ps(cls + (2 * i) * 8, c[2 * q]);
          _mm256_store_ps(cls + (2 * i + 1) * 8, c[2 * q + 1]);
        }
      }
    }
  }
}

// rows rows of bf16 x (stride K) -> f32 [rows][ldx], per step of 16 k its 8 even values then its 8 odd ones
// (as step() splits them), zeros past K (ldx: K rounded up to 16).
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

// y[m, 0 .. cols) (row stride ldy) for m < MR from the split x rows xs (stride ldx = 8 L) and NV packed
// panels wp (cols <= 8 NV weight rows).
template <int MR, int NV>
GRPO_AVX2 void packed_tile(float* y, int64_t ldy, const float* xs, int64_t ldx, const float* wp, int64_t L,
                           int64_t cols) {
  alignas(32) float part[8][MR][NV * 8];  // each class's sums
  for (int j = 0; j < 8; ++j) {
    __m256 acc[MR][NV];
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m)
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[m][v] = _mm256_setzero_ps();
    const float* wj = wp + j * L * 8;
    for (int64_t t = 0; t < L; ++t) {  // value t of the class: x at 16 (t / 2) + 8 (t % 2) + j
      const float* xt = xs + 8 * t + j;
      __m256 w[NV];
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) w[v] = _mm256_load_ps(wj + (v * 8 * L + t) * 8);
#pragma GCC unroll 8
      for (int m = 0; m < MR; ++m) {
        const __m256 xv = _mm256_broadcast_ss(xt + m * ldx);
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) acc[m][v] = _mm256_fmadd_ps(xv, w[v], acc[m][v]);
      }
    }
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m)
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) _mm256_store_ps(&part[j][m][v * 8], acc[m][v]);
  }
  for (int m = 0; m < MR; ++m)
    for (int v = 0; v < NV; ++v) {  // reduce8's tree: (0+4 + 2+6) + (1+5 + 3+7)
      __m256 s4[4];
      for (int i = 0; i < 4; ++i)
        s4[i] = _mm256_add_ps(_mm256_load_ps(&part[i][m][v * 8]), _mm256_load_ps(&part[i + 4][m][v * 8]));
      const __m256 s = _mm256_add_ps(_mm256_add_ps(s4[0], s4[2]), _mm256_add_ps(s4[1], s4[3]));
      const int64_t n = std::min<int64_t>(8, cols - v * 8);
      if (n == 8) {
        _mm256_storeu_ps(y + m * ldy + v * 8, s);
      } else if (n > 0) {
        alignas(32) float out[8];
        _mm256_store_ps(out, s);
        std::copy_n(out, n, y + m * ldy + v * 8);
      }
    }
}

// packed_tile<mr, NV> for a run-time mr <= MR (the last batch rows).
template <int MR, int NV>
void packed_tile_any(int64_t mr, float* y, int64_t ldy, const float* xs, int64_t ldx, const float* wp, int64_t L,
                     int64_t cols) {
  if constexpr (MR > 0) {
    if (mr < MR) return packed_tile_any<MR - 1, NV>(mr, y, ldy, xs, ldx, wp, L, cols);
    packed_tile<MR, NV>(y, ldy, xs, ldx, wp, L, cols);
  }
}

// Weight rows n0 .. n1 (bf16) against B > kDirectMaxB batch rows (bf16, rounded), K <= kPackMaxK: as many
// groups of kPackRows rows as kPackFloats holds are packed, then each tile of kPackBatch batch rows is
// split once and runs against all of them.
// Not inlined into block(): its buffers would take their stack pages on every call of the other paths too.
[[gnu::noinline]] void packed_rows(float* y, const bf16_t* x, const bf16_t* W, int64_t B, int64_t n0, int64_t n1,
                                   int64_t N, int64_t K) {
  constexpr int64_t G = kPackRows;
  const int64_t ldx = (K + 15) / 16 * 16, L = ldx / 8;
  alignas(32) float wp[kPackFloats];            // groups of [G / 8 panels][8 classes][L][8 rows]
  alignas(32) float xs[kPackBatch * kPackMaxK];  // [kPackBatch][ldx]
  const int64_t region = kPackFloats / (G * ldx) * G;
  for (int64_t n = n0; n < n1; n += region) {
    const int64_t rows = std::min(region, n1 - n);
    for (int64_t g = 0; g < rows; g += G) pack_group(wp + g * ldx, W + (n + g) * K, K, std::min(G, rows - g), G / 8, L);
    for (int64_t b = 0; b < B; b += kPackBatch) {
      const int64_t mr = std::min<int64_t>(kPackBatch, B - b);
      split_rows(xs, ldx, x + b * K, mr, K);
      for (int64_t g = 0; g < rows; g += G)
        packed_tile_any<kPackBatch, G / 8>(mr, y + b * N + n + g, N, xs, ldx, wp + g * ldx, L, std::min(G, rows - g));
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
    if (B > kDirectMaxB && padded <= kPackMaxK) {
      return packed_rows(y, x, W, B, n0, n1, N, K);
    }
  }
  // W's tile of rows stays in L1 while every batch row runs against it
  constexpr int MR = kBatchTile<E>;
  for (int64_t n = n0; n < n1; n += kRowTile)
    for (int64_t b = 0; b < B; b += MR)
      tile_any<MR, kRowTile, false>(std::min<int64_t>(MR, B - b), std::min<int64_t>(kRowTile, n1 - n),
                                    y + b * N + n, N, x + b * K, K, W + n * K, K);
}

template <typename E>
void run(float* y, const E* x, const E* W, int64_t B, int64_t N, int64_t K) {
  // blocks of at most kBlockRows rows (a multiple of the packed group), at least kBlocksPerThread per
  // thread when W is small
  const int64_t threads = num_threads();
  const int64_t by_threads = (N + kBlocksPerThread * threads - 1) / (kBlocksPerThread * threads);
  const int64_t rows_per_block =
      std::min(kBlockRows, std::max<int64_t>(kPackRows, (by_threads + kPackRows - 1) / kPackRows * kPackRows));
  const int64_t blocks = (N + rows_per_block - 1) / rows_per_block;
#pragma omp parallel for schedule(static) if (B * N * K > (1 << 17))
  for (int64_t i = 0; i < blocks; ++i) {
    const int64_t n0 = i * rows_per_block, n1 = std::min(N, n0 + rows_per_block);
    block(y, x, W, B, n0, n1, N, K);
  }
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
