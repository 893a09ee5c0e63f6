// AVX2 + FMA row operations of paged attention (paged_attention.cpp's Rows interface): 8 lanes, bf16 and
// int8 k/v rows converted in registers, tails of head dims that are not a multiple of 8 through
// zero-filled copies (f32: masked loads). Sums in a fixed order: lanes along d, then reduce8's tree.
#pragma once
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/dtype.h"
#include "kernels/cpu/bf16_avx2.h"
#include "kernels/cpu/lane_sums.h"

#define GRPO_PAGED_AVX2 [[gnu::target("avx2,fma")]]

namespace grpo::cpu {

struct Avx2Rows {
  GRPO_PAGED_AVX2 [[gnu::always_inline]] static inline __m256i first(int64_t n) {  // lanes < n (n in [0, 8])
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  // 8 elements of a row as f32.
  template <typename E>
  GRPO_PAGED_AVX2 [[gnu::always_inline]] static inline __m256 load(const E* p) {
    if constexpr (std::is_same_v<E, float>) {
      return _mm256_loadu_ps(p);
    } else if constexpr (std::is_same_v<E, bf16_t>) {
      return load_bf16x8(p);
    } else {
      return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
    }
  }
  // The first n (< 8) elements, the others zero; never reads past p + n.
  template <typename E>
  GRPO_PAGED_AVX2 [[gnu::always_inline]] static inline __m256 load_n(const E* p, int64_t n) {
    if constexpr (std::is_same_v<E, float>) {
      return _mm256_maskload_ps(p, first(n));
    } else {
      alignas(16) E tmp[16] = {};
      std::memcpy(tmp, p, n * sizeof(E));
      return load(tmp);
    }
  }
  template <typename E>
  GRPO_PAGED_AVX2 static inline float dot(const float* q, const E* row, int64_t D) {
    __m256 acc = _mm256_setzero_ps();
    int64_t d = 0;
    for (; d + 8 <= D; d += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + d), load(row + d), acc);
    if (d < D) acc = _mm256_fmadd_ps(_mm256_maskload_ps(q + d, first(D - d)), load_n(row + d, D - d), acc);
    return reduce8(acc);
  }
  // dot() of four consecutive rows (stride D), the same sums, reduced together.
  template <typename E>
  GRPO_PAGED_AVX2 static inline void dot4(float* out, const float* q, const E* rows, int64_t D) {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    int64_t d = 0;
    for (; d + 8 <= D; d += 8) {
      const __m256 qv = _mm256_loadu_ps(q + d);
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r) acc[r] = _mm256_fmadd_ps(qv, load(rows + r * D + d), acc[r]);
    }
    if (d < D) {
      const __m256 qv = _mm256_maskload_ps(q + d, first(D - d));
      for (int r = 0; r < 4; ++r) acc[r] = _mm256_fmadd_ps(qv, load_n(rows + r * D + d, D - d), acc[r]);
    }
    _mm_storeu_ps(out, reduce4x8(acc[0], acc[1], acc[2], acc[3]));
  }
  // e^x for x <= 0 (scores minus their max): 2^n * 2^f with n = round(x log2 e), |f| <= 1/2, and 2^f from
  // its Taylor series to degree 7; x is clamped at -87 so that 2^n stays a normal float (e^-87 ~ 1.6e-38
  // stands for anything smaller, next to the block maximum's 1).
  GRPO_PAGED_AVX2 static inline __m256 exp_nonpositive(__m256 x) {
    const __m256 t = _mm256_mul_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(1.44269504088896341f));
    const __m256 n = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 f = _mm256_sub_ps(t, n);
    constexpr float c[8] = {1.0f, 0.6931471805599453f, 0.2402265069591007f, 0.055504108664821576f,
                            0.009618129107628477f, 0.0013333558146428441f, 0.00015403530393381606f,
                            1.5252733804059838e-05f};
    __m256 p = _mm256_set1_ps(c[7]);
    for (int k = 6; k >= 0; --k) p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(c[k]));
    const __m256i two_n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(two_n));
  }
  // og [8 CH] = og * c + sum_j p_j v_j with the CH chunks of 8 dims in registers over the block's rows
  // (row stride D); each element summed in the same order as the generic loop of fold_block.
  template <int CH, typename E>
  GRPO_PAGED_AVX2 [[gnu::always_inline]] static inline void fold_rows(float* og, const float* p, int64_t nb,
                                                                     __m256 cv, const E* vrows, int64_t D) {
    __m256 acc[CH];
#pragma GCC unroll 8
    for (int k = 0; k < CH; ++k) acc[k] = _mm256_mul_ps(_mm256_loadu_ps(og + 8 * k), cv);
    for (int64_t j = 0; j < nb; ++j) {
      const __m256 pj = _mm256_set1_ps(p[j]);
#pragma GCC unroll 8
      for (int k = 0; k < CH; ++k) acc[k] = _mm256_fmadd_ps(pj, load(vrows + j * D + 8 * k), acc[k]);
    }
#pragma GCC unroll 8
    for (int k = 0; k < CH; ++k) _mm256_storeu_ps(og + 8 * k, acc[k]);
  }
  // Folds one block's scaled scores s [nb] (block max mx >= running max m) into the running output og [D]
  // and returns the new running sum: c = exp(m - mx), p_j = exp(s_j - mx) (written back into s, times
  // vscale_j for int8), og = og c + sum_j p_j v_j, sum = l c + sum_j p_j.
  template <typename E>
  GRPO_PAGED_AVX2 static inline float fold_block(float* og, float* s, int64_t nb, float m, float mx, float l,
                                                 const E* vrows, const float* vscale, int64_t D) {
    const float c = std::exp(m - mx);  // m = -inf on the first block: c = 0
    __m256 sum = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 8 <= nb; j += 8) {
      const __m256 p = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(s + j), _mm256_set1_ps(mx)));
      sum = _mm256_add_ps(sum, p);
      _mm256_storeu_ps(s + j, vscale ? _mm256_mul_ps(p, _mm256_loadu_ps(vscale + j)) : p);
    }
    if (j < nb) {  // (masked stores are slow on AMD: only for the last, partial block)
      const __m256i mk = first(nb - j);
      const __m256 p = exp_nonpositive(_mm256_sub_ps(_mm256_maskload_ps(s + j, mk), _mm256_set1_ps(mx)));
      sum = _mm256_add_ps(sum, _mm256_and_ps(p, _mm256_castsi256_ps(mk)));
      _mm256_maskstore_ps(s + j, mk, vscale ? _mm256_mul_ps(p, _mm256_maskload_ps(vscale + j, mk)) : p);
    }
    const __m256 cv = _mm256_set1_ps(c);
    int64_t d = 0;
    for (; d + 64 <= D; d += 64) fold_rows<8>(og + d, s, nb, cv, vrows + d, D);  // 8 of the 16 ymm registers
    for (; d + 8 <= D; d += 8) fold_rows<1>(og + d, s, nb, cv, vrows + d, D);
    if (d < D) {
      const __m256i md = first(D - d);
      __m256 acc = _mm256_mul_ps(_mm256_maskload_ps(og + d, md), cv);
      for (int64_t j = 0; j < nb; ++j) acc = _mm256_fmadd_ps(_mm256_set1_ps(s[j]), load_n(vrows + j * D + d, D - d), acc);
      _mm256_maskstore_ps(og + d, md, acc);
    }
    return l * c + reduce8(sum);
  }
};

}  // namespace grpo::cpu
