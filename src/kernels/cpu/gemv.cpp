// Small-batch matmul for decode: y [B,N] = x [B,K] . W[N,K]^T with W f32 or bf16, streaming W once per
// group of 4 batch rows (register tile: 4 batch rows x 4 weight rows of 16-lane accumulators). bf16
// weights are widened to f32 in registers (exact), x stays f32. Every y[b,n] is accumulated the same way
// (16-lane partial sums over k in order, masked tail, fixed reduction tree) whatever B, the tile it falls
// in and the thread count. decode_matmul picks gemv or ops::gemm by batch size (crossover measured in
// bench/bench_kernels_paged.cpp).
#include <immintrin.h>

#include <algorithm>

#include "core/error.h"
#include "kernels/backend.h"
#include "kernels/ops.h"
#include "kernels/paged_ops.h"

namespace grpo::ops {

namespace {

constexpr int kRowTile = 4;    // weight rows per tile
constexpr int kBatchTile = 4;  // batch rows per tile

#define GRPO_AVX512 [[gnu::target("avx512f,avx512bw,avx512vl,avx512dq")]]

template <bool kBf16>
GRPO_AVX512 [[gnu::always_inline]] inline __m512 load_w(const void* W, int64_t idx, __mmask16 mask) {
  if constexpr (kBf16) {
    __m256i h = _mm256_maskz_loadu_epi16(mask, static_cast<const bf16_t*>(W) + idx);
    return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xffff, _mm512_maskz_cvtepu16_epi32(0xffff, h), 16));
  } else {
    return _mm512_maskz_loadu_ps(mask, static_cast<const float*>(W) + idx);
  }
}

// Sum of the 16 lanes as a fixed pairwise tree (the same for every output).
GRPO_AVX512 [[gnu::always_inline]] inline float reduce16(__m512 v) {
  alignas(64) float t[16];
  _mm512_store_ps(t, v);
  for (int w = 8; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) t[i] += t[i + w];
  return t[0];
}

// y[b0..b0+NB, n0..n0+NR] for compile-time tile sizes.
template <int NB, int NR, bool kBf16>
GRPO_AVX512 void tile_avx512(float* y, const float* x, const void* W, int64_t b0, int64_t n0, int64_t N, int64_t K) {
  __m512 acc[NB][NR];
  for (int b = 0; b < NB; ++b)
    for (int r = 0; r < NR; ++r) acc[b][r] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; k += 16) {
    const __mmask16 mask = K - k >= 16 ? __mmask16(0xffff) : __mmask16((1u << (K - k)) - 1);
    __m512 w[NR];
    for (int r = 0; r < NR; ++r) w[r] = load_w<kBf16>(W, (n0 + r) * K + k, mask);
    for (int b = 0; b < NB; ++b) {
      const __m512 xv = _mm512_maskz_loadu_ps(mask, x + (b0 + b) * K + k);
      for (int r = 0; r < NR; ++r) acc[b][r] = _mm512_fmadd_ps(xv, w[r], acc[b][r]);
    }
  }
  for (int b = 0; b < NB; ++b)
    for (int r = 0; r < NR; ++r) y[(b0 + b) * N + n0 + r] = reduce16(acc[b][r]);
}

template <int NR, bool kBf16>
GRPO_AVX512 void rows_avx512(float* y, const float* x, const void* W, int64_t B, int64_t n0, int64_t N, int64_t K) {
  int64_t b0 = 0;
  for (; b0 + kBatchTile <= B; b0 += kBatchTile) tile_avx512<kBatchTile, NR, kBf16>(y, x, W, b0, n0, N, K);
  switch (B - b0) {
    case 1: tile_avx512<1, NR, kBf16>(y, x, W, b0, n0, N, K); break;
    case 2: tile_avx512<2, NR, kBf16>(y, x, W, b0, n0, N, K); break;
    case 3: tile_avx512<3, NR, kBf16>(y, x, W, b0, n0, N, K); break;
    default: break;
  }
}

template <bool kBf16>
void gemv_avx512(float* y, const float* x, const void* W, int64_t B, int64_t N, int64_t K) {
  const int64_t tiles = (N + kRowTile - 1) / kRowTile;
#pragma omp parallel for schedule(static) if (N * K * (kBf16 ? 2 : 4) > (1 << 18))
  for (int64_t i = 0; i < tiles; ++i) {
    const int64_t n0 = i * kRowTile;
    switch (std::min<int64_t>(kRowTile, N - n0)) {
      case 4: rows_avx512<4, kBf16>(y, x, W, B, n0, N, K); break;
      case 3: rows_avx512<3, kBf16>(y, x, W, B, n0, N, K); break;
      case 2: rows_avx512<2, kBf16>(y, x, W, B, n0, N, K); break;
      default: rows_avx512<1, kBf16>(y, x, W, B, n0, N, K); break;
    }
  }
}

// Baseline: one output at a time, 16 partial sums like the AVX-512 path.
void gemv_baseline(float* y, const float* x, const void* W, DType w_dtype, int64_t B, int64_t N, int64_t K) {
#pragma omp parallel for schedule(static) if (N * K > (1 << 16))
  for (int64_t n = 0; n < N; ++n)
    for (int64_t b = 0; b < B; ++b) {
      float part[16] = {};
      for (int64_t k = 0; k < K; ++k) {
        const float w = w_dtype == DType::BF16 ? grpo::bf16_to_f32(static_cast<const bf16_t*>(W)[n * K + k])
                                               : static_cast<const float*>(W)[n * K + k];
        part[k % 16] += x[b * K + k] * w;
      }
      float sum = 0;
      for (float p : part) sum += p;
      y[b * N + n] = sum;
    }
}

}  // namespace

void gemv(float* y, const float* x, const void* W, DType w_dtype, int64_t B, int64_t N, int64_t K) {
  GRPO_CHECK(w_dtype == DType::F32 || w_dtype == DType::BF16, "[gemv] W must be f32 or bf16, got ",
             dtype_name(w_dtype));
  GRPO_CHECK(B >= 0 && N >= 0 && K >= 0, "[gemv] negative size B=", B, " N=", N, " K=", K);
  if (B == 0 || N == 0) return;
  if (!cpu_has_avx512()) return gemv_baseline(y, x, W, w_dtype, B, N, K);
  if (w_dtype == DType::BF16)
    gemv_avx512<true>(y, x, W, B, N, K);
  else
    gemv_avx512<false>(y, x, W, B, N, K);
}

void decode_matmul(float* y, const float* x, bf16_t* x_bf16, const void* W, DType w_dtype, int64_t B, int64_t N,
                   int64_t K) {
  if (B <= kGemvMaxBatch) return gemv(y, x, W, w_dtype, B, N, K);
  if (w_dtype == DType::F32) return gemm(Trans::N, Trans::T, B, N, K, 1.0f, x, K, W, K, 0.0f, y, N, DType::F32);
  GRPO_CHECK(x_bf16, "[decode_matmul] bf16 weights with B = ", B, " > ", kGemvMaxBatch, " need an x_bf16 buffer");
  f32_to_bf16(x_bf16, x, B * K);
  gemm(Trans::N, Trans::T, B, N, K, 1.0f, x_bf16, K, W, K, 0.0f, y, N, DType::BF16);
}

}  // namespace grpo::ops
