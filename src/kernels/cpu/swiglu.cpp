// SwiGLU activation of the MLP: out = silu(gate) * up on the fused [T, 2F] gate|up GEMM output, and its
// backward into dgu [T, 2F]. Vectorised exp (nn_simd.h), rows split over threads.
#include <cstdint>

#include "core/error.h"
#include "core/profiler.h"
#include "core/threads.h"
#include "kernels/cpu/nn_simd.h"
#include "kernels/ops.h"

namespace grpo::cpu {
namespace {  // internal linkage: each kernel file has its own nn_avx512 / nn_avx2 bodies
NN_BEGIN_AVX512
namespace nn_avx512 {
using V = Vec512;
#include "kernels/cpu/nn_swiglu_impl.h"
}  // namespace nn_avx512
NN_END_TARGET
NN_BEGIN_AVX2
namespace nn_avx2 {
using V = Vec256;
#include "kernels/cpu/nn_swiglu_impl.h"
}  // namespace nn_avx2
NN_END_TARGET
}  // namespace
}  // namespace grpo::cpu

namespace grpo::ops {

void swiglu_forward(float* out, const float* gu, int64_t T, int64_t F) {
  GRPO_PROFILE("swiglu_forward");
  GRPO_CHECK(T >= 0 && F > 0, "[swiglu_forward] expected T >= 0 and F > 0, got T=", T, " F=", F);
  const bool avx512 = cpu::nn_use_avx512();
  parallel_for(T, T * F >= (1 << 14), [&](int64_t t) {
    const float* g = gu + t * 2 * F;  // [F] gate, then [F] up
    if (avx512)
      cpu::nn_avx512::swiglu_forward_row(out + t * F, g, g + F, F);
    else
      cpu::nn_avx2::swiglu_forward_row(out + t * F, g, g + F, F);
  });
}

void swiglu_backward(float* dgu, const float* dout, const float* gu, int64_t T, int64_t F) {
  GRPO_PROFILE("swiglu_backward");
  GRPO_CHECK(T >= 0 && F > 0, "[swiglu_backward] expected T >= 0 and F > 0, got T=", T, " F=", F);
  const bool avx512 = cpu::nn_use_avx512();
  parallel_for(T, T * F >= (1 << 14), [&](int64_t t) {
    const float* g = gu + t * 2 * F;  // [2F]
    float* dg = dgu + t * 2 * F;      // [2F]
    if (avx512)
      cpu::nn_avx512::swiglu_backward_row(dg, dg + F, dout + t * F, g, g + F, F);
    else
      cpu::nn_avx2::swiglu_backward_row(dg, dg + F, dout + t * F, g, g + F, F);
  });
}

}  // namespace grpo::ops
