// AVX2 + FMA body of ops::gemv (CPUs without AVX-512): y [B,N] = x [B,K] . W[N,K]^T. Each thread takes
// tiles of kRowTile weight rows and runs batch rows against them, kBatchTile at a time (8-lane
// accumulators in registers), the 1-3 rows left in a narrower tile, so W is read from memory once per
// call (once per batch chunk: x is cut into chunks that stay in L2 while every row tile runs over them). bf16 W: x is rounded to bf16 once (into x_scratch),
// and 16 bf16 of a row are read as two f32 vectors, the even and the odd elements (a shift and a mask),
// both folded into the same accumulator.
// Every y[b,n] is summed the same way whatever B, its tile and the thread count: lane i holds the products
// of k = 8j+i (f32) or k = 16j+2i then 16j+2i+1 (bf16) in order of j, a zero-filled tail, then reduce8's
// fixed tree (lane_sums.h).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/bf16_avx2.h"
#include "kernels/cpu/gemv_kernels.h"
#include "kernels/cpu/lane_sums.h"

namespace grpo::ops::cpu_gemv {
namespace {

#define GRPO_AVX2 [[gnu::target("avx2,fma")]]

// Register tiles (batch rows x weight rows): f32 4 x 3 (12 accumulators, 3 W, 1 x of the 16 ymm registers);
// bf16 4 x 2 (the conversions need registers too: 4 x 3 spills, at 0.6x the speed; 4 x 2, 3 x 3 and 2 x 4
// measured alike, bench_kernels_paged.cpp, one thread).
constexpr int kBatchTile = 4;  // batch rows per register tile
template <bool kBf16>
constexpr int kRowTile = kBf16 ? 2 : 3;     // weight rows per register tile
constexpr int kPrefetchRows = 6;            // how far ahead the first pass over a row tile prefetches W
constexpr int64_t kChunkBytes = 192 << 10;  // x rows per batch chunk: this many bytes (half of a 512 KiB L2)

// Lane sums of acc [R] into out [R]: four at a time, then one by one.
template <int R>
GRPO_AVX2 [[gnu::always_inline]] inline void lane_sums(float* out, const __m256 (&acc)[R]) {
  int i = 0;
#pragma GCC unroll 16
  for (; i + 4 <= R; i += 4) _mm_storeu_ps(out + i, cpu::reduce4x8(acc[i], acc[i + 1], acc[i + 2], acc[i + 3]));
#pragma GCC unroll 4
  for (; i < R; ++i) out[i] = cpu::reduce8(acc[i]);
}

// Stores the MR x NR sums of acc (row-major: batch row m, weight row r) into y.
template <int MR, int NR>
GRPO_AVX2 [[gnu::always_inline]] inline void store_tile(float* y, const __m256 (&acc)[MR * NR], int64_t b0,
                                                        int64_t n0, int64_t N) {
  float s[MR * NR];
  lane_sums<MR * NR>(s, acc);
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 16
    for (int r = 0; r < NR; ++r) y[(b0 + m) * N + n0 + r] = s[m * NR + r];
}

GRPO_AVX2 [[gnu::always_inline]] inline __m256i first_lanes(int64_t n) {  // n in [0, 8]
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), idx);
}

// f32 W: y[b0 .. b0+MR, n0 .. n0+NR], k in steps of 8, masked tail.
template <int MR, int NR, bool kPrefetch>
GRPO_AVX2 void tile_f32(float* y, const float* x, const float* W, int64_t b0, int64_t n0, int64_t N, int64_t K) {
  __m256 acc[MR * NR];
#pragma GCC unroll 16
  for (int i = 0; i < MR * NR; ++i) acc[i] = _mm256_setzero_ps();
  const float* w0 = W + n0 * K;
  const float* x0 = x + b0 * K;
  int64_t k = 0;
  for (; k + 8 <= K; k += 8) {
    __m256 w[NR];
#pragma GCC unroll 16
    for (int r = 0; r < NR; ++r) {
      w[r] = _mm256_loadu_ps(w0 + r * K + k);
      if constexpr (kPrefetch)
        if ((k & 15) == 0) _mm_prefetch(reinterpret_cast<const char*>(w0 + (r + kPrefetchRows) * K + k), _MM_HINT_T0);
    }
#pragma GCC unroll 16
    for (int m = 0; m < MR; ++m) {
      const __m256 xv = _mm256_loadu_ps(x0 + m * K + k);
#pragma GCC unroll 16
      for (int r = 0; r < NR; ++r) acc[m * NR + r] = _mm256_fmadd_ps(xv, w[r], acc[m * NR + r]);
    }
  }
  if (k < K) {
    const __m256i mask = first_lanes(K - k);
    __m256 w[NR];
#pragma GCC unroll 16
    for (int r = 0; r < NR; ++r) w[r] = _mm256_maskload_ps(w0 + r * K + k, mask);
#pragma GCC unroll 16
    for (int m = 0; m < MR; ++m) {
      const __m256 xv = _mm256_maskload_ps(x0 + m * K + k, mask);
#pragma GCC unroll 16
      for (int r = 0; r < NR; ++r) acc[m * NR + r] = _mm256_fmadd_ps(xv, w[r], acc[m * NR + r]);
    }
  }
  store_tile<MR, NR>(y, acc, b0, n0, N);
}

// 16 bf16 as f32: the even elements (0, 2, .., 14) and the odd ones (1, 3, .., 15).
GRPO_AVX2 [[gnu::always_inline]] inline __m256 even_bf16(__m256i v) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}
GRPO_AVX2 [[gnu::always_inline]] inline __m256 odd_bf16(__m256i v) {
  return _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(static_cast<int>(0xffff0000u))));
}
GRPO_AVX2 [[gnu::always_inline]] inline __m256i load16(const bf16_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// One k step of 16 for bf16 rows w0 + r*ldw (NR of them) against x rows x0 + m*ldx (MR of them): the even
// elements into every accumulator, then the odd ones (two passes keep 12 + 3 + 1 registers live).
template <int MR, int NR>
GRPO_AVX2 [[gnu::always_inline]] inline void step_bf16(__m256 (&acc)[MR * NR], const bf16_t* w0, int64_t ldw,
                                                       const bf16_t* x0, int64_t ldx) {
  __m256 w[NR];
#pragma GCC unroll 16
  for (int r = 0; r < NR; ++r) w[r] = even_bf16(load16(w0 + r * ldw));
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m) {
    const __m256 xv = even_bf16(load16(x0 + m * ldx));
#pragma GCC unroll 16
    for (int r = 0; r < NR; ++r) acc[m * NR + r] = _mm256_fmadd_ps(xv, w[r], acc[m * NR + r]);
  }
#pragma GCC unroll 16
  for (int r = 0; r < NR; ++r) w[r] = odd_bf16(load16(w0 + r * ldw));
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m) {
    const __m256 xv = odd_bf16(load16(x0 + m * ldx));
#pragma GCC unroll 16
    for (int r = 0; r < NR; ++r) acc[m * NR + r] = _mm256_fmadd_ps(xv, w[r], acc[m * NR + r]);
  }
}

// bf16 W and x (xb [B, K], already rounded): y[b0 .. b0+MR, n0 .. n0+NR], k in steps of 16; the tail is
// copied into zero-filled rows of 16 (no 16-bit masked loads in AVX2).
template <int MR, int NR, bool kPrefetch>
GRPO_AVX2 void tile_bf16(float* y, const bf16_t* xb, const bf16_t* W, int64_t b0, int64_t n0, int64_t N,
                         int64_t K) {
  __m256 acc[MR * NR];
#pragma GCC unroll 16
  for (int i = 0; i < MR * NR; ++i) acc[i] = _mm256_setzero_ps();
  const bf16_t* w0 = W + n0 * K;
  const bf16_t* x0 = xb + b0 * K;
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    if constexpr (kPrefetch)
#pragma GCC unroll 16
      for (int r = 0; r < NR; ++r)
        if ((k & 31) == 0) _mm_prefetch(reinterpret_cast<const char*>(w0 + (r + kPrefetchRows) * K + k), _MM_HINT_T0);
    step_bf16<MR, NR>(acc, w0 + k, K, x0 + k, K);
  }
  if (k < K) {
    alignas(32) bf16_t wt[NR][16] = {}, xt[MR][16] = {};
    for (int r = 0; r < NR; ++r) std::memcpy(wt[r], w0 + r * K + k, (K - k) * sizeof(bf16_t));
    for (int m = 0; m < MR; ++m) std::memcpy(xt[m], x0 + m * K + k, (K - k) * sizeof(bf16_t));
    step_bf16<MR, NR>(acc, wt[0], 16, xt[0], 16);
  }
  store_tile<MR, NR>(y, acc, b0, n0, N);
}

template <int MR, int NR, bool kPrefetch, bool kBf16>
[[gnu::always_inline]] inline void tile(float* y, const void* x, const void* W, int64_t b0, int64_t n0, int64_t N,
                                        int64_t K) {
  if constexpr (kBf16)
    tile_bf16<MR, NR, kPrefetch>(y, static_cast<const bf16_t*>(x), static_cast<const bf16_t*>(W), b0, n0, N, K);
  else
    tile_f32<MR, NR, kPrefetch>(y, static_cast<const float*>(x), static_cast<const float*>(W), b0, n0, N, K);
}

// Batch rows b0 .. b1 against weight rows n0 .. n0+NR: kBatchTile rows at a time, then the 1-3 left in one
// narrower tile. The first tile streams W from memory (with prefetch); the others find it in L1.
template <int NR, bool kBf16>
void rows(float* y, const void* x, const void* W, int64_t b0, int64_t b1, int64_t n0, int64_t N, int64_t K) {
  int64_t b = b0;
  bool first = true;
  constexpr int MR = kBatchTile;
  for (; b + MR <= b1; b += MR, first = false) {
    if (first)
      tile<MR, NR, true, kBf16>(y, x, W, b, n0, N, K);
    else
      tile<MR, NR, false, kBf16>(y, x, W, b, n0, N, K);
  }
  switch (b1 - b) {
    case 3: return first ? tile<3, NR, true, kBf16>(y, x, W, b, n0, N, K) : tile<3, NR, false, kBf16>(y, x, W, b, n0, N, K);
    case 2: return first ? tile<2, NR, true, kBf16>(y, x, W, b, n0, N, K) : tile<2, NR, false, kBf16>(y, x, W, b, n0, N, K);
    case 1: return first ? tile<1, NR, true, kBf16>(y, x, W, b, n0, N, K) : tile<1, NR, false, kBf16>(y, x, W, b, n0, N, K);
    default: return;
  }
}

template <bool kBf16>
void run(float* y, const void* x, const void* W, int64_t B, int64_t N, int64_t K) {
  const int64_t x_row_bytes = K * (kBf16 ? 2 : 4);
  constexpr int MR = kBatchTile, NR = kRowTile<kBf16>;
  const int64_t chunk = std::max<int64_t>(MR, kChunkBytes / std::max<int64_t>(x_row_bytes, 1) / MR * MR);
  const int64_t full = N / NR, left = N % NR;
  for (int64_t b0 = 0; b0 < B; b0 += chunk) {
    const int64_t b1 = std::min(B, b0 + chunk);
#pragma omp parallel for schedule(static) if ((b1 - b0) * N * K > (1 << 17))
    for (int64_t i = 0; i <= full; ++i) {
      if (i < full) {
        rows<NR, kBf16>(y, x, W, b0, b1, i * NR, N, K);
      } else {
        for (int64_t n = full * NR; n < full * NR + left; ++n) rows<1, kBf16>(y, x, W, b0, b1, n, N, K);
      }
    }
  }
}

// x [B, K] -> bf16 rows (the rounding of the bf16 path).
GRPO_AVX2 void convert_x(bf16_t* xb, const float* x, int64_t B, int64_t K) { cpu::f32_to_bf16_avx2(xb, x, B * K); }

}  // namespace

void gemv_avx2(float* y, const float* x, bf16_t* x_scratch, const void* W, DType w_dtype, int64_t B, int64_t N,
               int64_t K) {
  if (w_dtype == DType::F32) return run<false>(y, x, W, B, N, K);
  convert_x(x_scratch, x, B, K);
  run<true>(y, x_scratch, W, B, N, K);
}

}  // namespace grpo::ops::cpu_gemv
