// Rotary position embedding (NEOX split halves) applied in place to q or k [T, nh, D], and its backward
// (the inverse rotation of the incoming gradient). A plain loop compiled for AVX-512 and AVX2.
#include <algorithm>

#include "core/error.h"
#include "core/profiler.h"
#include "core/threads.h"
#include "kernels/cpu/nn_simd.h"
#include "kernels/cpu/rope_rotate.h"
#include "kernels/ops.h"

namespace grpo::ops {
namespace {

using cpu_rope::rotate_token;

NN_BEGIN_AVX512
template <bool kInverse>
void rotate_tokens_avx512(float* x, const int32_t* pos, const float* cos, const float* sin, int64_t t0,
                          int64_t t1, int64_t nh, int64_t D) {
  const int64_t half = D / 2;
  for (int64_t t = t0; t < t1; ++t)
    rotate_token<kInverse>(x + t * nh * D, cos + int64_t{pos[t]} * half, sin + int64_t{pos[t]} * half, nh, D);
}
NN_END_TARGET
NN_BEGIN_AVX2
template <bool kInverse>
void rotate_tokens_avx2(float* x, const int32_t* pos, const float* cos, const float* sin, int64_t t0,
                        int64_t t1, int64_t nh, int64_t D) {
  const int64_t half = D / 2;
  for (int64_t t = t0; t < t1; ++t)
    rotate_token<kInverse>(x + t * nh * D, cos + int64_t{pos[t]} * half, sin + int64_t{pos[t]} * half, nh, D);
}
NN_END_TARGET

template <bool kInverse>
void rope_apply(float* x, const int32_t* pos, const float* cos, const float* sin, int64_t T, int64_t nh,
                int64_t D, const char* op) {
  GRPO_CHECK(T >= 0 && nh > 0 && D > 0 && D % 2 == 0, "[", op, "] expected T >= 0, nh > 0 and an even D > 0, got T=",
             T, " nh=", nh, " D=", D);
  for (int64_t t = 0; t < T; ++t)
    GRPO_CHECK(pos[t] >= 0, "[", op, "] token ", t, ": position ", pos[t], " is negative");
  const bool avx512 = cpu::nn_use_avx512();
  constexpr int64_t kTokensPerItem = 16;
  const int64_t items = (T + kTokensPerItem - 1) / kTokensPerItem;
  parallel_for(items, T * nh * D >= (1 << 15), [&](int64_t it) {
    const int64_t t0 = it * kTokensPerItem, t1 = std::min(T, t0 + kTokensPerItem);
    if (avx512)
      rotate_tokens_avx512<kInverse>(x, pos, cos, sin, t0, t1, nh, D);
    else
      rotate_tokens_avx2<kInverse>(x, pos, cos, sin, t0, t1, nh, D);
  });
}

}  // namespace

void rope_forward(float* x, const int32_t* pos, const float* cos, const float* sin, int64_t T, int64_t nh,
                  int64_t D) {
  GRPO_PROFILE("rope_forward");
  rope_apply<false>(x, pos, cos, sin, T, nh, D, "rope_forward");
}

void rope_backward(float* dx, const int32_t* pos, const float* cos, const float* sin, int64_t T, int64_t nh,
                   int64_t D) {
  GRPO_PROFILE("rope_backward");
  rope_apply<true>(dx, pos, cos, sin, T, nh, D, "rope_backward");
}

}  // namespace grpo::ops
