// The rotation both rotary kernels apply (rope.cpp: a table row per position; rope_rows.cpp: a row per
// token): the nh heads of one token x [nh, D] rotated by the cos/sin row c, s [D/2] in NEOX split halves.
#pragma once

#include <cstdint>

namespace grpo::ops::cpu_rope {

// x'[i] = x[i] c - x[i+half] s_dir, x'[i+half] = x[i+half] c + x[i] s_dir, with s_dir = +sin (forward) or
// -sin (backward: the inverse rotation). Inlined into each ISA's target function, so vectorised for it.
template <bool kInverse>
[[gnu::always_inline]] inline void rotate_token(float* x, const float* c, const float* s, int64_t nh, int64_t D) {
  const int64_t half = D / 2;
  for (int64_t h = 0; h < nh; ++h) {
    float* lo = x + h * D;  // [half]
    float* hi = lo + half;  // [half]
#pragma omp simd
    for (int64_t i = 0; i < half; ++i) {
      const float a = lo[i], b = hi[i], sn = kInverse ? -s[i] : s[i];
      lo[i] = a * c[i] - b * sn;
      hi[i] = b * c[i] + a * sn;
    }
  }
}

}  // namespace grpo::ops::cpu_rope
