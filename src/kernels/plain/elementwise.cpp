// Plain residual add and token embedding (see plain_ops.h): ATen's add_ (one blocked pass), index_select
// (row copies) and the dense embedding backward (index_add of dout rows into the table gradient; threads
// own column slices and walk the tokens in order, so the sums do not depend on the thread count).
#include <cstring>

#include "core/error.h"
#include "core/profiler.h"
#include "core/threads.h"
#include "kernels/plain/parallel.h"
#include "kernels/plain/vec.h"
#include "kernels/plain_ops.h"

namespace grpo::plain {
namespace {

constexpr int64_t kColumnSlice = 64;  // floats per work item of the backward (4 cache lines)

void check_args(const char* op, const int32_t* ids, int64_t T, int64_t C) {
  GRPO_CHECK(T >= 0 && C > 0, "[", op, "] expected T >= 0 and C > 0, got T=", T, " C=", C);
  for (int64_t t = 0; t < T; ++t) GRPO_CHECK(ids[t] >= 0, "[", op, "] token ", t, ": id ", ids[t], " is negative");
}

}  // namespace

void add_inplace(float* y, const float* x, int64_t n) {
  GRPO_PROFILE("plain_add_inplace");
  GRPO_CHECK(n >= 0, "[plain_add_inplace] n must be >= 0, got ", n);
  parallel_blocks(n, [&](int64_t i0, int64_t len) { vec::add(y + i0, y + i0, x + i0, len); });
}

void embedding_forward(float* out, const int32_t* ids, const float* table, int64_t T, int64_t C) {
  GRPO_PROFILE("plain_embedding_forward");
  check_args("plain_embedding_forward", ids, T, C);
  parallel_rows(T, C, [&](int64_t t) {
    std::memcpy(out + t * C, table + int64_t{ids[t]} * C, static_cast<size_t>(C) * sizeof(float));
  });
}

void embedding_backward(float* dtable, const float* dout, const int32_t* ids, int64_t T, int64_t C) {
  GRPO_PROFILE("plain_embedding_backward");
  check_args("plain_embedding_backward", ids, T, C);
  const int64_t slices = (C + kColumnSlice - 1) / kColumnSlice;
  parallel_for(slices, T * C >= kGrain, [&](int64_t s) {
    const int64_t c0 = s * kColumnSlice, width = std::min(kColumnSlice, C - c0);
    for (int64_t t = 0; t < T; ++t) {
      float* row = dtable + int64_t{ids[t]} * C + c0;  // [width]
      vec::add(row, row, dout + t * C + c0, width);
    }
  });
}

}  // namespace grpo::plain
