// Strided batched f32 GEMM on the CPU (see ops.h): one oneDNN 3-D matmul per call, its primitive created
// once per shape and kept in a bounded cache of its own (dnnl_matmul.h). Transposes and batch strides are
// memory strides, no copies. As gemm, it makes the ISA decision (which caps oneDNN) before its first
// primitive and names shapes and ISA in its errors.
#include <dnnl.hpp>

#include <algorithm>
#include <bit>
#include <tuple>

#include "core/error.h"
#include "core/profiler.h"
#include "kernels/backend.h"
#include "kernels/cpu/dnnl_matmul.h"
#include "kernels/ops.h"

namespace grpo::ops {
namespace {

using Key = std::tuple<int, int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                       int64_t, uint32_t, uint32_t>;

cpu_dnnl::PlanCache<Key>& plans() {
  static cpu_dnnl::PlanCache<Key> cache;
  return cache;
}

// op(X)_b of logical shape [batch, rows, cols]: stored [rows, cols] (N) or [cols, rows] (T) with leading
// dimension ld, matrices stride elements apart.
dnnl::memory::desc batched_desc(Trans t, int64_t batch, int64_t rows, int64_t cols, int64_t ld, int64_t stride) {
  const dnnl::memory::dims strides = t == Trans::N ? dnnl::memory::dims{stride, ld, 1} : dnnl::memory::dims{stride, 1, ld};
  return dnnl::memory::desc({batch, rows, cols}, dnnl::memory::data_type::f32, strides);
}

}  // namespace

void gemm_batched(Trans ta, Trans tb, int64_t batch, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                  int64_t lda, int64_t stride_a, const float* B, int64_t ldb, int64_t stride_b, float beta, float* C,
                  int64_t ldc, int64_t stride_c) {
  GRPO_PROFILE("gemm_batched");
  GRPO_CHECK(batch >= 0 && M >= 0 && N >= 0 && K >= 0, "[gemm_batched] sizes must be >= 0, got batch=", batch,
             " M=", M, " N=", N, " K=", K);
  GRPO_CHECK(beta == 0.0f || beta == 1.0f, "[gemm_batched] beta must be 0 or 1, got ", beta);
  const int64_t a_cols = ta == Trans::N ? K : M, b_cols = tb == Trans::N ? N : K;
  GRPO_CHECK(lda >= std::max<int64_t>(a_cols, 1) && ldb >= std::max<int64_t>(b_cols, 1) && ldc >= std::max<int64_t>(N, 1),
             "[gemm_batched] leading dimensions lda=", lda, " ldb=", ldb, " ldc=", ldc, " below the columns ", a_cols,
             ", ", b_cols, ", ", N);
  GRPO_CHECK(stride_a >= 0 && stride_b >= 0 && stride_c >= 0, "[gemm_batched] batch strides must be >= 0, got ",
             stride_a, ", ", stride_b, ", ", stride_c);
  if (batch == 0 || M == 0 || N == 0) return;
  GRPO_CHECK(C && (K == 0 || (A && B)), "[gemm_batched] null A, B or C");
  if (K == 0) {  // op(A) op(B) is zero: C = beta * C
    if (beta == 0.0f)
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t i = 0; i < M; ++i) std::fill(C + b * stride_c + i * ldc, C + b * stride_c + i * ldc + N, 0.0f);
    return;
  }
  const Isa level = isa();  // the decision caps oneDNN before its first primitive
  const Key key{static_cast<int>(ta), static_cast<int>(tb), batch, M, N, K, lda, stride_a, ldb, stride_b, ldc,
                stride_c, std::bit_cast<uint32_t>(alpha), std::bit_cast<uint32_t>(beta)};
  try {
    const auto plan = plans().get(key, [&] {
      const dnnl::memory::desc c_md({batch, M, N}, dnnl::memory::data_type::f32, dnnl::memory::dims{stride_c, ldc, 1});
      return cpu_dnnl::make_plan(batched_desc(ta, batch, M, K, lda, stride_a),
                                 batched_desc(tb, batch, K, N, ldb, stride_b), c_md, alpha, beta);
    });
    cpu_dnnl::execute(*plan, A, B, C);
  } catch (const std::exception& e) {  // dnnl::error, std::bad_alloc
    const char* what = dynamic_cast<const std::bad_alloc*>(&e) ? "out of memory" : e.what();
    fail("[gemm_batched] f32 ", batch, " x ", M, "x", N, "x", K, " ", ta == Trans::N ? "N" : "T",
         tb == Trans::N ? "N" : "T", " on ", isa_name(level), ": ", what);
  }
}

}  // namespace grpo::ops
