// f32 <-> bf16 conversions of flat buffers, each body chosen by the one ISA decision (kernels/backend.h).
// f32 -> bf16 rounds to nearest even: with vcvtneps2bf16 at avx512_bf16 (that instruction flushes denormal
// inputs to zero, so those lanes are redone with the integer rounding), with the integer rounding of
// core/dtype.h on 8 lanes at avx2 and avx512 ((u + 0x7fff + lsb) >> 16, NaN made quiet); every path gives
// the scalar function's bits. bf16 -> f32 is a 16-bit shift, 8 lanes at a time.

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

#define GRPO_CONVERT_AVX2 __attribute__((target("avx2,fma")))
#define GRPO_CONVERT_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

// ---------------------------------------------------------------- AVX2: integer rounding, 8 lanes
// 8 floats -> 8 bf16 values in the low 16 bits of each 32-bit lane.
GRPO_CONVERT_AVX2 inline __m256i round8(__m256 x) {
  const __m256i u = _mm256_castps_si256(x);
  const __m256i mag = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
  const __m256i nan = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7f800000));
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
  return _mm256_blendv_epi8(rounded, quiet, nan);
}

GRPO_CONVERT_AVX2 void f32_to_bf16_avx2(bf16_t* dst, const float* src, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    // packus works per 128-bit half: [a0-3 b0-3 | a4-7 b4-7]; the permute puts a before b.
    const __m256i packed = _mm256_packus_epi32(round8(_mm256_loadu_ps(src + i)), round8(_mm256_loadu_ps(src + i + 8)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_permute4x64_epi64(packed, 0xd8));
  }
  for (; i < n; ++i) dst[i] = grpo::f32_to_bf16(src[i]);
}

GRPO_CONVERT_AVX2 void bf16_to_f32_avx2(float* dst, const bf16_t* src, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_slli_epi32(w, 16));
  }
  for (; i < n; ++i) dst[i] = grpo::bf16_to_f32(src[i]);
}

// ---------------------------------------------------------------- AVX-512 BF16: vcvtneps2bf16, 16 lanes
// vcvtneps2bf16, then the integer rounding (u + 0x7fff + lsb) >> 16 for denormal lanes.
GRPO_CONVERT_AVX512_BF16 inline __m256i cvt16(__m512 x) {
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

GRPO_CONVERT_AVX512_BF16 void f32_to_bf16_avx512_bf16(bf16_t* dst, const float* src, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), cvt16(_mm512_loadu_ps(src + i)));
  if (i < n) {
    const __mmask16 tail = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm256_mask_storeu_epi16(dst + i, tail, cvt16(_mm512_maskz_loadu_ps(tail, src + i)));
  }
}

#undef GRPO_CONVERT_AVX2
#undef GRPO_CONVERT_AVX512_BF16

}  // namespace

namespace detail {
F32ToBf16Row f32_to_bf16_row() { return cpu_has_avx512_bf16() ? f32_to_bf16_avx512_bf16 : f32_to_bf16_avx2; }
Bf16ToF32Row bf16_to_f32_row() {
  isa();  // the decision holds (AVX2+FMA present) before the AVX2 body runs
  return bf16_to_f32_avx2;
}
}  // namespace detail

void f32_to_bf16(bf16_t* dst, const float* src, int64_t n) {
  GRPO_CHECK(n >= 0, "[f32_to_bf16] n must be >= 0, got ", n);
  const detail::F32ToBf16Row row = detail::f32_to_bf16_row();
  if (n < kParallelMin) return row(dst, src, n);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < n; b += kBlock) row(dst + b, src + b, std::min(kBlock, n - b));
}

void bf16_to_f32(float* dst, const bf16_t* src, int64_t n) {
  GRPO_CHECK(n >= 0, "[bf16_to_f32] n must be >= 0, got ", n);
  const detail::Bf16ToF32Row row = detail::bf16_to_f32_row();
  if (n < kParallelMin) return row(dst, src, n);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < n; b += kBlock) row(dst + b, src + b, std::min(kBlock, n - b));
}

}  // namespace grpo::ops
