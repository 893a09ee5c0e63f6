// Private SIMD layer of the decoder-layer kernels (nn_*): two vector types with the same interface,
// Vec512 (AVX-512, 16 lanes) and Vec256 (AVX2+FMA, 8 lanes), each compiled for its own instruction set
// with `#pragma GCC target`, plus the run-time choice between them (nn_use_avx512(): the one ISA decision
// of kernels/backend.h).
//
// Two ways the nn_* kernel files get one source compiled for both instruction sets:
// - kernels that need intrinsics (exp, the attention micro-kernels) are written once against `V` in an
//   *_impl.h body that the kernel file includes twice, inside NN_BEGIN_AVX512 namespace nn_avx512 {
//   using V = Vec512; ... } and again for AVX2 (templates cannot carry a target attribute per instantiation);
// - plain loops (memory-bound ops) live in an always_inline function called from two thin wrappers
//   defined between NN_BEGIN_AVX512 / NN_BEGIN_AVX2 and NN_END_TARGET, where the compiler vectorises them.
#pragma once
// GCC 12's AVX-512 headers trip -W(maybe-)uninitialized on their own _mm512_undefined_*() (GCC bug 105593);
// the warning fires where the intrinsics are inlined, so it stays off in the kernel files that include this.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstdint>

#include "kernels/backend.h"

#define NN_PRAGMA(x) _Pragma(#x)
#define NN_BEGIN_AVX512 \
  NN_PRAGMA(GCC push_options) NN_PRAGMA(GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))
#define NN_BEGIN_AVX2 NN_PRAGMA(GCC push_options) NN_PRAGMA(GCC target("avx2,fma"))
#define NN_END_TARGET NN_PRAGMA(GCC pop_options)

namespace grpo::cpu {

// The run-time choice between the two bodies: the process's one decision (kernels/backend.h).
inline bool nn_use_avx512() { return isa() >= Isa::Avx512; }

// Polynomial coefficients (Cephes expf / exp2f, relative error ~1e-7 on the reduced range).
inline constexpr float kNnExpP[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                     4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
inline constexpr float kNnExp2P[6] = {1.535336188319500e-4f, 1.339887440266574e-3f, 9.618437357674640e-3f,
                                      5.550332471162809e-2f, 2.402264791363012e-1f, 6.931472028550421e-1f};
inline constexpr float kNnLog2e = 1.44269504088896341f;

// ---------------------------------------------------------------- AVX-512
NN_BEGIN_AVX512
struct Vec512 {
  using reg = __m512;
  static constexpr int W = 16;
  static constexpr int kRows = 4;  // rows per register block of the attention micro-kernels

  static reg zero() { return _mm512_setzero_ps(); }
  static reg set1(float v) { return _mm512_set1_ps(v); }
  static reg load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, reg v) { _mm512_storeu_ps(p, v); }
  static __mmask16 first(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }  // n in [0, W]
  static reg load_n(const float* p, int64_t n) { return _mm512_maskz_loadu_ps(first(n), p); }
  static void store_n(float* p, reg v, int64_t n) { _mm512_mask_storeu_ps(p, first(n), v); }
  static reg add(reg a, reg b) { return _mm512_add_ps(a, b); }
  static reg sub(reg a, reg b) { return _mm512_sub_ps(a, b); }
  static reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
  static reg div(reg a, reg b) { return _mm512_div_ps(a, b); }
  static reg fmadd(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }    // a*b + c
  static reg fnmadd(reg a, reg b, reg c) { return _mm512_fnmadd_ps(a, b, c); }  // c - a*b
  static reg max(reg a, reg b) { return _mm512_max_ps(a, b); }
  static float reduce_add(reg v) { return _mm512_reduce_add_ps(v); }
  static float reduce_max(reg v) { return _mm512_reduce_max_ps(v); }

  // 2^n for integral-valued n in [-126, 127].
  static reg pow2i(reg n) {
    __m512i e = _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127));
    return _mm512_castsi512_ps(_mm512_slli_epi32(e, 23));
  }
  static reg poly(const float* c, reg r) {
    reg p = set1(c[0]);
    for (int i = 1; i < 6; ++i) p = fmadd(p, r, set1(c[i]));
    return p;
  }
  // e^x; NaN stays NaN (the max/min operand order keeps it), x is clamped to [-87.3, 88.3].
  static reg exp(reg x) {
    x = _mm512_min_ps(set1(88.3f), _mm512_max_ps(set1(-87.3f), x));
    reg n = _mm512_roundscale_ps(mul(x, set1(kNnLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    reg r = fnmadd(n, set1(0.693359375f), x);
    r = fnmadd(n, set1(-2.12194440e-4f), r);
    reg p = fmadd(poly(kNnExpP, r), mul(r, r), add(r, set1(1.0f)));
    return mul(p, pow2i(n));
  }
  // 2^x; exactly 0 for x < -126 (including -inf), NaN stays NaN, x clamped above at 127.
  static reg exp2(reg x) {
    __mmask16 keep = _mm512_cmp_ps_mask(x, set1(-126.0f), _CMP_NLT_UQ);
    reg xc = _mm512_min_ps(set1(127.0f), _mm512_max_ps(set1(-126.0f), x));
    reg n = _mm512_roundscale_ps(xc, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    reg r = sub(xc, n);
    reg p = fmadd(poly(kNnExp2P, r), r, set1(1.0f));
    return _mm512_maskz_mov_ps(keep, mul(p, pow2i(n)));
  }
};
NN_END_TARGET

// ---------------------------------------------------------------- AVX2 + FMA
NN_BEGIN_AVX2
struct Vec256 {
  using reg = __m256;
  static constexpr int W = 8;
  static constexpr int kRows = 3;

  static reg zero() { return _mm256_setzero_ps(); }
  static reg set1(float v) { return _mm256_set1_ps(v); }
  static reg load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, reg v) { _mm256_storeu_ps(p, v); }
  static __m256i first(int64_t n) {  // lanes < n set, n in [0, W]
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static reg load_n(const float* p, int64_t n) { return _mm256_maskload_ps(p, first(n)); }
  static void store_n(float* p, reg v, int64_t n) { _mm256_maskstore_ps(p, first(n), v); }
  static reg add(reg a, reg b) { return _mm256_add_ps(a, b); }
  static reg sub(reg a, reg b) { return _mm256_sub_ps(a, b); }
  static reg mul(reg a, reg b) { return _mm256_mul_ps(a, b); }
  static reg div(reg a, reg b) { return _mm256_div_ps(a, b); }
  static reg fmadd(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
  static reg fnmadd(reg a, reg b, reg c) { return _mm256_fnmadd_ps(a, b, c); }
  static reg max(reg a, reg b) { return _mm256_max_ps(a, b); }
  static float reduce_add(reg v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float reduce_max(reg v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }

  static reg pow2i(reg n) {
    __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
  }
  static reg poly(const float* c, reg r) {
    reg p = set1(c[0]);
    for (int i = 1; i < 6; ++i) p = fmadd(p, r, set1(c[i]));
    return p;
  }
  static reg exp(reg x) {
    x = _mm256_min_ps(set1(88.3f), _mm256_max_ps(set1(-87.3f), x));
    reg n = _mm256_round_ps(mul(x, set1(kNnLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    reg r = fnmadd(n, set1(0.693359375f), x);
    r = fnmadd(n, set1(-2.12194440e-4f), r);
    reg p = fmadd(poly(kNnExpP, r), mul(r, r), add(r, set1(1.0f)));
    return mul(p, pow2i(n));
  }
  static reg exp2(reg x) {
    reg keep = _mm256_cmp_ps(x, set1(-126.0f), _CMP_NLT_UQ);
    reg xc = _mm256_min_ps(set1(127.0f), _mm256_max_ps(set1(-126.0f), x));
    reg n = _mm256_round_ps(xc, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    reg r = sub(xc, n);
    reg p = fmadd(poly(kNnExp2P, r), r, set1(1.0f));
    return _mm256_and_ps(keep, mul(p, pow2i(n)));
  }
};
NN_END_TARGET

}  // namespace grpo::cpu
