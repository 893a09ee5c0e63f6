// add_inplace (y += x), the residual add of the decoder layers. Memory-bound: a plain loop compiled for
// AVX-512 and AVX2 (chosen at run time), split over threads in fixed blocks.
#include <algorithm>

#include "core/error.h"
#include "core/profiler.h"
#include "core/threads.h"
#include "kernels/cpu/nn_simd.h"
#include "kernels/ops.h"

namespace grpo::ops {
namespace {

constexpr int64_t kBlock = 1 << 14;        // floats per OpenMP work item
constexpr int64_t kParallelMin = 1 << 15;  // below this, threads cost more than they save

[[gnu::always_inline]] inline void add_span(float* y, const float* x, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}
NN_BEGIN_AVX512
void add_span_avx512(float* y, const float* x, int64_t n) { add_span(y, x, n); }
NN_END_TARGET
NN_BEGIN_AVX2
void add_span_avx2(float* y, const float* x, int64_t n) { add_span(y, x, n); }
NN_END_TARGET

}  // namespace

void add_inplace(float* y, const float* x, int64_t n) {
  GRPO_PROFILE("add_inplace");
  GRPO_CHECK(n >= 0, "[add_inplace] n must be >= 0, got ", n);
  const bool avx512 = cpu::nn_use_avx512();
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  parallel_for(blocks, n >= kParallelMin, [&](int64_t b) {
    const int64_t i0 = b * kBlock, len = std::min(kBlock, n - i0);
    if (avx512)
      add_span_avx512(y + i0, x + i0, len);
    else
      add_span_avx2(y + i0, x + i0, len);
  });
}

}  // namespace grpo::ops
