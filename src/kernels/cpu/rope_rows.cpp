// Rotary embedding with one cos/sin row per token (the vision tower's 2D rotary and the text decoder's
// interleaved M-RoPE), in place on q or k [T, nh, D], and its backward (the inverse rotation of the incoming
// gradient); plus the M-RoPE table gather. Plain loops compiled for AVX-512 and AVX2.
#include <algorithm>

#include "core/error.h"
#include "core/profiler.h"
#include "core/threads.h"
#include "kernels/cpu/nn_simd.h"
#include "kernels/cpu/rope_rotate.h"
#include "kernels/vision_ops.h"

namespace grpo::ops {
namespace {

// Tokens t0 .. t1 of x [T, nh, D], each rotated by its own row of cos, sin [T, D/2].
template <bool kInverse>
[[gnu::always_inline]] inline void rotate_tokens(float* x, const float* cos, const float* sin, int64_t t0, int64_t t1,
                                                 int64_t nh, int64_t D) {
  const int64_t half = D / 2;
  for (int64_t t = t0; t < t1; ++t)
    cpu_rope::rotate_token<kInverse>(x + t * nh * D, cos + t * half, sin + t * half, nh, D);
}
NN_BEGIN_AVX512
template <bool kInverse>
void rotate_tokens_avx512(float* x, const float* cos, const float* sin, int64_t t0, int64_t t1, int64_t nh, int64_t D) {
  rotate_tokens<kInverse>(x, cos, sin, t0, t1, nh, D);
}
NN_END_TARGET
NN_BEGIN_AVX2
template <bool kInverse>
void rotate_tokens_avx2(float* x, const float* cos, const float* sin, int64_t t0, int64_t t1, int64_t nh, int64_t D) {
  rotate_tokens<kInverse>(x, cos, sin, t0, t1, nh, D);
}
NN_END_TARGET

template <bool kInverse>
void rope_rows_apply(float* x, const float* cos, const float* sin, int64_t T, int64_t nh, int64_t D, const char* op) {
  GRPO_CHECK(T >= 0 && nh > 0 && D > 0 && D % 2 == 0, "[", op,
             "] expected T >= 0, nh > 0 and an even D > 0, got T=", T, " nh=", nh, " D=", D);
  const bool avx512 = cpu::nn_use_avx512();
  constexpr int64_t kTokensPerItem = 16;
  const int64_t items = (T + kTokensPerItem - 1) / kTokensPerItem;
  parallel_for(items, T * nh * D >= (1 << 15), [&](int64_t it) {
    const int64_t t0 = it * kTokensPerItem, t1 = std::min(T, t0 + kTokensPerItem);
    if (avx512)
      rotate_tokens_avx512<kInverse>(x, cos, sin, t0, t1, nh, D);
    else
      rotate_tokens_avx2<kInverse>(x, cos, sin, t0, t1, nh, D);
  });
}

}  // namespace

void rope_rows_forward(float* x, const float* cos, const float* sin, int64_t T, int64_t nh, int64_t D) {
  GRPO_PROFILE("rope_rows_forward");
  rope_rows_apply<false>(x, cos, sin, T, nh, D, "rope_rows_forward");
}

void rope_rows_backward(float* dx, const float* cos, const float* sin, int64_t T, int64_t nh, int64_t D) {
  GRPO_PROFILE("rope_rows_backward");
  rope_rows_apply<true>(dx, cos, sin, T, nh, D, "rope_rows_backward");
}

void mrope_tables(float* cos, float* sin, const int32_t* pos3, const uint8_t* axis, const float* cos_table,
                  const float* sin_table, int64_t T, int64_t P, int64_t half) {
  GRPO_PROFILE("mrope_tables");
  GRPO_CHECK(T >= 0 && P > 0 && half > 0, "[mrope_tables] expected T >= 0, P > 0, half > 0, got T=", T, " P=", P,
             " half=", half);
  for (int64_t j = 0; j < half; ++j)
    GRPO_CHECK(axis[j] < 3, "[mrope_tables] frequency ", j, ": axis ", int{axis[j]}, " is not 0, 1 or 2");
  for (int64_t i = 0; i < 3 * T; ++i)
    GRPO_CHECK(pos3[i] >= 0 && pos3[i] < P, "[mrope_tables] axis ", i / T, ", token ", i % T, ": position ", pos3[i],
               " outside the table's [0, ", P, ")");
  parallel_for(T, T * half >= (1 << 15), [&](int64_t t) {
    for (int64_t j = 0; j < half; ++j) {
      const int64_t row = pos3[axis[j] * T + t];
      cos[t * half + j] = cos_table[row * half + j];
      sin[t * half + j] = sin_table[row * half + j];
    }
  });
}

}  // namespace grpo::ops
