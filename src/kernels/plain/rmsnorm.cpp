// Plain RMSNorm (see plain_ops.h), the HF eager module written out op by op:
//   var = x.pow(2).mean(-1); rstd = rsqrt(var + eps); xhat = x * rstd; y = w * xhat
// Forward: the ops.h signature has no workspace, so y is the temporary of every [N, C] pass (x^2, then
// x * rstd, then * w); when y aliases x, the squares cannot be stored and the mean pass squares as it sums.
// Backward: autograd's chain in separate passes over [N, C] temporaries from the workspace; xhat, which
// autograd would have kept from the forward, is recomputed from x and rstd (ops.h saves only rstd).
#include <cmath>

#include "core/error.h"
#include "core/profiler.h"
#include "core/threads.h"
#include "kernels/plain/parallel.h"
#include "kernels/plain/vec.h"
#include "kernels/plain_ops.h"

namespace grpo::plain {
namespace {

constexpr int64_t kColumnSlice = 64;  // floats per work item of the column sum (4 cache lines)

void check_sizes(const char* op, int64_t N, int64_t C) {
  GRPO_CHECK(N >= 0 && C > 0, "[", op, "] expected N >= 0 and C > 0, got N=", N, " C=", C);
}

// dst [C] += sum over the N rows of src [N, C] (the reduction over dim 0): threads own column slices and
// add the rows in order, so the result does not depend on the thread count.
void column_sum_accumulate(float* dst, const float* src, int64_t N, int64_t C) {
  const int64_t slices = (C + kColumnSlice - 1) / kColumnSlice;
  parallel_for(slices, N * C >= kGrain, [&](int64_t s) {
    const int64_t c0 = s * kColumnSlice, width = std::min(kColumnSlice, C - c0);
    for (int64_t n = 0; n < N; ++n) vec::add(dst + c0, dst + c0, src + n * C + c0, width);
  });
}

}  // namespace

void rmsnorm_forward(float* y, float* rstd, const float* x, const float* w, int64_t N, int64_t C, float eps) {
  GRPO_PROFILE("plain_rmsnorm_forward");
  check_sizes("plain_rmsnorm_forward", N, C);
  const float inv_c = 1.0f / static_cast<float>(C);
  if (y != x) {
    parallel_rows(N, C, [&](int64_t n) { vec::square(y + n * C, x + n * C, C); });            // y = x^2
    parallel_rows(N, C, [&](int64_t n) { rstd[n] = vec::sum(y + n * C, C) * inv_c; });       // var [N]
  } else {
    parallel_rows(N, C, [&](int64_t n) { rstd[n] = vec::dot(x + n * C, x + n * C, C) * inv_c; });
  }
  parallel_blocks(N, [&](int64_t i0, int64_t len) { vec::add_scalar(rstd + i0, rstd + i0, eps, len); });
  parallel_blocks(N, [&](int64_t i0, int64_t len) {
    for (int64_t i = i0; i < i0 + len; ++i) rstd[i] = 1.0f / std::sqrt(rstd[i]);
  });
  parallel_rows(N, C, [&](int64_t n) { vec::mul_scalar(y + n * C, x + n * C, rstd[n], C); });  // xhat
  parallel_rows(N, C, [&](int64_t n) { vec::mul(y + n * C, y + n * C, w, C); });               // * w
}

int64_t rmsnorm_backward_ws_floats(int64_t N, int64_t C) {
  check_sizes("plain_rmsnorm_backward_ws_floats", N, C);
  return 2 * N * C + N;  // two [N, C] temporaries and one [N]
}

void rmsnorm_backward(float* dx, float* dw, const float* dy, const float* x, const float* w, const float* rstd,
                      int64_t N, int64_t C, float* ws) {
  GRPO_PROFILE("plain_rmsnorm_backward");
  check_sizes("plain_rmsnorm_backward", N, C);
  GRPO_CHECK(N == 0 || ws, "[plain_rmsnorm_backward] null workspace");
  float* t1 = ws;              // [N, C]
  float* t2 = ws + N * C;      // [N, C]
  float* dr = ws + 2 * N * C;  // [N]
  // y = w * xhat:  dw += sum_n dy * xhat;  dxhat = dy * w
  parallel_rows(N, C, [&](int64_t n) { vec::mul_scalar(t1 + n * C, x + n * C, rstd[n], C); });     // xhat
  parallel_rows(N, C, [&](int64_t n) { vec::mul(t2 + n * C, dy + n * C, t1 + n * C, C); });         // dy*xhat
  column_sum_accumulate(dw, t2, N, C);
  parallel_rows(N, C, [&](int64_t n) { vec::mul(t1 + n * C, dy + n * C, w, C); });                  // dxhat
  // xhat = x * rstd:  d rstd = sum_c dxhat * x;  dx = dxhat * rstd (+ the path through rstd, below)
  parallel_rows(N, C, [&](int64_t n) { vec::mul(t2 + n * C, t1 + n * C, x + n * C, C); });
  parallel_rows(N, C, [&](int64_t n) { dr[n] = vec::sum(t2 + n * C, C); });
  // rstd = (var + eps)^-1/2:  d var = d rstd * -rstd^3 / 2;  var = mean(x^2):  d x += 2 x d var / C
  const float k = -1.0f / static_cast<float>(C);  // (-1/2) * (2/C)
  parallel_blocks(N, [&](int64_t i0, int64_t len) {
    for (int64_t i = i0; i < i0 + len; ++i) dr[i] *= k * rstd[i] * rstd[i] * rstd[i];
  });
  parallel_rows(N, C, [&](int64_t n) { vec::mul_scalar(dx + n * C, t1 + n * C, rstd[n], C); });
  parallel_rows(N, C, [&](int64_t n) { vec::mul_scalar(t2 + n * C, x + n * C, dr[n], C); });
  parallel_rows(N, C, [&](int64_t n) { vec::add(dx + n * C, dx + n * C, t2 + n * C, C); });
}

}  // namespace grpo::plain
