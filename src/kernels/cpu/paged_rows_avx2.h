// AVX2 + FMA row operations of paged attention (paged_attention.cpp's Rows interface): 8 lanes, bf16 and
// int8 k/v rows converted in registers, tails of head dims that are not a multiple of 8 through
// zero-filled copies (f32: masked loads). Sums in a fixed order: lanes along d, then reduce8's tree. The
// query heads that share a kv head go two at a time, so each k / v row is loaded (and converted) once
// per pair.
#pragma once
#include <immintrin.h>

#include <algorithm>
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
    const float c = _mm256_cvtss_f32(exp_nonpositive(_mm256_set1_ps(m - mx)));  // first block (m = -inf): e^-87
    const float l_new = exp_scores(s, nb, mx, l, c, vscale);
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
    return l_new;
  }

  // --- All G query heads of a kv head over one block, two heads at a time sharing each k / v load; every
  // score and output element is summed as by dot() and fold_block() above.

  // dot4() of two heads q0, q1 against the same four rows.
  template <typename E>
  GRPO_PAGED_AVX2 static inline void dot4x2(float* out0, float* out1, const float* q0, const float* q1, const E* rows,
                                            int64_t D) {
    __m256 a0[4], a1[4];
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) a0[r] = a1[r] = _mm256_setzero_ps();
    int64_t d = 0;
    for (; d + 8 <= D; d += 8) {
      const __m256 x0 = _mm256_loadu_ps(q0 + d), x1 = _mm256_loadu_ps(q1 + d);
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r) {
        const __m256 k = load(rows + r * D + d);
        a0[r] = _mm256_fmadd_ps(x0, k, a0[r]);
        a1[r] = _mm256_fmadd_ps(x1, k, a1[r]);
      }
    }
    if (d < D) {
      const __m256i m = first(D - d);
      const __m256 x0 = _mm256_maskload_ps(q0 + d, m), x1 = _mm256_maskload_ps(q1 + d, m);
      for (int r = 0; r < 4; ++r) {
        const __m256 k = load_n(rows + r * D + d, D - d);
        a0[r] = _mm256_fmadd_ps(x0, k, a0[r]);
        a1[r] = _mm256_fmadd_ps(x1, k, a1[r]);
      }
    }
    _mm_storeu_ps(out0, reduce4x8(a0[0], a0[1], a0[2], a0[3]));
    _mm_storeu_ps(out1, reduce4x8(a1[0], a1[1], a1[2], a1[3]));
  }
  // s[g * ld_s + j] = q_g . k_j for the G heads (q rows of D) and the block's nb rows.
  template <typename E>
  GRPO_PAGED_AVX2 static inline void scores(float* s, int64_t ld_s, const float* q, int64_t G, const E* krows,
                                            int64_t nb, int64_t D) {
    int64_t g = 0;
    for (; g + 2 <= G; g += 2) {
      float* s0 = s + g * ld_s;
      float* s1 = s0 + ld_s;
      const float* q0 = q + g * D;
      int64_t j = 0;
      for (; j + 4 <= nb; j += 4) dot4x2(s0 + j, s1 + j, q0, q0 + D, krows + j * D, D);
      for (; j < nb; ++j) {
        s0[j] = dot(q0, krows + j * D, D);
        s1[j] = dot(q0 + D, krows + j * D, D);
      }
    }
    if (g < G) {
      int64_t j = 0;
      for (; j + 4 <= nb; j += 4) dot4(s + g * ld_s + j, q + g * D, krows + j * D, D);
      for (; j < nb; ++j) s[g * ld_s + j] = dot(q + g * D, krows + j * D, D);
    }
  }
  // s[j] = s[j] ksc_j scale (ksc: int8 scales or null); returns max(m, max_j s[j]).
  GRPO_PAGED_AVX2 static inline float scale_max(float* s, int64_t nb, const float* ksc, float scale, float m) {
    const __m256 vs = _mm256_set1_ps(scale);
    __m256 vm = _mm256_set1_ps(m);
    int64_t j = 0;
    for (; j + 8 <= nb; j += 8) {
      __m256 d = _mm256_loadu_ps(s + j);
      if (ksc) d = _mm256_mul_ps(d, _mm256_loadu_ps(ksc + j));
      d = _mm256_mul_ps(d, vs);
      _mm256_storeu_ps(s + j, d);
      vm = _mm256_max_ps(vm, d);
    }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, vm);
    for (float v : lanes) m = std::max(m, v);
    for (; j < nb; ++j) {
      float d = s[j];
      if (ksc) d *= ksc[j];
      s[j] = d * scale;
      m = std::max(m, s[j]);
    }
    return m;
  }
  // The exp step of fold_block for one head: p_j = exp(s_j - mx) written back into s (times vscale_j);
  // returns the new running sum l c + sum_j p_j.
  GRPO_PAGED_AVX2 static inline float exp_scores(float* s, int64_t nb, float mx, float l, float c,
                                                 const float* vscale) {
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
    return l * c + reduce8(sum);
  }
  // o0, o1 [8 CH] = o * c + sum_j p_j v_j for two heads (weights p0, p1) over the same rows (stride D).
  template <int CH, typename E>
  GRPO_PAGED_AVX2 [[gnu::always_inline]] static inline void fold_rows2(float* o0, float* o1, const float* p0,
                                                                      const float* p1, int64_t nb, __m256 c0,
                                                                      __m256 c1, const E* vrows, int64_t D) {
    __m256 a0[CH], a1[CH];
#pragma GCC unroll 8
    for (int k = 0; k < CH; ++k) {
      a0[k] = _mm256_mul_ps(_mm256_loadu_ps(o0 + 8 * k), c0);
      a1[k] = _mm256_mul_ps(_mm256_loadu_ps(o1 + 8 * k), c1);
    }
    for (int64_t j = 0; j < nb; ++j) {
      const __m256 w0 = _mm256_set1_ps(p0[j]), w1 = _mm256_set1_ps(p1[j]);
#pragma GCC unroll 8
      for (int k = 0; k < CH; ++k) {
        const __m256 v = load(vrows + j * D + 8 * k);
        a0[k] = _mm256_fmadd_ps(w0, v, a0[k]);
        a1[k] = _mm256_fmadd_ps(w1, v, a1[k]);
      }
    }
#pragma GCC unroll 8
    for (int k = 0; k < CH; ++k) {
      _mm256_storeu_ps(o0 + 8 * k, a0[k]);
      _mm256_storeu_ps(o1 + 8 * k, a1[k]);
    }
  }
  // fold_block for each of the G heads (outputs o [G, D], scores s [G, ld_s], running m, l [G], block max
  // mx [G]); the weighted sums two heads at a time.
  template <typename E>
  GRPO_PAGED_AVX2 static inline void fold(float* o, float* s, int64_t ld_s, int64_t G, int64_t nb, const float* m,
                                          const float* mx, float* l, const E* vrows, const float* vscale, int64_t D) {
    int64_t g = 0;
    for (; g + 2 <= G; g += 2) {
      // c = exp(m - mx) of both heads in one vector (m = -inf on the first block: c = e^-87, times o = 0, l = 0)
      alignas(32) float c[8];
      _mm256_store_ps(c, exp_nonpositive(_mm256_setr_ps(m[g] - mx[g], m[g + 1] - mx[g + 1], 0, 0, 0, 0, 0, 0)));
      const float c0 = c[0], c1 = c[1];
      float* s0 = s + g * ld_s;
      float* s1 = s0 + ld_s;
      l[g] = exp_scores(s0, nb, mx[g], l[g], c0, vscale);
      l[g + 1] = exp_scores(s1, nb, mx[g + 1], l[g + 1], c1, vscale);
      float* o0 = o + g * D;
      float* o1 = o0 + D;
      const __m256 cv0 = _mm256_set1_ps(c0), cv1 = _mm256_set1_ps(c1);
      int64_t d = 0;
      for (; d + 32 <= D; d += 32) fold_rows2<4>(o0 + d, o1 + d, s0, s1, nb, cv0, cv1, vrows + d, D);
      for (; d + 8 <= D; d += 8) fold_rows2<1>(o0 + d, o1 + d, s0, s1, nb, cv0, cv1, vrows + d, D);
      if (d < D) {
        const __m256i md = first(D - d);
        __m256 a0 = _mm256_mul_ps(_mm256_maskload_ps(o0 + d, md), cv0);
        __m256 a1 = _mm256_mul_ps(_mm256_maskload_ps(o1 + d, md), cv1);
        for (int64_t j = 0; j < nb; ++j) {
          const __m256 v = load_n(vrows + j * D + d, D - d);
          a0 = _mm256_fmadd_ps(_mm256_set1_ps(s0[j]), v, a0);
          a1 = _mm256_fmadd_ps(_mm256_set1_ps(s1[j]), v, a1);
        }
        _mm256_maskstore_ps(o0 + d, md, a0);
        _mm256_maskstore_ps(o1 + d, md, a1);
      }
    }
    if (g < G) l[g] = fold_block(o + g * D, s + g * ld_s, nb, m[g], mx[g], l[g], vrows, vscale, D);
  }
};

}  // namespace grpo::cpu
