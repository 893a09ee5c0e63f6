// Private to lm_head.cpp: the per-row passes of the fused output layer over one row of logits z [V].
// Each pass exists three times with the same semantics: AVX-512 (16 lanes), AVX2+FMA (8 lanes), both with a
// vectorised exp, and portable scalar code (the tests' oracle); lm_head.cpp picks the vector body of the one
// ISA decision (kernels/backend.h) per call. All arithmetic is fp32.
//   row_max(z)                       max_i z_i
//   shifted_exp_sums(z, shift)       {sum_i e_i, sum_i e_i (z_i - shift)} with e_i = exp(z_i - shift)
//   write_softmax_grad(z, lse, a, b) z_i <- p_i (a + b (z_i - lse)) with p_i = exp(z_i - lse), in place
// Differences z_i - shift below kMinExpArg are raised to it (exp is 0 there either way), so that a logit of
// -inf contributes 0 instead of 0 * -inf = NaN. NaN logits propagate.
#pragma once
// GCC 12's AVX-512 headers trip -W(maybe-)uninitialized on their own _mm512_undefined_*() (GCC bug 105593);
// the warnings surface in the files that inline these functions, so they stay off for the includer too.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace grpo::ops::detail {

constexpr float kMinExpArg = -104.0f;  // exp(-104) rounds to 0 in fp32

struct ExpSums {
  float sum = 0, dot = 0;
};

// ---------------------------------------------------------------- scalar
inline float row_max_scalar(const float* z, int64_t V) {
  float m = -INFINITY;
  for (int64_t i = 0; i < V; ++i) m = (z[i] > m || std::isnan(z[i])) ? z[i] : m;
  return m;
}

inline ExpSums shifted_exp_sums_scalar(const float* z, int64_t V, float shift) {
  ExpSums s;
  for (int64_t i = 0; i < V; ++i) {
    const float d = std::max(z[i] - shift, kMinExpArg), e = std::exp(d);
    s.sum += e;
    s.dot += e * d;
  }
  return s;
}

inline void write_softmax_grad_scalar(float* z, int64_t V, float lse, float a, float b) {
  for (int64_t i = 0; i < V; ++i) {
    const float lp = std::max(z[i] - lse, kMinExpArg);
    z[i] = std::exp(lp) * (a + b * lp);
  }
}

// ---------------------------------------------------------------- AVX-512
#define GRPO_HEAD_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) inline

// exp(x) = 2^n exp(r) with n = round(x log2 e), |r| <= ln2 / 2, exp(r) by its degree-6 Taylor polynomial
// (relative error ~1e-7). NaN passes through (it is the second operand of min/max); x <= -104 gives 0.
GRPO_HEAD_AVX512 __m512 exp512(__m512 x) {
  x = _mm512_min_ps(_mm512_set1_ps(88.72f), x);
  x = _mm512_max_ps(_mm512_set1_ps(kMinExpArg), x);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145752f), x);  // ln2 split in hi + lo parts
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860677e-6f), r);
  __m512 p = _mm512_set1_ps(1.0f / 720);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

GRPO_HEAD_AVX512 __mmask16 tail_mask(int64_t left) {
  return left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1);
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) inline float row_max_avx512(const float* z, int64_t V) {
  __m512 m = _mm512_set1_ps(-INFINITY);
  __mmask16 nan = 0;
  for (int64_t i = 0; i < V; i += 16) {
    const __mmask16 k = tail_mask(V - i);
    const __m512 x = _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), k, z + i);
    nan |= _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    m = _mm512_max_ps(m, x);
  }
  return nan ? NAN : _mm512_reduce_max_ps(m);
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) inline ExpSums shifted_exp_sums_avx512(const float* z,
                                                                                             int64_t V,
                                                                                             float shift) {
  const __m512 sh = _mm512_set1_ps(shift);
  __m512 sum = _mm512_setzero_ps(), dot = _mm512_setzero_ps();
  for (int64_t i = 0; i < V; i += 16) {
    const __mmask16 k = tail_mask(V - i);
    const __m512 d = _mm512_max_ps(_mm512_set1_ps(kMinExpArg), _mm512_sub_ps(_mm512_maskz_loadu_ps(k, z + i), sh));
    const __m512 e = exp512(d);
    sum = _mm512_mask_add_ps(sum, k, sum, e);
    dot = _mm512_mask3_fmadd_ps(e, d, dot, k);  // lanes past V keep dot
  }
  return {_mm512_reduce_add_ps(sum), _mm512_reduce_add_ps(dot)};
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) inline void write_softmax_grad_avx512(float* z, int64_t V,
                                                                                           float lse, float a,
                                                                                           float b) {
  const __m512 l = _mm512_set1_ps(lse), va = _mm512_set1_ps(a), vb = _mm512_set1_ps(b);
  for (int64_t i = 0; i < V; i += 16) {
    const __mmask16 k = tail_mask(V - i);
    const __m512 lp = _mm512_max_ps(_mm512_set1_ps(kMinExpArg), _mm512_sub_ps(_mm512_maskz_loadu_ps(k, z + i), l));
    _mm512_mask_storeu_ps(z + i, k, _mm512_mul_ps(exp512(lp), _mm512_fmadd_ps(vb, lp, va)));
  }
}

#undef GRPO_HEAD_AVX512

// ---------------------------------------------------------------- AVX2 + FMA
#define GRPO_HEAD_AVX2 __attribute__((target("avx2,fma"), always_inline)) inline

// 2^k for integer lanes k in [-126, 127].
GRPO_HEAD_AVX2 __m256 pow2_256(__m256i k) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23));
}

// exp256 = exp512 on 8 lanes: the same reduction and polynomial; 2^n is applied as 2^(n/2) 2^(n - n/2) (two
// normal factors, one rounding), which gives the denormal results scalef gives for n < -126.
GRPO_HEAD_AVX2 __m256 exp256(__m256 x) {
  x = _mm256_min_ps(_mm256_set1_ps(88.72f), x);
  x = _mm256_max_ps(_mm256_set1_ps(kMinExpArg), x);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145752f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.42860677e-6f), r);
  __m256 p = _mm256_set1_ps(1.0f / 720);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i ni = _mm256_cvtps_epi32(n), half = _mm256_srai_epi32(ni, 1);
  return _mm256_mul_ps(_mm256_mul_ps(p, pow2_256(half)), pow2_256(_mm256_sub_epi32(ni, half)));
}

// Lanes [0, left) set (all when left >= 8).
GRPO_HEAD_AVX2 __m256i tail_mask256(int64_t left) {
  const int n = static_cast<int>(std::min<int64_t>(left, 8));
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

GRPO_HEAD_AVX2 float reduce_add256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

__attribute__((target("avx2,fma"))) inline float row_max_avx2(const float* z, int64_t V) {
  const __m256 minus_inf = _mm256_set1_ps(-INFINITY);
  __m256 m = minus_inf, nan = _mm256_setzero_ps();
  for (int64_t i = 0; i < V; i += 8) {
    const __m256i k = tail_mask256(V - i);
    const __m256 x = _mm256_blendv_ps(minus_inf, _mm256_maskload_ps(z + i, k), _mm256_castsi256_ps(k));
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    m = _mm256_max_ps(m, x);
  }
  if (_mm256_movemask_ps(nan)) return NAN;
  __m128 r = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  r = _mm_max_ps(r, _mm_movehl_ps(r, r));
  r = _mm_max_ss(r, _mm_movehdup_ps(r));
  return _mm_cvtss_f32(r);
}

__attribute__((target("avx2,fma"))) inline ExpSums shifted_exp_sums_avx2(const float* z, int64_t V, float shift) {
  const __m256 sh = _mm256_set1_ps(shift), lo = _mm256_set1_ps(kMinExpArg);
  __m256 sum = _mm256_setzero_ps(), dot = _mm256_setzero_ps();
  for (int64_t i = 0; i < V; i += 8) {
    const __m256 k = _mm256_castsi256_ps(tail_mask256(V - i));
    // lanes past V: d = kMinExpArg and e = 0, so they add 0 to both sums
    const __m256 d = _mm256_blendv_ps(
        lo, _mm256_max_ps(lo, _mm256_sub_ps(_mm256_maskload_ps(z + i, _mm256_castps_si256(k)), sh)), k);
    const __m256 e = _mm256_and_ps(k, exp256(d));
    sum = _mm256_add_ps(sum, e);
    dot = _mm256_fmadd_ps(e, d, dot);
  }
  return {reduce_add256(sum), reduce_add256(dot)};
}

__attribute__((target("avx2,fma"))) inline void write_softmax_grad_avx2(float* z, int64_t V, float lse, float a,
                                                                         float b) {
  const __m256 l = _mm256_set1_ps(lse), va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b), lo = _mm256_set1_ps(kMinExpArg);
  for (int64_t i = 0; i < V; i += 8) {
    const __m256i k = tail_mask256(V - i);
    const __m256 lp = _mm256_max_ps(lo, _mm256_sub_ps(_mm256_maskload_ps(z + i, k), l));
    _mm256_maskstore_ps(z + i, k, _mm256_mul_ps(exp256(lp), _mm256_fmadd_ps(vb, lp, va)));
  }
}

#undef GRPO_HEAD_AVX2

}  // namespace grpo::ops::detail
