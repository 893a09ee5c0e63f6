// bf16 <-> f32 in AVX2 registers for the rollout kernels (gemv, paged attention, KV writes): 8 lanes,
// round to nearest even with quiet NaNs, the same bits as core/dtype.h's scalar f32_to_bf16.
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "core/dtype.h"

#define GRPO_BF16_AVX2 [[gnu::target("avx2,fma")]]

namespace grpo::cpu {

// 8 f32 -> 8 bf16 (the low 16 bits of each 32-bit lane hold the result).
GRPO_BF16_AVX2 [[gnu::always_inline]] inline __m256i round_bf16_bits(__m256 x) {
  const __m256i u = _mm256_castps_si256(x);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                         _mm256_set1_epi32(0x7f800000));  // signed compare: both operands >= 0
  return _mm256_blendv_epi8(rounded, quiet, nan);
}

// Stores 8 f32 as 8 bf16.
GRPO_BF16_AVX2 [[gnu::always_inline]] inline void store_bf16x8(bf16_t* dst, __m256 x) {
  const __m256i h = round_bf16_bits(x);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm_packus_epi32(_mm256_castsi256_si128(h),
                                                                     _mm256_extracti128_si256(h, 1)));
}

// x [n] f32 -> dst [n] bf16 (tail of n % 8 elements in scalar code, same rounding).
GRPO_BF16_AVX2 inline void f32_to_bf16_avx2(bf16_t* dst, const float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) store_bf16x8(dst + i, _mm256_loadu_ps(x + i));
  for (; i < n; ++i) dst[i] = grpo::f32_to_bf16(x[i]);
}

// 8 bf16 -> 8 f32.
GRPO_BF16_AVX2 [[gnu::always_inline]] inline __m256 load_bf16x8(const bf16_t* p) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

}  // namespace grpo::cpu
