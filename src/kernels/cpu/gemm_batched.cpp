// Strided batched f32 GEMM on the CPU (see ops.h): one oneDNN 3-D matmul per call, its primitive created
// once per shape and kept in a bounded cache of its own (as gemm's: creating one costs ~1 ms, executing a
// cached one nothing). Transposes and batch strides are memory strides, no copies. As gemm, it makes the ISA
// decision (which caps oneDNN) before its first primitive and names shapes and ISA in its errors.
#include <dnnl.hpp>

#include <algorithm>
#include <bit>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "core/error.h"
#include "core/profiler.h"
#include "kernels/backend.h"
#include "kernels/ops.h"

namespace grpo::ops {
namespace {

using Key = std::tuple<int, int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                       int64_t, uint32_t, uint32_t>;

struct Plan {
  dnnl::memory::desc a_md, b_md, c_md;
  dnnl::matmul prim;
};

struct Context {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::mutex mu;
  std::map<Key, std::shared_ptr<const Plan>> plans;
  static constexpr size_t kCapacity = 1024;
};

Context& context() {
  static Context ctx;
  return ctx;
}

// op(X)_b of logical shape [batch, rows, cols]: stored [rows, cols] (N) or [cols, rows] (T) with leading
// dimension ld, matrices stride elements apart.
dnnl::memory::desc batched_desc(Trans t, int64_t batch, int64_t rows, int64_t cols, int64_t ld, int64_t stride) {
  const dnnl::memory::dims strides = t == Trans::N ? dnnl::memory::dims{stride, ld, 1} : dnnl::memory::dims{stride, 1, ld};
  return dnnl::memory::desc({batch, rows, cols}, dnnl::memory::data_type::f32, strides);
}

Plan make_plan(Context& ctx, Trans ta, Trans tb, int64_t batch, int64_t M, int64_t N, int64_t K, float alpha,
               int64_t lda, int64_t sa, int64_t ldb, int64_t sb, float beta, int64_t ldc, int64_t sc) {
  Plan p;
  p.a_md = batched_desc(ta, batch, M, K, lda, sa);
  p.b_md = batched_desc(tb, batch, K, N, ldb, sb);
  p.c_md = dnnl::memory::desc({batch, M, N}, dnnl::memory::data_type::f32, dnnl::memory::dims{sc, ldc, 1});
  dnnl::primitive_attr attr;
  if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
  if (beta != 0.0f) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);
    attr.set_post_ops(ops);
  }
  dnnl::matmul::desc desc(p.a_md, p.b_md, p.c_md);
  p.prim = dnnl::matmul(dnnl::matmul::primitive_desc(desc, attr, ctx.engine));
  return p;
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
    Context& ctx = context();
    std::shared_ptr<const Plan> plan;
    {
      std::lock_guard<std::mutex> lock(ctx.mu);
      auto it = ctx.plans.find(key);
      if (it == ctx.plans.end()) {
        if (ctx.plans.size() >= Context::kCapacity) ctx.plans.clear();
        auto made = std::make_shared<const Plan>(
          make_plan(ctx, ta, tb, batch, M, N, K, alpha, lda, stride_a, ldb, stride_b, beta, ldc, stride_c));
      it = ctx.plans.emplace(key, std::move(made)).first;
      }
      plan = it->second;
    }
    dnnl::memory a(plan->a_md, ctx.engine, const_cast<float*>(A));
    dnnl::memory b(plan->b_md, ctx.engine, const_cast<float*>(B));
    dnnl::memory c(plan->c_md, ctx.engine, C);
    plan->prim.execute(ctx.stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    ctx.stream.wait();
  } catch (const std::exception& e) {  // dnnl::error, std::bad_alloc
    const char* what = dynamic_cast<const std::bad_alloc*>(&e) ? "out of memory" : e.what();
    fail("[gemm_batched] f32 ", batch, " x ", M, "x", N, "x", K, " ", ta == Trans::N ? "N" : "T",
         tb == Trans::N ? "N" : "T", " on ", isa_name(level), ": ", what);
  }
}

}  // namespace grpo::ops
