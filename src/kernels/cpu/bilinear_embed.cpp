// The bilinear position embedding of the vision tower: each patch row is the weighted sum of four rows of the
// learned table, and the backward scatters the weighted gradient back into the table. The backward is
// deterministic without atomics (as embedding_backward): threads own disjoint column slices of the table and
// walk the patches and corners in order. Plain loops compiled for AVX-512 and AVX2.
#include <algorithm>

#include "core/error.h"
#include "core/profiler.h"
#include "core/threads.h"
#include "kernels/cpu/nn_simd.h"
#include "kernels/vision_ops.h"

namespace grpo::ops {
namespace {

constexpr int kCorners = 4;
constexpr int64_t kColumnSlice = 64;

[[gnu::always_inline]] inline void gather_rows(float* out, const int32_t* idx, const float* w, const float* table,
                                               int64_t n0, int64_t n1, int64_t N, int64_t C) {
  for (int64_t n = n0; n < n1; ++n) {
    float* o = out + n * C;  // [C]
    const float* r0 = table + int64_t{idx[n]} * C;
    const float* r1 = table + int64_t{idx[N + n]} * C;
    const float* r2 = table + int64_t{idx[2 * N + n]} * C;
    const float* r3 = table + int64_t{idx[3 * N + n]} * C;
    const float w0 = w[n], w1 = w[N + n], w2 = w[2 * N + n], w3 = w[3 * N + n];
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) o[c] = w0 * r0[c] + w1 * r1[c] + w2 * r2[c] + w3 * r3[c];
  }
}

[[gnu::always_inline]] inline void scatter_columns(float* dtable, const float* dout, const int32_t* idx,
                                                   const float* w, int64_t N, int64_t C, int64_t c0, int64_t width) {
  for (int64_t n = 0; n < N; ++n) {
    const float* g = dout + n * C + c0;  // [width]
    for (int k = 0; k < kCorners; ++k) {
      float* dst = dtable + int64_t{idx[k * N + n]} * C + c0;
      const float wk = w[k * N + n];
#pragma omp simd
      for (int64_t c = 0; c < width; ++c) dst[c] += wk * g[c];
    }
  }
}

NN_BEGIN_AVX512
void gather_rows_avx512(float* out, const int32_t* idx, const float* w, const float* table, int64_t n0, int64_t n1,
                        int64_t N, int64_t C) {
  gather_rows(out, idx, w, table, n0, n1, N, C);
}
void scatter_columns_avx512(float* dtable, const float* dout, const int32_t* idx, const float* w, int64_t N, int64_t C,
                            int64_t c0, int64_t width) {
  scatter_columns(dtable, dout, idx, w, N, C, c0, width);
}
NN_END_TARGET
NN_BEGIN_AVX2
void gather_rows_avx2(float* out, const int32_t* idx, const float* w, const float* table, int64_t n0, int64_t n1,
                      int64_t N, int64_t C) {
  gather_rows(out, idx, w, table, n0, n1, N, C);
}
void scatter_columns_avx2(float* dtable, const float* dout, const int32_t* idx, const float* w, int64_t N, int64_t C,
                          int64_t c0, int64_t width) {
  scatter_columns(dtable, dout, idx, w, N, C, c0, width);
}
NN_END_TARGET

void check_args(const int32_t* idx, int64_t N, int64_t P, int64_t C, const char* op) {
  GRPO_CHECK(N >= 0 && P > 0 && C > 0, "[", op, "] expected N >= 0, P > 0, C > 0, got N=", N, " P=", P, " C=", C);
  for (int64_t i = 0; i < kCorners * N; ++i)
    GRPO_CHECK(idx[i] >= 0 && idx[i] < P, "[", op, "] corner ", i / N, " of patch ", i % N, ": table row ", idx[i],
               " outside [0, ", P, ")");
}

}  // namespace

void bilinear_embed_forward(float* out, const int32_t* idx, const float* w, const float* table, int64_t N, int64_t P,
                            int64_t C) {
  GRPO_PROFILE("bilinear_embed_forward");
  check_args(idx, N, P, C, "bilinear_embed_forward");
  const bool avx512 = cpu::nn_use_avx512();
  constexpr int64_t kRows = 16;
  const int64_t items = (N + kRows - 1) / kRows;
  parallel_for(items, N * C >= (1 << 15), [&](int64_t it) {
    const int64_t n0 = it * kRows, n1 = std::min(N, n0 + kRows);
    if (avx512)
      gather_rows_avx512(out, idx, w, table, n0, n1, N, C);
    else
      gather_rows_avx2(out, idx, w, table, n0, n1, N, C);
  });
}

void bilinear_embed_backward(float* dtable, const float* dout, const int32_t* idx, const float* w, int64_t N, int64_t P,
                             int64_t C) {
  GRPO_PROFILE("bilinear_embed_backward");
  check_args(idx, N, P, C, "bilinear_embed_backward");
  const bool avx512 = cpu::nn_use_avx512();
  const int64_t slices = (C + kColumnSlice - 1) / kColumnSlice;
  parallel_for(slices, N * C >= (1 << 15), [&](int64_t sl) {
    const int64_t c0 = sl * kColumnSlice, width = std::min(kColumnSlice, C - c0);
    if (avx512)
      scatter_columns_avx512(dtable, dout, idx, w, N, C, c0, width);
    else
      scatter_columns_avx2(dtable, dout, idx, w, N, C, c0, width);
  });
}

}  // namespace grpo::ops
