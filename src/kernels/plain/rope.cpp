// Plain RoPE (see plain_ops.h), the HF eager formula with NEOX halves:
//   x' = x * cos + rotate_half(x) * sin,  rotate_half(x) = cat(-x2, x1),  cos/sin rows = cat(f, f)
// and its autograd backward dx = dy * cos + rotate_half^T(dy * sin), rotate_half^T(u) = cat(u2, -u1).
// Each step is its own pass with a materialised temporary (the gathered cos/sin rows, rotate_half, the
// products). ops.h gives RoPE no workspace and works in place, so the temporaries cannot be [T, nh, D]:
// they are per-token stack arrays ([D] each) and the passes run token by token, tokens over threads.
#include "core/error.h"
#include "core/profiler.h"
#include "kernels/plain/parallel.h"
#include "kernels/plain/vec.h"
#include "kernels/plain_ops.h"

namespace grpo::plain {
namespace {

constexpr int64_t kMaxHeadDim = 1024;  // bound of the per-token stack temporaries

void check_args(const char* op, const int32_t* pos, int64_t T, int64_t nh, int64_t D) {
  GRPO_CHECK(T >= 0 && nh > 0 && D > 0 && D % 2 == 0, "[", op,
             "] expected T >= 0, nh > 0 and an even D > 0, got T=", T, " nh=", nh, " D=", D);
  GRPO_CHECK(D <= kMaxHeadDim, "[", op, "] head dim D=", D, " exceeds the supported ", kMaxHeadDim);
  for (int64_t t = 0; t < T; ++t)
    GRPO_CHECK(pos[t] >= 0, "[", op, "] pos[", t, "] = ", pos[t], " is negative");
}

// cs, sn [D] = cat(f, f) of the cos/sin table rows [D/2] at position p (the broadcast rows of HF's rotary
// embedding).
void gather_rows(float* cs, float* sn, const float* cos, const float* sin, int32_t p, int64_t D) {
  const int64_t half = D / 2;
  const float* c = cos + int64_t{p} * half;
  const float* s = sin + int64_t{p} * half;
  for (int64_t i = 0; i < half; ++i) {
    cs[i] = cs[i + half] = c[i];
    sn[i] = sn[i + half] = s[i];
  }
}

// One token's heads x [nh, D] in place. Forward: x' = x cos + rotate_half(x) sin. Backward (inverse):
// x' = x cos + rotate_half^T(x sin).
void rotate_token(float* x, const float* cs, const float* sn, int64_t nh, int64_t D, bool backward) {
  const int64_t half = D / 2;
  float tmp[kMaxHeadDim];  // [D]
  for (int64_t h = 0; h < nh; ++h) {
    float* xh = x + h * D;  // [D]
    if (!backward) {
      vec::mul_scalar(tmp, xh + half, -1.0f, half);  // rotate_half(x) = cat(-x2, x1)
      for (int64_t i = 0; i < half; ++i) tmp[half + i] = xh[i];
      vec::mul(tmp, tmp, sn, D);                     // rotate_half(x) * sin
    } else {
      vec::mul(tmp, xh, sn, D);                      // u = dy * sin
      for (int64_t i = 0; i < half; ++i) {           // rotate_half^T(u) = cat(u2, -u1)
        const float u1 = tmp[i];
        tmp[i] = tmp[half + i];
        tmp[half + i] = -u1;
      }
    }
    vec::mul(xh, xh, cs, D);   // x * cos
    vec::add(xh, xh, tmp, D);  // + the rotated term
  }
}

void rope(const char* op, float* x, const int32_t* pos, const float* cos, const float* sin, int64_t T, int64_t nh,
          int64_t D, bool backward) {
  check_args(op, pos, T, nh, D);
  parallel_rows(T, nh * D, [&](int64_t t) {
    float cs[kMaxHeadDim], sn[kMaxHeadDim];  // [D] each
    gather_rows(cs, sn, cos, sin, pos[t], D);
    rotate_token(x + t * nh * D, cs, sn, nh, D, backward);
  });
}

}  // namespace

void rope_forward(float* x, const int32_t* pos, const float* cos, const float* sin, int64_t T, int64_t nh,
                  int64_t D) {
  GRPO_PROFILE("plain_rope_forward");
  rope("plain_rope_forward", x, pos, cos, sin, T, nh, D, false);
}

void rope_backward(float* dx, const int32_t* pos, const float* cos, const float* sin, int64_t T, int64_t nh,
                   int64_t D) {
  GRPO_PROFILE("plain_rope_backward");
  rope("plain_rope_backward", dx, pos, cos, sin, T, nh, D, true);
}

}  // namespace grpo::plain
