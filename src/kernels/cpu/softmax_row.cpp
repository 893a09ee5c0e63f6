// Softmax numerators of one row of logits for the sampler (ops::softmax_numerators, kernels/paged_ops.h):
// max, first argmax and NaN check in one AVX2 pass, then exp((x - max) * scale) with Cephes' expf
// polynomial (Cody-Waite reduction by ln 2 in two parts, relative error ~1e-7) and the sum in double lanes.
// Every CPU the project supports has AVX2 + FMA; the tail (n % 8) is computed in the same lanes through
// masked loads, so a row's result does not depend on where it ends.
#include <immintrin.h>

#include <cmath>

#include "core/error.h"
#include "core/profiler.h"
#include "kernels/paged_ops.h"

namespace grpo::ops {
namespace {

#define GRPO_AVX2 [[gnu::target("avx2,fma")]]

GRPO_AVX2 [[gnu::always_inline]] inline __m256i first_lanes(int64_t n) {  // lanes < n, n in [0, 8]
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// e^x for x <= 0; 0 below -87 (under f32's normal range, and -inf).
GRPO_AVX2 [[gnu::always_inline]] inline __m256 exp_nonpositive(__m256 x) {
  const __m256 keep = _mm256_cmp_ps(x, _mm256_set1_ps(-87.0f), _CMP_GE_OQ);
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);  // x - n ln2, ln2 in two parts
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  constexpr float c[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                          4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
  __m256 p = _mm256_set1_ps(c[0]);
  for (int k = 1; k < 6; ++k) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c[k]));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));  // 1 + r + r^2 P(r)
  const __m256i two_n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_and_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(two_n)), keep);
}

// Largest x (NaN lanes flagged in *nan instead) over x [n].
GRPO_AVX2 float max_of(const float* x, int64_t n, bool* nan) {
  __m256 mx = _mm256_set1_ps(-INFINITY), bad = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    bad = _mm256_or_ps(bad, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    mx = _mm256_max_ps(v, mx);  // a NaN v leaves mx as it was
  }
  if (i < n) {
    const __m256i m = first_lanes(n - i);
    const __m256 v = _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), _mm256_maskload_ps(x + i, m), _mm256_castsi256_ps(m));
    bad = _mm256_or_ps(bad, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    mx = _mm256_max_ps(v, mx);
  }
  *nan = _mm256_movemask_ps(bad) != 0;
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, mx);
  float m = lanes[0];
  for (int k = 1; k < 8; ++k) m = std::max(m, lanes[k]);
  return m;
}

// p = exp((x - mx) * scale) of 8 lanes (the first n of them stored and added into lo, hi when masked).
template <bool kMasked>
GRPO_AVX2 [[gnu::always_inline]] inline void exp_lanes(float* p, const float* x, __m256 vmx, __m256 vs, int64_t n,
                                                       __m256d& lo, __m256d& hi) {
  __m256 v;
  if constexpr (kMasked) {
    const __m256i m = first_lanes(n);
    v = _mm256_and_ps(exp_nonpositive(_mm256_mul_ps(_mm256_sub_ps(_mm256_maskload_ps(x, m), vmx), vs)),
                      _mm256_castsi256_ps(m));
    _mm256_maskstore_ps(p, m, v);  // slow on AMD (microcoded), once per row
  } else {
    v = exp_nonpositive(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x), vmx), vs));
    _mm256_storeu_ps(p, v);
  }
  lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
  hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}

// p = exp((x - mx) * scale) over x [n]; returns the sum (double lanes, then in lane order).
GRPO_AVX2 double exp_and_sum(float* p, const float* x, int64_t n, float mx, float scale) {
  const __m256 vmx = _mm256_set1_ps(mx), vs = _mm256_set1_ps(scale);
  __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) exp_lanes<false>(p + i, x + i, vmx, vs, 8, lo, hi);
  if (i < n) exp_lanes<true>(p + i, x + i, vmx, vs, n - i, lo, hi);
  alignas(32) double s[8];
  _mm256_store_pd(s, lo);
  _mm256_store_pd(s + 4, hi);
  double sum = 0;
  for (double v : s) sum += v;
  return sum;
}

}  // namespace

SoftmaxRow softmax_numerators(float* p, const float* x, int64_t n, float scale) {
  GRPO_PROFILE("softmax_numerators");
  GRPO_CHECK(n > 0, "[softmax_numerators] expected n > 0 logits, got ", n);
  GRPO_CHECK(scale > 0 && std::isfinite(scale), "[softmax_numerators] scale must be finite and > 0, got ", scale);
  bool nan = false;
  const float mx = max_of(x, n, &nan);
  if (nan)
    for (int64_t i = 0; i < n; ++i) GRPO_CHECK(!std::isnan(x[i]), "[sampler] logits[", i, "] is NaN");
  GRPO_CHECK(std::isfinite(mx), "[sampler] the largest logit is ", mx, " (expected a finite value)");
  int64_t argmax = 0;
  while (x[argmax] != mx) ++argmax;
  return {mx, argmax, exp_and_sum(p, x, n, mx, scale)};
}

}  // namespace grpo::ops
