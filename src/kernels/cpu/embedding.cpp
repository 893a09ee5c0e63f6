// Token embedding lookup (row copies) and its backward (scatter-add of rows into the table gradient).
// The backward is deterministic without atomics: threads own disjoint column slices of the table and
// walk the tokens in order, so every table entry sums its contributions in token order.
#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/profiler.h"
#include "core/threads.h"
#include "kernels/cpu/nn_simd.h"
#include "kernels/ops.h"

namespace grpo::ops {
namespace {

constexpr int64_t kColumnSlice = 64;  // floats per work item of the backward (4 cache lines)

void check_ids(const int32_t* ids, int64_t T, const char* op) {
  for (int64_t t = 0; t < T; ++t)
    GRPO_CHECK(ids[t] >= 0, "[", op, "] token ", t, ": id ", ids[t], " is negative");
}

[[gnu::always_inline]] inline void scatter_columns(float* dtable, const float* dout, const int32_t* ids,
                                                   int64_t T, int64_t C, int64_t c0, int64_t width) {
  for (int64_t t = 0; t < T; ++t) {
    float* dst = dtable + int64_t{ids[t]} * C + c0;  // [width] slice of row ids[t]
    const float* src = dout + t * C + c0;
#pragma omp simd
    for (int64_t c = 0; c < width; ++c) dst[c] += src[c];
  }
}
NN_BEGIN_AVX512
void scatter_columns_avx512(float* dtable, const float* dout, const int32_t* ids, int64_t T, int64_t C,
                            int64_t c0, int64_t width) {
  scatter_columns(dtable, dout, ids, T, C, c0, width);
}
NN_END_TARGET
NN_BEGIN_AVX2
void scatter_columns_avx2(float* dtable, const float* dout, const int32_t* ids, int64_t T, int64_t C,
                          int64_t c0, int64_t width) {
  scatter_columns(dtable, dout, ids, T, C, c0, width);
}
NN_END_TARGET

}  // namespace

void embedding_forward(float* out, const int32_t* ids, const float* table, int64_t T, int64_t C) {
  GRPO_PROFILE("embedding_forward");
  GRPO_CHECK(T >= 0 && C > 0, "[embedding_forward] expected T >= 0 and C > 0, got T=", T, " C=", C);
  check_ids(ids, T, "embedding_forward");
  parallel_for(T, T * C >= (1 << 15), [&](int64_t t) {
    std::memcpy(out + t * C, table + int64_t{ids[t]} * C, static_cast<size_t>(C) * sizeof(float));
  });
}

void embedding_backward(float* dtable, const float* dout, const int32_t* ids, int64_t T, int64_t C) {
  GRPO_PROFILE("embedding_backward");
  GRPO_CHECK(T >= 0 && C > 0, "[embedding_backward] expected T >= 0 and C > 0, got T=", T, " C=", C);
  check_ids(ids, T, "embedding_backward");
  const bool avx512 = cpu::nn_use_avx512();
  const int64_t slices = (C + kColumnSlice - 1) / kColumnSlice;
  parallel_for(slices, T * C >= (1 << 15), [&](int64_t sl) {
    const int64_t c0 = sl * kColumnSlice, width = std::min(kColumnSlice, C - c0);
    if (avx512)
      scatter_columns_avx512(dtable, dout, ids, T, C, c0, width);
    else
      scatter_columns_avx2(dtable, dout, ids, T, C, c0, width);
  });
}

}  // namespace grpo::ops
