// Fixed-order horizontal sums of f32 accumulators, shared by the rollout kernels (gemv, paged attention)
// whose results must not depend on how work is tiled.
// AVX-512: reduce16 adds lanes i and i+8, then j and j+4, then 0+2 / 1+3, then the last pair; reduce4x16
// makes the same additions for four accumulators at once.
// AVX2: reduce8 adds lanes i and i+4, then 0+2 / 1+3, then the last pair; reduce4x8 makes the same
// additions for four accumulators at once.
// Each "x4" form gives bitwise the same four sums as its one-vector form (tested in tests/kernels_paged).
#pragma once
// GCC 12's AVX-512 headers trip -W(maybe-)uninitialized on their own _mm512_undefined_*() (GCC bug 105593)
// where the shuffles below are inlined; as in nn_simd.h, the warning is off in the files that include this.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#define GRPO_LANE_SUMS_AVX512 [[gnu::target("avx512f,avx512bw,avx512vl,avx512dq")]]
#define GRPO_LANE_SUMS_AVX2 [[gnu::target("avx2,fma")]]

namespace grpo::cpu {

GRPO_LANE_SUMS_AVX512 [[gnu::always_inline]] inline float reduce16(__m512 v) {
  const __m256 lo = _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xf, _mm512_castps_pd(v), 0));
  const __m256 hi = _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xf, _mm512_castps_pd(v), 1));
  const __m256 s8 = _mm256_add_ps(lo, hi);
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

// [reduce16(a), reduce16(b), reduce16(c), reduce16(d)], four vectors per instruction.
GRPO_LANE_SUMS_AVX512 [[gnu::always_inline]] inline __m128 reduce4x16(__m512 a, __m512 b, __m512 c, __m512 d) {
  // 128-bit lanes L0..L3; x[i] + x[i+8] = L0+L2 and L1+L3 of each, two vectors per register.
  const __m512 s8ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
  const __m512 s8cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0x44), _mm512_shuffle_f32x4(c, d, 0xEE));
  // s8[j] + s8[j+4]: lane k of the result holds vector k's four partial sums.
  const __m512 s4 = _mm512_add_ps(_mm512_shuffle_f32x4(s8ab, s8cd, 0x88), _mm512_shuffle_f32x4(s8ab, s8cd, 0xDD));
  const __m512 s2 = _mm512_add_ps(s4, _mm512_permute_ps(s4, 0xEE));  // s4[0]+s4[2], s4[1]+s4[3]
  const __m512 s1 = _mm512_add_ps(s2, _mm512_permute_ps(s2, 0x01));  // s2[0]+s2[1]
  return _mm512_castps512_ps128(_mm512_maskz_compress_ps(0x1111, s1));
}

GRPO_LANE_SUMS_AVX2 [[gnu::always_inline]] inline float reduce8(__m256 v) {
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

// [reduce8(a), reduce8(b), reduce8(c), reduce8(d)].
GRPO_LANE_SUMS_AVX2 [[gnu::always_inline]] inline __m128 reduce4x8(__m256 a, __m256 b, __m256 c, __m256 d) {
  // x[i] + x[i+4]: 128-bit halves [a | b] and [c | d].
  const __m256 s4ab = _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20), _mm256_permute2f128_ps(a, b, 0x31));
  const __m256 s4cd = _mm256_add_ps(_mm256_permute2f128_ps(c, d, 0x20), _mm256_permute2f128_ps(c, d, 0x31));
  // s4[0]+s4[2], s4[1]+s4[3]: halves [a0 a1 c0 c1 | b0 b1 d0 d1].
  const __m256 s2 = _mm256_add_ps(_mm256_shuffle_ps(s4ab, s4cd, 0x44), _mm256_shuffle_ps(s4ab, s4cd, 0xEE));
  // s2[0]+s2[1]: halves [a c a c | b d b d].
  const __m256 s1 = _mm256_add_ps(_mm256_shuffle_ps(s2, s2, 0x88), _mm256_shuffle_ps(s2, s2, 0xDD));
  return _mm_unpacklo_ps(_mm256_castps256_ps128(s1), _mm256_extractf128_ps(s1, 1));
}

}  // namespace grpo::cpu
