// f32 <-> bf16 conversions of flat buffers. f32 -> bf16 rounds to nearest even with vcvtneps2bf16 on
// CPUs with AVX-512 BF16; that instruction flushes denormal inputs to zero, so those lanes are redone with
// the integer rounding of core/dtype.h, which is also the scalar fallback: every path gives the same bits.

// GCC 12's AVX-512 headers trip -W(maybe-)uninitialized on their own _mm512_undefined_*() (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/backend.h"
#include "kernels/cpu/head_bf16.h"
#include "kernels/ops.h"

namespace grpo::ops {
namespace {

constexpr int64_t kParallelMin = 1 << 16;  // below this, threads cost more than they save
constexpr int64_t kBlock = 1 << 14;        // elements per OpenMP work item

void f32_to_bf16_scalar(bf16_t* dst, const float* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = grpo::f32_to_bf16(src[i]);
}

// 16 lanes: vcvtneps2bf16, then the integer rounding (u + 0x7fff + lsb) >> 16 for denormal lanes.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) inline __m256i cvt16(__m512 x) {
  __m256i y = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(x));
  const __m512i u = _mm512_castps_si512(x);
  const __m512i mag = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
  const __mmask16 denormal =
      _mm512_cmplt_epu32_mask(mag, _mm512_set1_epi32(0x00800000)) & _mm512_test_epi32_mask(mag, mag);
  if (denormal) {
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    const __m512i rounded =
        _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
    y = _mm512_mask_cvtepi32_epi16(y, denormal, rounded);  // narrows only the denormal lanes into y
  }
  return y;
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void f32_to_bf16_avx512(bf16_t* dst,
                                                                                         const float* src,
                                                                                         int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), cvt16(_mm512_loadu_ps(src + i)));
  if (i < n) {
    const __mmask16 tail = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm256_mask_storeu_epi16(dst + i, tail, cvt16(_mm512_maskz_loadu_ps(tail, src + i)));
  }
}

}  // namespace

namespace detail {
void f32_to_bf16_row(bf16_t* dst, const float* src, int64_t n) {
  if (cpu_has_avx512_bf16())
    f32_to_bf16_avx512(dst, src, n);
  else
    f32_to_bf16_scalar(dst, src, n);
}
}  // namespace detail

void f32_to_bf16(bf16_t* dst, const float* src, int64_t n) {
  GRPO_CHECK(n >= 0, "[f32_to_bf16] n must be >= 0, got ", n);
  if (n < kParallelMin) return detail::f32_to_bf16_row(dst, src, n);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < n; b += kBlock) detail::f32_to_bf16_row(dst + b, src + b, std::min(kBlock, n - b));
}

void bf16_to_f32(float* dst, const bf16_t* src, int64_t n) {
  GRPO_CHECK(n >= 0, "[bf16_to_f32] n must be >= 0, got ", n);
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t end = std::min(b + kBlock, n);
    for (int64_t i = b; i < end; ++i) dst[i] = grpo::bf16_to_f32(src[i]);
  }
}

}  // namespace grpo::ops
