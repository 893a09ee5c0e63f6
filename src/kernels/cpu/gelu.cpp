// GELU of the vision tower, fused with the bias of the GEMM before it: forward adds the bias in place (keeping
// the pre-activation) and writes gelu, rows split over threads; backward writes dx and accumulates the bias
// gradient, column blocks split over threads with rows summed in order (deterministic for any thread count).
// Vectorised tanh / erf: nn_gelu_impl.h, compiled for AVX-512 and for AVX2.
#include <algorithm>
#include <cstdint>

#include "core/error.h"
#include "core/profiler.h"
#include "core/threads.h"
#include "kernels/cpu/nn_simd.h"
#include "kernels/vision_ops.h"

namespace grpo::cpu {
namespace {  // internal linkage: each kernel file has its own nn_avx512 / nn_avx2 bodies
using ops::Gelu;
NN_BEGIN_AVX512
namespace nn_avx512 {
using V = Vec512;
inline __m512 vabs(__m512 x) { return _mm512_abs_ps(x); }
inline __m512 vselect_ge0(__m512 x, __m512 a, __m512 b) {
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ), b, a);
}
#include "kernels/cpu/nn_gelu_impl.h"
}  // namespace nn_avx512
NN_END_TARGET
NN_BEGIN_AVX2
namespace nn_avx2 {
using V = Vec256;
inline __m256 vabs(__m256 x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x); }
inline __m256 vselect_ge0(__m256 x, __m256 a, __m256 b) {
  return _mm256_blendv_ps(b, a, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GE_OQ));
}
#include "kernels/cpu/nn_gelu_impl.h"
}  // namespace nn_avx2
NN_END_TARGET
}  // namespace
}  // namespace grpo::cpu

namespace grpo::ops {

void bias_gelu_forward(float* y, float* x, const float* b, int64_t N, int64_t F, Gelu kind) {
  GRPO_PROFILE("bias_gelu_forward");
  GRPO_CHECK(N >= 0 && F > 0, "[bias_gelu_forward] expected N >= 0 and F > 0, got N=", N, " F=", F);
  const bool avx512 = cpu::nn_use_avx512(), tanh = kind == Gelu::Tanh;
  parallel_for(N, N * F >= (1 << 14), [&](int64_t n) {
    float *yr = y + n * F, *xr = x + n * F;
    if (avx512)
      tanh ? cpu::nn_avx512::bias_gelu_row<Gelu::Tanh>(yr, xr, b, F) : cpu::nn_avx512::bias_gelu_row<Gelu::Erf>(yr, xr, b, F);
    else
      tanh ? cpu::nn_avx2::bias_gelu_row<Gelu::Tanh>(yr, xr, b, F) : cpu::nn_avx2::bias_gelu_row<Gelu::Erf>(yr, xr, b, F);
  });
}

void gelu_backward(float* dx, float* db, const float* dy, const float* x, int64_t N, int64_t F, Gelu kind) {
  GRPO_PROFILE("gelu_backward");
  GRPO_CHECK(N >= 0 && F > 0, "[gelu_backward] expected N >= 0 and F > 0, got N=", N, " F=", F);
  const bool avx512 = cpu::nn_use_avx512(), tanh = kind == Gelu::Tanh;
  constexpr int64_t kCols = cpu::nn_avx2::kGeluColumns;
  const int64_t blocks = (F + kCols - 1) / kCols;
  parallel_for(blocks, N * F >= (1 << 14), [&](int64_t bl) {
    const int64_t c0 = bl * kCols, width = std::min(kCols, F - c0);
    if (avx512)
      tanh ? cpu::nn_avx512::gelu_backward_columns<Gelu::Tanh>(dx, db, dy, x, N, F, c0, width)
           : cpu::nn_avx512::gelu_backward_columns<Gelu::Erf>(dx, db, dy, x, N, F, c0, width);
    else
      tanh ? cpu::nn_avx2::gelu_backward_columns<Gelu::Tanh>(dx, db, dy, x, N, F, c0, width)
           : cpu::nn_avx2::gelu_backward_columns<Gelu::Erf>(dx, db, dy, x, N, F, c0, width);
  });
}

}  // namespace grpo::ops
