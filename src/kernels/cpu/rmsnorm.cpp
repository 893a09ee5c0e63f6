// RMSNorm over rows of length C in fp32 (also the per-head q/k norm with N = T*H, C = D):
// forward y = x * rstd * w, backward dx (=) and dw (+=). The dw reduction is deterministic for any
// thread count: rows are cut into fixed blocks, each block writes its partial dw into the workspace, and
// the partials are summed in block order. Plain loops compiled for AVX-512 and AVX2.
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/profiler.h"
#include "core/threads.h"
#include "kernels/cpu/nn_simd.h"
#include "kernels/ops.h"

namespace grpo::ops {
namespace {

constexpr int64_t kRowsPerBlock = 32;  // rows per dw partial (and per OpenMP work item)

int64_t row_blocks(int64_t N) { return (N + kRowsPerBlock - 1) / kRowsPerBlock; }

// y may alias x (each element is read before it is written).
[[gnu::always_inline]] inline void forward_rows(float* y, float* rstd, const float* x, const float* w, int64_t n0,
                                                int64_t n1, int64_t C, float eps) {
  for (int64_t n = n0; n < n1; ++n) {
    const float* xr = x + n * C;  // [C]
    float* yr = y + n * C;        // [C]
    float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
    for (int64_t c = 0; c < C; ++c) ss += xr[c] * xr[c];
    const float r = 1.0f / std::sqrt(ss / static_cast<float>(C) + eps);
    rstd[n] = r;
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) yr[c] = xr[c] * r * w[c];
  }
}

// dx = r (w dy) - x r^3 mean(w dy x); partial_dw [C] (=) sum over the rows of dy x r. dx may alias dy.
[[gnu::always_inline]] inline void backward_rows(float* dx, float* partial_dw, const float* dy, const float* x,
                                                 const float* w, const float* rstd, int64_t n0, int64_t n1,
                                                 int64_t C) {
  for (int64_t c = 0; c < C; ++c) partial_dw[c] = 0.0f;
  for (int64_t n = n0; n < n1; ++n) {
    const float* xr = x + n * C;    // [C]
    const float* dyr = dy + n * C;  // [C]
    float* dxr = dx + n * C;        // [C]
    const float r = rstd[n];
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int64_t c = 0; c < C; ++c) dot += dyr[c] * w[c] * xr[c];
    const float k = r * r * r * dot / static_cast<float>(C);
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) {
      const float g = dyr[c];
      partial_dw[c] += g * xr[c] * r;
      dxr[c] = r * w[c] * g - xr[c] * k;
    }
  }
}

// dw [C] += sum over blocks of partials [blocks, C], columns c0..c0+width, blocks in order.
[[gnu::always_inline]] inline void reduce_partials(float* dw, const float* partials, int64_t blocks, int64_t C,
                                                   int64_t c0, int64_t width) {
  for (int64_t b = 0; b < blocks; ++b) {
    const float* p = partials + b * C + c0;
#pragma omp simd
    for (int64_t c = 0; c < width; ++c) dw[c0 + c] += p[c];
  }
}

NN_BEGIN_AVX512
void forward_rows_avx512(float* y, float* rstd, const float* x, const float* w, int64_t n0, int64_t n1, int64_t C,
                         float eps) {
  forward_rows(y, rstd, x, w, n0, n1, C, eps);
}
void backward_rows_avx512(float* dx, float* partial_dw, const float* dy, const float* x, const float* w,
                          const float* rstd, int64_t n0, int64_t n1, int64_t C) {
  backward_rows(dx, partial_dw, dy, x, w, rstd, n0, n1, C);
}
void reduce_partials_avx512(float* dw, const float* partials, int64_t blocks, int64_t C, int64_t c0, int64_t width) {
  reduce_partials(dw, partials, blocks, C, c0, width);
}
NN_END_TARGET
NN_BEGIN_AVX2
void forward_rows_avx2(float* y, float* rstd, const float* x, const float* w, int64_t n0, int64_t n1, int64_t C,
                       float eps) {
  forward_rows(y, rstd, x, w, n0, n1, C, eps);
}
void backward_rows_avx2(float* dx, float* partial_dw, const float* dy, const float* x, const float* w,
                        const float* rstd, int64_t n0, int64_t n1, int64_t C) {
  backward_rows(dx, partial_dw, dy, x, w, rstd, n0, n1, C);
}
void reduce_partials_avx2(float* dw, const float* partials, int64_t blocks, int64_t C, int64_t c0, int64_t width) {
  reduce_partials(dw, partials, blocks, C, c0, width);
}
NN_END_TARGET

void check_sizes(int64_t N, int64_t C, const char* op) {
  GRPO_CHECK(N >= 0 && C > 0, "[", op, "] expected N >= 0 rows of C > 0 floats, got N=", N, " C=", C);
}

}  // namespace

void rmsnorm_forward(float* y, float* rstd, const float* x, const float* w, int64_t N, int64_t C, float eps) {
  GRPO_PROFILE("rmsnorm_forward");
  check_sizes(N, C, "rmsnorm_forward");
  GRPO_CHECK(eps >= 0.0f, "[rmsnorm_forward] eps must be >= 0, got ", eps);
  const bool avx512 = cpu::nn_use_avx512();
  const int64_t blocks = row_blocks(N);
  parallel_for(blocks, N * C >= (1 << 15), [&](int64_t b) {
    const int64_t n0 = b * kRowsPerBlock, n1 = std::min(N, n0 + kRowsPerBlock);
    if (avx512)
      forward_rows_avx512(y, rstd, x, w, n0, n1, C, eps);
    else
      forward_rows_avx2(y, rstd, x, w, n0, n1, C, eps);
  });
}

int64_t rmsnorm_backward_ws_floats(int64_t N, int64_t C) { return row_blocks(N) * C; }

void rmsnorm_backward(float* dx, float* dw, const float* dy, const float* x, const float* w, const float* rstd,
                      int64_t N, int64_t C, float* ws) {
  GRPO_PROFILE("rmsnorm_backward");
  check_sizes(N, C, "rmsnorm_backward");
  const bool avx512 = cpu::nn_use_avx512();
  const int64_t blocks = row_blocks(N);
  float* partials = ws;  // [blocks, C]
  constexpr int64_t kColumnSlice = 64;
  const int64_t slices = (C + kColumnSlice - 1) / kColumnSlice;
#pragma omp parallel if (N * C >= (1 << 15))
  {
#pragma omp for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t n0 = b * kRowsPerBlock, n1 = std::min(N, n0 + kRowsPerBlock);
      if (avx512)
        backward_rows_avx512(dx, partials + b * C, dy, x, w, rstd, n0, n1, C);
      else
        backward_rows_avx2(dx, partials + b * C, dy, x, w, rstd, n0, n1, C);
    }
#pragma omp for schedule(static)
    for (int64_t sl = 0; sl < slices; ++sl) {
      const int64_t c0 = sl * kColumnSlice, width = std::min(kColumnSlice, C - c0);
      if (avx512)
        reduce_partials_avx512(dw, partials, blocks, C, c0, width);
      else
        reduce_partials_avx2(dw, partials, blocks, C, c0, width);
    }
  }
}

}  // namespace grpo::ops
