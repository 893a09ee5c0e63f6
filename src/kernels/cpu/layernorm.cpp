// LayerNorm with weight and bias over rows of length C in fp32 (the vision tower's norms and its mergers'):
// forward y = (x - mean) rstd w + b, backward dx (=), dw and db (+=). As in rmsnorm.cpp, the dw/db reduction
// is deterministic for any thread count: rows are cut into fixed blocks whose partial sums go to the
// workspace and are added in block order. Plain loops compiled for AVX-512 and AVX2.
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/profiler.h"
#include "core/threads.h"
#include "kernels/cpu/nn_simd.h"
#include "kernels/vision_ops.h"

namespace grpo::ops {
namespace {

constexpr int64_t kRowsPerBlock = 32;  // rows per dw/db partial (and per OpenMP work item)

int64_t row_blocks(int64_t N) { return (N + kRowsPerBlock - 1) / kRowsPerBlock; }

// Two passes over the row (mean, then the variance of the centred values): no cancellation. y may alias x.
[[gnu::always_inline]] inline void forward_rows(float* y, float* mean, float* rstd, const float* x, const float* w,
                                                const float* b, int64_t n0, int64_t n1, int64_t C, float eps) {
  for (int64_t n = n0; n < n1; ++n) {
    const float* xr = x + n * C;  // [C]
    float* yr = y + n * C;        // [C]
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int64_t c = 0; c < C; ++c) s += xr[c];
    const float m = s / static_cast<float>(C);
    float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
    for (int64_t c = 0; c < C; ++c) ss += (xr[c] - m) * (xr[c] - m);
    const float r = 1.0f / std::sqrt(ss / static_cast<float>(C) + eps);
    mean[n] = m;
    rstd[n] = r;
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) yr[c] = (xr[c] - m) * r * w[c] + b[c];
  }
}

// With xh = (x - mean) rstd and g = w dy: dx = rstd (g - mean(g) - xh mean(g xh)); partials [2, C] (=) hold
// the rows' sums of dy xh (for dw) and dy (for db). dx may alias dy.
[[gnu::always_inline]] inline void backward_rows(float* dx, float* partials, const float* dy, const float* x,
                                                 const float* w, const float* mean, const float* rstd, int64_t n0,
                                                 int64_t n1, int64_t C) {
  float* pdw = partials;      // [C]
  float* pdb = partials + C;  // [C]
  for (int64_t c = 0; c < 2 * C; ++c) partials[c] = 0.0f;
  const float inv_c = 1.0f / static_cast<float>(C);
  for (int64_t n = n0; n < n1; ++n) {
    const float* xr = x + n * C;    // [C]
    const float* dyr = dy + n * C;  // [C]
    float* dxr = dx + n * C;        // [C]
    const float m = mean[n], r = rstd[n];
    float sum_g = 0.0f, sum_gx = 0.0f;
#pragma omp simd reduction(+ : sum_g, sum_gx)
    for (int64_t c = 0; c < C; ++c) {
      const float g = w[c] * dyr[c];
      sum_g += g;
      sum_gx += g * (xr[c] - m) * r;
    }
    const float mg = sum_g * inv_c, mgx = sum_gx * inv_c;
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) {
      const float d = dyr[c], xh = (xr[c] - m) * r;
      pdw[c] += d * xh;
      pdb[c] += d;
      dxr[c] = r * (w[c] * d - mg - xh * mgx);
    }
  }
}

// dw/db [C] += the sums over blocks of partials [blocks, 2, C], columns c0..c0+width, blocks in order.
[[gnu::always_inline]] inline void reduce_partials(float* dw, float* db, const float* partials, int64_t blocks,
                                                   int64_t C, int64_t c0, int64_t width) {
  for (int64_t bl = 0; bl < blocks; ++bl) {
    const float* p = partials + bl * 2 * C + c0;
#pragma omp simd
    for (int64_t c = 0; c < width; ++c) {
      dw[c0 + c] += p[c];
      db[c0 + c] += p[C + c];
    }
  }
}

NN_BEGIN_AVX512
void forward_rows_avx512(float* y, float* mean, float* rstd, const float* x, const float* w, const float* b, int64_t n0,
                         int64_t n1, int64_t C, float eps) {
  forward_rows(y, mean, rstd, x, w, b, n0, n1, C, eps);
}
void backward_rows_avx512(float* dx, float* partials, const float* dy, const float* x, const float* w,
                          const float* mean, const float* rstd, int64_t n0, int64_t n1, int64_t C) {
  backward_rows(dx, partials, dy, x, w, mean, rstd, n0, n1, C);
}
void reduce_partials_avx512(float* dw, float* db, const float* partials, int64_t blocks, int64_t C, int64_t c0,
                            int64_t width) {
  reduce_partials(dw, db, partials, blocks, C, c0, width);
}
NN_END_TARGET
NN_BEGIN_AVX2
void forward_rows_avx2(float* y, float* mean, float* rstd, const float* x, const float* w, const float* b, int64_t n0,
                       int64_t n1, int64_t C, float eps) {
  forward_rows(y, mean, rstd, x, w, b, n0, n1, C, eps);
}
void backward_rows_avx2(float* dx, float* partials, const float* dy, const float* x, const float* w,
                        const float* mean, const float* rstd, int64_t n0, int64_t n1, int64_t C) {
  backward_rows(dx, partials, dy, x, w, mean, rstd, n0, n1, C);
}
void reduce_partials_avx2(float* dw, float* db, const float* partials, int64_t blocks, int64_t C, int64_t c0,
                          int64_t width) {
  reduce_partials(dw, db, partials, blocks, C, c0, width);
}
NN_END_TARGET

void check_sizes(int64_t N, int64_t C, const char* op) {
  GRPO_CHECK(N >= 0 && C > 0, "[", op, "] expected N >= 0 rows of C > 0 floats, got N=", N, " C=", C);
}

}  // namespace

void layernorm_forward(float* y, float* mean, float* rstd, const float* x, const float* w, const float* b, int64_t N,
                       int64_t C, float eps) {
  GRPO_PROFILE("layernorm_forward");
  check_sizes(N, C, "layernorm_forward");
  GRPO_CHECK(eps >= 0.0f, "[layernorm_forward] eps must be >= 0, got ", eps);
  const bool avx512 = cpu::nn_use_avx512();
  const int64_t blocks = row_blocks(N);
  parallel_for(blocks, N * C >= (1 << 15), [&](int64_t bl) {
    const int64_t n0 = bl * kRowsPerBlock, n1 = std::min(N, n0 + kRowsPerBlock);
    if (avx512)
      forward_rows_avx512(y, mean, rstd, x, w, b, n0, n1, C, eps);
    else
      forward_rows_avx2(y, mean, rstd, x, w, b, n0, n1, C, eps);
  });
}

int64_t layernorm_backward_ws_floats(int64_t N, int64_t C) { return row_blocks(N) * 2 * C; }

void layernorm_backward(float* dx, float* dw, float* db, const float* dy, const float* x, const float* w,
                        const float* mean, const float* rstd, int64_t N, int64_t C, float* ws) {
  GRPO_PROFILE("layernorm_backward");
  check_sizes(N, C, "layernorm_backward");
  const bool avx512 = cpu::nn_use_avx512();
  const int64_t blocks = row_blocks(N);
  float* partials = ws;  // [blocks, 2, C]
  constexpr int64_t kColumnSlice = 64;
  const int64_t slices = (C + kColumnSlice - 1) / kColumnSlice;
#pragma omp parallel if (N * C >= (1 << 15))
  {
#pragma omp for schedule(static)
    for (int64_t bl = 0; bl < blocks; ++bl) {
      const int64_t n0 = bl * kRowsPerBlock, n1 = std::min(N, n0 + kRowsPerBlock);
      if (avx512)
        backward_rows_avx512(dx, partials + bl * 2 * C, dy, x, w, mean, rstd, n0, n1, C);
      else
        backward_rows_avx2(dx, partials + bl * 2 * C, dy, x, w, mean, rstd, n0, n1, C);
    }
#pragma omp for schedule(static)
    for (int64_t sl = 0; sl < slices; ++sl) {
      const int64_t c0 = sl * kColumnSlice, width = std::min(kColumnSlice, C - c0);
      if (avx512)
        reduce_partials_avx512(dw, db, partials, blocks, C, c0, width);
      else
        reduce_partials_avx2(dw, db, partials, blocks, C, c0, width);
    }
  }
}

}  // namespace grpo::ops
