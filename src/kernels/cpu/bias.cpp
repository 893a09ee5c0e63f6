// Bias add (y += b on every row) and bias gradient (column sums) of the vision tower's linear layers. The
// gradient splits columns over threads and sums rows in order: deterministic for any thread count. Plain
// loops compiled for AVX-512 and AVX2.
#include <algorithm>

#include "core/error.h"
#include "core/profiler.h"
#include "core/threads.h"
#include "kernels/cpu/nn_simd.h"
#include "kernels/vision_ops.h"

namespace grpo::ops {
namespace {

constexpr int64_t kColumnSlice = 64;

[[gnu::always_inline]] inline void add_rows(float* y, const float* b, int64_t n0, int64_t n1, int64_t F) {
  for (int64_t n = n0; n < n1; ++n) {
    float* yr = y + n * F;
#pragma omp simd
    for (int64_t c = 0; c < F; ++c) yr[c] += b[c];
  }
}

[[gnu::always_inline]] inline void sum_columns(float* db, const float* dy, int64_t N, int64_t F, int64_t c0,
                                               int64_t width) {
  float acc[kColumnSlice] = {0};
  for (int64_t n = 0; n < N; ++n) {
    const float* r = dy + n * F + c0;
#pragma omp simd
    for (int64_t c = 0; c < width; ++c) acc[c] += r[c];
  }
  for (int64_t c = 0; c < width; ++c) db[c0 + c] += acc[c];
}

NN_BEGIN_AVX512
void add_rows_avx512(float* y, const float* b, int64_t n0, int64_t n1, int64_t F) { add_rows(y, b, n0, n1, F); }
void sum_columns_avx512(float* db, const float* dy, int64_t N, int64_t F, int64_t c0, int64_t width) {
  sum_columns(db, dy, N, F, c0, width);
}
NN_END_TARGET
NN_BEGIN_AVX2
void add_rows_avx2(float* y, const float* b, int64_t n0, int64_t n1, int64_t F) { add_rows(y, b, n0, n1, F); }
void sum_columns_avx2(float* db, const float* dy, int64_t N, int64_t F, int64_t c0, int64_t width) {
  sum_columns(db, dy, N, F, c0, width);
}
NN_END_TARGET

}  // namespace

void bias_add(float* y, const float* b, int64_t N, int64_t F) {
  GRPO_PROFILE("bias_add");
  GRPO_CHECK(N >= 0 && F > 0, "[bias_add] expected N >= 0 and F > 0, got N=", N, " F=", F);
  const bool avx512 = cpu::nn_use_avx512();
  constexpr int64_t kRows = 16;
  const int64_t items = (N + kRows - 1) / kRows;
  parallel_for(items, N * F >= (1 << 15), [&](int64_t it) {
    const int64_t n0 = it * kRows, n1 = std::min(N, n0 + kRows);
    if (avx512)
      add_rows_avx512(y, b, n0, n1, F);
    else
      add_rows_avx2(y, b, n0, n1, F);
  });
}

void bias_grad(float* db, const float* dy, int64_t N, int64_t F) {
  GRPO_PROFILE("bias_grad");
  GRPO_CHECK(N >= 0 && F > 0, "[bias_grad] expected N >= 0 and F > 0, got N=", N, " F=", F);
  const bool avx512 = cpu::nn_use_avx512();
  const int64_t slices = (F + kColumnSlice - 1) / kColumnSlice;
  parallel_for(slices, N * F >= (1 << 15), [&](int64_t sl) {
    const int64_t c0 = sl * kColumnSlice, width = std::min(kColumnSlice, F - c0);
    if (avx512)
      sum_columns_avx512(db, dy, N, F, c0, width);
    else
      sum_columns_avx2(db, dy, N, F, c0, width);
  });
}

}  // namespace grpo::ops
