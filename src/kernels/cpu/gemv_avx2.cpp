// AVX2 + FMA body of ops::gemv (CPUs without AVX-512): y [B,N] = x [B,K] . W[N,K]^T, blocked like a GEMM
// for the caches. Threads share out blocks of weight rows sized to stay in L2 (kBlockBytes); each block
// runs against the batch kBatchTile rows at a time, whose x stays in L1 while the block's register tiles
// (kBatchTile x kRowTile 8-lane accumulators) stream W from L2. W is read from memory once per call, on
// the first pass over each block (prefetched ahead). bf16 W: x is rounded to bf16 once (into x_scratch);
// 16 bf16 of a W row are read as two f32 vectors, its even and its odd elements (a shift and a mask), and
// a batch tile's x rows are widened to f32 in the same order once per block (a stack buffer, for rows of
// up to kMaxWidenK; longer rows are split in registers like W).
// Every y[b,n] is summed the same way whatever B, its tile, its block and the thread count: lane i holds
// the products of k = 8j+i (f32) or k = 16j+2i then 16j+2i+1 (bf16) in order of j, a zero-filled tail,
// then reduce8's fixed tree (lane_sums.h).
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

// Register tiles, batch rows x weight rows (measured with bench_kernels_paged.cpp's shapes, one thread):
// f32 4 x 3 (12 accumulators, 3 W and one x vector: the 16 ymm registers); bf16 3 x 3 (the W halves need a
// mask register too; 4 x 3 spills, at 0.8x the speed, 4 x 2 and 2 x 4 run at 0.93x).
template <bool kBf16>
constexpr int kBatchTile = kBf16 ? 3 : 4;  // batch rows per register tile
constexpr int kRowTile = 3;                 // weight rows per register tile
constexpr int kPrefetchTiles = 2;           // how far ahead the first pass over a block prefetches W
constexpr int64_t kMaxWidenK = 4096;        // bf16 x rows up to this long are widened once per block (stack)
constexpr int64_t kBlockBytes = 128 << 10;  // weight rows per block: this many bytes (a quarter of a 512 KiB L2)
constexpr int64_t kBlocksPerThread = 4;

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

// The first pass over a block reads W from memory. Its NR rows are contiguous, so the tile kPrefetchTiles
// ahead is fetched as one linear sweep (a k step reads 32 bytes of each row: NR x 32 bytes of the sweep);
// reading the rows' own streams ahead gets half the memory bandwidth.
template <int NR, typename E>
GRPO_AVX2 [[gnu::always_inline]] inline void prefetch_ahead(const E* p) {
  const char* c = reinterpret_cast<const char*>(p);
  _mm_prefetch(c, _MM_HINT_T0);
  if constexpr (NR > 2) _mm_prefetch(c + 64, _MM_HINT_T0);
}

// f32 W against MR rows of x, x0 [MR, K]: y[b0 .. b0+MR, n0 .. n0+NR], k in steps of 8, masked tail.
template <int MR, int NR, bool kPrefetch>
GRPO_AVX2 void tile_f32(float* y, const float* x0, const float* W, int64_t b0, int64_t n0, int64_t N, int64_t K) {
  __m256 acc[MR * NR];
#pragma GCC unroll 16
  for (int i = 0; i < MR * NR; ++i) acc[i] = _mm256_setzero_ps();
  const float* w0 = W + n0 * K;
  int64_t k = 0;
#pragma GCC unroll 2
  for (; k + 8 <= K; k += 8) {
    __m256 w[NR];
#pragma GCC unroll 16
    for (int r = 0; r < NR; ++r) w[r] = _mm256_loadu_ps(w0 + r * K + k);
    if constexpr (kPrefetch) prefetch_ahead<NR>(w0 + kPrefetchTiles * NR * K + NR * k);
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

// x [16] of a row as f32, even (0, 2, .., 14) or odd (1, 3, .., 15) elements: from bf16 (split in registers)
// or from a row widened beforehand (widen_x_rows: the 8 even values, then the 8 odd ones).
template <bool kOdd>
GRPO_AVX2 [[gnu::always_inline]] inline __m256 x_half(const bf16_t* x) {
  return kOdd ? odd_bf16(load16(x)) : even_bf16(load16(x));
}
template <bool kOdd>
GRPO_AVX2 [[gnu::always_inline]] inline __m256 x_half(const float* x) {
  return _mm256_loadu_ps(x + (kOdd ? 8 : 0));
}

// One k step of 16 for bf16 rows w0 + r*ldw (NR of them) against x rows x0 + m*ldx (MR of them, bf16 or
// widened f32): the even elements into every accumulator, then the odd ones (two passes keep the
// accumulators, NR W vectors and one x vector in registers).
template <int MR, int NR, typename X>
GRPO_AVX2 [[gnu::always_inline]] inline void step_bf16(__m256 (&acc)[MR * NR], const bf16_t* w0, int64_t ldw,
                                                       const X* x0, int64_t ldx) {
  __m256 w[NR];
#pragma GCC unroll 16
  for (int r = 0; r < NR; ++r) w[r] = even_bf16(load16(w0 + r * ldw));
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m) {
    const __m256 xv = x_half<false>(x0 + m * ldx);
#pragma GCC unroll 16
    for (int r = 0; r < NR; ++r) acc[m * NR + r] = _mm256_fmadd_ps(xv, w[r], acc[m * NR + r]);
  }
#pragma GCC unroll 16
  for (int r = 0; r < NR; ++r) w[r] = odd_bf16(load16(w0 + r * ldw));
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m) {
    const __m256 xv = x_half<true>(x0 + m * ldx);
#pragma GCC unroll 16
    for (int r = 0; r < NR; ++r) acc[m * NR + r] = _mm256_fmadd_ps(xv, w[r], acc[m * NR + r]);
  }
}

// bf16 W against MR rows of x, xr [MR, ldx] (bf16, already rounded, or widened to f32 by widen_x_rows):
// y[b0 .. b0+MR, n0 .. n0+NR], k in steps of 16. W's tail is copied into zero-filled rows of 16 (no 16-bit
// masked loads in AVX2), and so is a bf16 x's (a widened row is zero-filled already).
template <int MR, int NR, bool kPrefetch, typename X>
GRPO_AVX2 void tile_bf16(float* y, const X* xr, int64_t ldx, const bf16_t* W, int64_t b0, int64_t n0, int64_t N,
                         int64_t K) {
  __m256 acc[MR * NR];
#pragma GCC unroll 16
  for (int i = 0; i < MR * NR; ++i) acc[i] = _mm256_setzero_ps();
  const bf16_t* w0 = W + n0 * K;
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    if constexpr (kPrefetch) prefetch_ahead<NR>(w0 + kPrefetchTiles * NR * K + NR * k);
    step_bf16<MR, NR>(acc, w0 + k, K, xr + k, ldx);
  }
  if (k < K) {
    alignas(32) bf16_t wt[NR][16] = {};
    for (int r = 0; r < NR; ++r) std::memcpy(wt[r], w0 + r * K + k, (K - k) * sizeof(bf16_t));
    if constexpr (std::is_same_v<X, float>) {
      step_bf16<MR, NR>(acc, wt[0], 16, xr + k, ldx);
    } else {
      alignas(32) bf16_t xt[MR][16] = {};
      for (int m = 0; m < MR; ++m) std::memcpy(xt[m], xr + m * ldx + k, (K - k) * sizeof(bf16_t));
      step_bf16<MR, NR>(acc, wt[0], 16, xt[0], 16);
    }
  }
  store_tile<MR, NR>(y, acc, b0, n0, N);
}

// M rows of bf16 x (xb, row stride K) widened to f32 in the order the bf16 tiles read them: per 16 values
// the 8 even ones, then the 8 odd ones; rows of ldf = K rounded up to 16, zero-filled.
GRPO_AVX2 void widen_x_rows(float* xf, int64_t ldf, const bf16_t* xb, int64_t M, int64_t K) {
  for (int64_t m = 0; m < M; ++m) {
    const bf16_t* src = xb + m * K;
    float* dst = xf + m * ldf;
    int64_t k = 0;
    for (; k + 16 <= K; k += 16) {
      const __m256i v = load16(src + k);
      _mm256_storeu_ps(dst + k, even_bf16(v));
      _mm256_storeu_ps(dst + k + 8, odd_bf16(v));
    }
    if (k < K) {
      alignas(32) bf16_t t[16] = {};
      std::memcpy(t, src + k, (K - k) * sizeof(bf16_t));
      const __m256i v = load16(t);
      _mm256_storeu_ps(dst + k, even_bf16(v));
      _mm256_storeu_ps(dst + k + 8, odd_bf16(v));
    }
  }
}

// Weight rows n0 .. n1 against MR batch rows from b: NR rows per tile, the last N % NR one by one. xr: the
// rows' x (f32 for f32 W; bf16 or widened f32 for bf16 W) with leading dimension ldx.
template <int MR, int NR, bool kPrefetch, bool kBf16, typename X>
void row_tiles(float* y, const X* xr, int64_t ldx, const void* W, int64_t b, int64_t n0, int64_t n1, int64_t N,
               int64_t K) {
  int64_t n = n0;
  if constexpr (kBf16) {
    const bf16_t* Wb = static_cast<const bf16_t*>(W);
    for (; n + NR <= n1; n += NR) tile_bf16<MR, NR, kPrefetch>(y, xr, ldx, Wb, b, n, N, K);
    for (; n < n1; ++n) tile_bf16<MR, 1, kPrefetch>(y, xr, ldx, Wb, b, n, N, K);
  } else {
    const float* Wf = static_cast<const float*>(W);
    for (; n + NR <= n1; n += NR) tile_f32<MR, NR, kPrefetch>(y, xr, Wf, b, n, N, K);  // (ldx == K)
    for (; n < n1; ++n) tile_f32<MR, 1, kPrefetch>(y, xr, Wf, b, n, N, K);
  }
}

// M batch rows from b (M <= the batch tile; first: the block's first pass) against weight rows n0 .. n1.
// bf16 W: x is widened once for the block's tiles when its rows fit the stack buffer.
template <int M, bool kBf16>
void group(float* y, const void* x, const void* W, bool first, int64_t b, int64_t n0, int64_t n1, int64_t N,
           int64_t K) {
  constexpr int NR = kRowTile;
  auto go = [&](const auto* xr, int64_t ldx) {
    if (first)
      row_tiles<M, NR, true, kBf16>(y, xr, ldx, W, b, n0, n1, N, K);
    else
      row_tiles<M, NR, false, kBf16>(y, xr, ldx, W, b, n0, n1, N, K);
  };
  if constexpr (kBf16) {
    const bf16_t* xb = static_cast<const bf16_t*>(x) + b * K;
    const int64_t ldf = (K + 15) / 16 * 16;
    if (ldf <= kMaxWidenK) {
      alignas(32) float xf[kBatchTile<true> * kMaxWidenK];
      widen_x_rows(xf, ldf, xb, M, K);
      return go(static_cast<const float*>(xf), ldf);
    }
    go(xb, K);
  } else {
    go(static_cast<const float*>(x) + b * K, K);
  }
}

// The last M rows of the batch (M < the batch tile).
template <int M, bool kBf16>
void leftover_rows(float* y, const void* x, const void* W, int64_t m, bool first, int64_t b, int64_t n0, int64_t n1,
                   int64_t N, int64_t K) {
  if constexpr (M > 0) {
    if (m != M) return leftover_rows<M - 1, kBf16>(y, x, W, m, first, b, n0, n1, N, K);
    group<M, kBf16>(y, x, W, first, b, n0, n1, N, K);
  }
}

// One block of weight rows n0 .. n1 (it stays in L2) against every batch row: kBatchTile rows at a time
// (their x stays in L1 over the block's tiles), then the rest. The first pass streams W from memory.
template <bool kBf16>
void block(float* y, const void* x, const void* W, int64_t B, int64_t n0, int64_t n1, int64_t N, int64_t K) {
  constexpr int MR = kBatchTile<kBf16>;
  int64_t b = 0;
  for (; b + MR <= B; b += MR) group<MR, kBf16>(y, x, W, b == 0, b, n0, n1, N, K);
  leftover_rows<MR - 1, kBf16>(y, x, W, B - b, b == 0, b, n0, n1, N, K);
}

template <bool kBf16>
void run(float* y, const void* x, const void* W, int64_t B, int64_t N, int64_t K) {
  constexpr int NR = kRowTile;
  const int64_t w_row_bytes = std::max<int64_t>(1, K * (kBf16 ? 2 : 4));
  // L2-sized blocks, but at least kBlocksPerThread per thread when W is small (the threads' shares even out)
  const int64_t by_cache = std::max<int64_t>(NR, kBlockBytes / w_row_bytes / NR * NR);
  const int64_t by_threads = (N + kBlocksPerThread * num_threads() - 1) / (kBlocksPerThread * num_threads());
  const int64_t rows_per_block = std::min(by_cache, std::max<int64_t>(NR, (by_threads + NR - 1) / NR * NR));
  const int64_t blocks = (N + rows_per_block - 1) / rows_per_block;
#pragma omp parallel for schedule(static) if (B * N * K > (1 << 17))
  for (int64_t i = 0; i < blocks; ++i)
    block<kBf16>(y, x, W, B, i * rows_per_block, std::min(N, (i + 1) * rows_per_block), N, K);
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
