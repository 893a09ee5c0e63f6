// GEMM on the CPU through oneDNN 2.6 matmul: f32 or bf16 inputs, f32 output and accumulation.
// Transposes are expressed as memory strides (no copies); beta = 1 is a sum post-op and alpha an output
// scale. bf16 inputs run natively where the one ISA decision says so (kernels/backend.h: the avx512_bf16
// level on a core whose bf16 dot products are fast); elsewhere (oneDNN 2.6 has no bf16 matmul without
// AVX-512 BF16, and on some cores its bf16 kernels are slower than f32) they are emulated: both operands are
// widened to f32 (exact) into a scratch buffer of the calling thread and multiplied by the f32 GEMM, with
// f32 accumulation as the native path. The scratch grows to the largest operands seen and is reused, so
// repeated shapes (every training step) allocate nothing. A oneDNN or allocation failure is reported with
// the operation, shapes, dtype and ISA ("[gemm] bf16 1357x256x128 NT on avx512_bf16: ...").
// Primitives are created once per shape and kept in a bounded process-wide cache (dnnl_matmul.h), so a
// repeated shape costs only the execute.
#include <dnnl.hpp>

#include <algorithm>
#include <bit>

#include "core/arena.h"
#include "core/error.h"
#include "core/profiler.h"
#include "core/threads.h"
#include "kernels/backend.h"
#include "kernels/cpu/dnnl_matmul.h"
#include "kernels/cpu/head_bf16.h"
#include "kernels/cpu/head_gemm.h"
#include "kernels/ops.h"

namespace grpo::ops {
namespace {

struct GemmKey {
  Trans ta, tb;
  int64_t M, N, K, lda, ldb, ldc;
  DType dtype;
  uint32_t alpha_bits, beta_bits;  // compared as bits
  auto operator<=>(const GemmKey&) const = default;
  float alpha() const { return std::bit_cast<float>(alpha_bits); }
  float beta() const { return std::bit_cast<float>(beta_bits); }
};

cpu_dnnl::PlanCache<GemmKey>& plans() {
  static cpu_dnnl::PlanCache<GemmKey> cache;
  return cache;
}

// op(X) of logical shape [rows, cols] stored with leading dimension ld, transposed or not.
dnnl::memory::desc strided_desc(Trans t, int64_t rows, int64_t cols, int64_t ld, dnnl::memory::data_type dt) {
  const dnnl::memory::dims strides = t == Trans::N ? dnnl::memory::dims{ld, 1} : dnnl::memory::dims{1, ld};
  return dnnl::memory::desc({rows, cols}, dt, strides);
}

cpu_dnnl::MatmulPlan make_plan(const GemmKey& k) {
  using dt = dnnl::memory::data_type;
  const dt in_dt = k.dtype == DType::BF16 ? dt::bf16 : dt::f32;
  return cpu_dnnl::make_plan(strided_desc(k.ta, k.M, k.K, k.lda, in_dt), strided_desc(k.tb, k.K, k.N, k.ldb, in_dt),
                             dnnl::memory::desc({k.M, k.N}, dt::f32, dnnl::memory::dims{k.ldc, 1}), k.alpha(),
                             k.beta());
}

const char* trans_name(Trans t) { return t == Trans::N ? "N" : "T"; }

void check_args(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb, int64_t ldc,
                float beta, DType dtype) {
  GRPO_CHECK(M >= 0 && N >= 0 && K >= 0, "[gemm] sizes must be >= 0, got M=", M, " N=", N, " K=", K);
  GRPO_CHECK(dtype == DType::F32 || dtype == DType::BF16, "[gemm] A/B dtype must be f32 or bf16, got ",
             dtype_name(dtype));
  GRPO_CHECK(beta == 0.0f || beta == 1.0f, "[gemm] beta must be 0 or 1, got ", beta);
  const int64_t a_cols = ta == Trans::N ? K : M, b_cols = tb == Trans::N ? N : K;
  GRPO_CHECK(lda >= std::max<int64_t>(a_cols, 1), "[gemm] lda=", lda, " < ", a_cols, " columns of A (",
             trans_name(ta), ", M=", M, " K=", K, ")");
  GRPO_CHECK(ldb >= std::max<int64_t>(b_cols, 1), "[gemm] ldb=", ldb, " < ", b_cols, " columns of B (",
             trans_name(tb), ", K=", K, " N=", N, ")");
  GRPO_CHECK(ldc >= std::max<int64_t>(N, 1), "[gemm] ldc=", ldc, " < N=", N);
}

}  // namespace

namespace detail {
size_t gemm_cache_size() { return plans().size(); }
size_t gemm_cache_capacity() { return plans().capacity(); }
void set_gemm_cache_capacity(size_t capacity) {
  GRPO_CHECK(capacity >= 1, "[gemm] shape cache capacity must be >= 1");
  plans().set_capacity(capacity);
}
}  // namespace detail

namespace {

// Looks up (or creates) the primitive of `key` and runs it on A, B, C.
void run_plan(const GemmKey& key, const void* A, const void* B, float* C) {
  cpu_dnnl::execute(*plans().get(key, [&key] { return make_plan(key); }), A, B, C);
}

// The emulated bf16 GEMM's f32 copies of A and B, per calling thread (concurrent callers never share it).
struct EmulationScratch {
  Buffer buf;
  float* reserve(int64_t floats) {
    const size_t bytes = static_cast<size_t>(floats) * sizeof(float);
    if (bytes > buf.size()) {  // grows by at least a quarter, so that slowly growing shapes reallocate rarely
      const size_t grown = std::max(bytes, buf.size() + buf.size() / 4);
      buf = Buffer();  // the old copy goes first: the new one may need its memory
      buf = Buffer(grown, "the bf16 emulation scratch (f32 copies of A and B)");
    }
    return static_cast<float*>(buf.data());
  }
};

// A stored bf16 matrix: rows x cols with leading dimension ld.
struct Bf16Matrix {
  const bf16_t* data;
  int64_t rows, cols, ld;
};

// Widens a and b into dense f32 matrices (leading dimension cols) at a32 and b32, in one parallel loop.
void widen(float* a32, const Bf16Matrix& a, float* b32, const Bf16Matrix& b) {
  const detail::Bf16ToF32Row row = detail::bf16_to_f32_row();
  const int64_t rows = a.rows + b.rows;
  parallel_for(rows, a.rows * a.cols + b.rows * b.cols >= (1 << 16), [&](int64_t r) {
    if (r < a.rows)
      row(a32 + r * a.cols, a.data + r * a.ld, a.cols);
    else
      row(b32 + (r - a.rows) * b.cols, b.data + (r - a.rows) * b.ld, b.cols);
  });
}

}  // namespace

void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const void* A, int64_t lda,
          const void* B, int64_t ldb, float beta, float* C, int64_t ldc, DType ab_dtype) {
  GRPO_PROFILE("gemm");
  check_args(ta, tb, M, N, K, lda, ldb, ldc, beta, ab_dtype);
  if (M == 0 || N == 0) return;
  GRPO_CHECK(C && (K == 0 || (A && B)), "[gemm] null A, B or C for M=", M, " N=", N, " K=", K);
  if (K == 0) {  // op(A) op(B) is the zero matrix: C = beta * C
    if (beta == 0.0f)
      for (int64_t i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + N, 0.0f);
    return;
  }
  const Isa level = isa();  // the decision caps oneDNN before its first primitive
  const bool emulate = ab_dtype == DType::BF16 && !gemm_bf16_native();
  const uint32_t alpha_bits = std::bit_cast<uint32_t>(alpha), beta_bits = std::bit_cast<uint32_t>(beta);
  try {
    if (!emulate)
      return run_plan(GemmKey{ta, tb, M, N, K, lda, ldb, ldc, ab_dtype, alpha_bits, beta_bits}, A, B, C);
    // op(A) is [M, K]: stored [M, K] (N) or [K, M] (T); op(B) is [K, N]: stored [K, N] or [N, K].
    const int64_t a_rows = ta == Trans::N ? M : K, a_cols = ta == Trans::N ? K : M;
    const int64_t b_rows = tb == Trans::N ? K : N, b_cols = tb == Trans::N ? N : K;
    thread_local EmulationScratch scratch;
    float* a32 = scratch.reserve(a_rows * a_cols + b_rows * b_cols);
    float* b32 = a32 + a_rows * a_cols;
    widen(a32, {static_cast<const bf16_t*>(A), a_rows, a_cols, lda}, b32,
          {static_cast<const bf16_t*>(B), b_rows, b_cols, ldb});
    run_plan(GemmKey{ta, tb, M, N, K, a_cols, b_cols, ldc, DType::F32, alpha_bits, beta_bits}, a32, b32, C);
  } catch (const std::exception& e) {  // dnnl::error, std::bad_alloc, the scratch's grpo::Error
    const char* what = dynamic_cast<const std::bad_alloc*>(&e) ? "out of memory" : e.what();
    fail("[gemm] ", dtype_name(ab_dtype), emulate ? " (emulated)" : "", " ", M, "x", N, "x", K, " ", trans_name(ta),
         trans_name(tb), " on ", isa_name(level), ": ", what);
  }
}

}  // namespace grpo::ops
