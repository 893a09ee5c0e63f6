// The optimizer kernels on flat buffers: sum of squares (for the global gradient norm) and the AdamW step
// with PyTorch's semantics and operation order (torch.optim.AdamW, single-tensor path): p *= 1 - lr wd first,
// m.lerp_(g, 1 - b1), v = v b2 + (1 - b2) g g, scalars computed in double, denom = sqrt(v) / sqrt(bc2) + eps,
// p += -step_size * (m / denom).
// Both split the buffer into fixed segments (not per thread), so results never depend on the thread count.
// The inner loops are compiled for AVX-512 and for AVX2+FMA; each call takes the copy of the one ISA decision
// (kernels/backend.h), chosen before the parallel loop.
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/profiler.h"
#include "core/threads.h"
#include "kernels/cpu/nn_simd.h"
#include "kernels/ops.h"

namespace grpo::ops {
namespace {

constexpr int64_t kSegments = 64;            // sum_squares partial sums, added in order
constexpr int64_t kMinSegment = 1 << 15;     // elements; smaller buffers use fewer segments
constexpr int64_t kAdamBlock = 1 << 14;      // elements per OpenMP work item
constexpr int64_t kParallelMin = 1 << 16;    // below this, threads cost more than they save

[[gnu::always_inline]] inline double sum_squares_segment(const float* x, int64_t n) {
  double acc = 0.0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(x[i]) * x[i];
  return acc;
}

struct AdamScalars {
  float decay;           // 1 - lr * wd
  float m_weight;        // 1 - beta1, the lerp weight of the new gradient
  float beta2, one_minus_beta2;
  float step_size;       // lr / (1 - beta1^step)
  float bc2_sqrt;        // sqrt(1 - beta2^step)
  float eps, grad_scale;
};

[[gnu::always_inline]] inline void adamw_block(float* p, const float* g, float* m, float* v, int64_t n, AdamScalars s) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float ge = g[i] * s.grad_scale;
    // torch.lerp: a + w (b - a) for w < 0.5, b - (b - a)(1 - w) otherwise
    const float mi = s.m_weight < 0.5f ? m[i] + s.m_weight * (ge - m[i]) : ge - (ge - m[i]) * (1.0f - s.m_weight);
    const float vi = s.beta2 * v[i] + s.one_minus_beta2 * ge * ge;
    m[i] = mi;
    v[i] = vi;
    const float denom = std::sqrt(vi) / s.bc2_sqrt + s.eps;
    p[i] = p[i] * s.decay - s.step_size * (mi / denom);
  }
}

NN_BEGIN_AVX512
double sum_squares_avx512(const float* x, int64_t n) { return sum_squares_segment(x, n); }
void adamw_avx512(float* p, const float* g, float* m, float* v, int64_t n, AdamScalars s) {
  adamw_block(p, g, m, v, n, s);
}
NN_END_TARGET
NN_BEGIN_AVX2
double sum_squares_avx2(const float* x, int64_t n) { return sum_squares_segment(x, n); }
void adamw_avx2(float* p, const float* g, float* m, float* v, int64_t n, AdamScalars s) {
  adamw_block(p, g, m, v, n, s);
}
NN_END_TARGET

}  // namespace

double sum_squares(const float* x, int64_t n) {
  GRPO_PROFILE("sum_squares");
  GRPO_CHECK(n >= 0, "[sum_squares] n must be >= 0, got ", n);
  if (n == 0) return 0.0;
  GRPO_CHECK(x, "[sum_squares] null input with n = ", n);
  const int64_t segments = std::clamp<int64_t>(n / kMinSegment, 1, kSegments);
  const int64_t seg_len = (n + segments - 1) / segments;
  double (*const segment_sum)(const float*, int64_t) = cpu::nn_use_avx512() ? sum_squares_avx512 : sum_squares_avx2;
  double partial[kSegments];
  parallel_for(segments, n >= kParallelMin, [&](int64_t s) {
    const int64_t begin = std::min(s * seg_len, n), end = std::min(begin + seg_len, n);
    partial[s] = segment_sum(x + begin, end - begin);
  });
  double total = 0.0;
  for (int64_t s = 0; s < segments; ++s) total += partial[s];
  return total;
}

void adamw_step(float* p, const float* g, float* m, float* v, int64_t n, float lr, float beta1, float beta2,
                float eps, float weight_decay, int64_t step, float grad_scale) {
  GRPO_PROFILE("adamw_step");
  GRPO_CHECK(n >= 0, "[adamw] n must be >= 0, got ", n);
  GRPO_CHECK(step >= 1, "[adamw] step must be >= 1, got ", step);
  GRPO_CHECK(beta1 >= 0.0f && beta1 < 1.0f && beta2 >= 0.0f && beta2 < 1.0f,
             "[adamw] betas must be in [0, 1), got ", beta1, ", ", beta2);
  GRPO_CHECK(lr >= 0.0f && eps >= 0.0f && weight_decay >= 0.0f, "[adamw] lr, eps, weight_decay must be >= 0, got ",
             lr, ", ", eps, ", ", weight_decay);
  if (n == 0) return;
  GRPO_CHECK(p && g && m && v, "[adamw] null p, g, m or v with n = ", n);
  const double bc1 = 1.0 - std::pow(static_cast<double>(beta1), static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(static_cast<double>(beta2), static_cast<double>(step));
  const double lr_d = lr;
  const AdamScalars s{static_cast<float>(1.0 - lr_d * weight_decay), static_cast<float>(1.0 - beta1), beta2,
                      static_cast<float>(1.0 - beta2), static_cast<float>(lr_d / bc1),
                      static_cast<float>(std::sqrt(bc2)), eps, grad_scale};
  void (*const block)(float*, const float*, float*, float*, int64_t, AdamScalars) =
      cpu::nn_use_avx512() ? adamw_avx512 : adamw_avx2;
  parallel_for((n + kAdamBlock - 1) / kAdamBlock, n >= kParallelMin, [&](int64_t i) {
    const int64_t b = i * kAdamBlock, len = std::min(kAdamBlock, n - b);
    block(p + b, g + b, m + b, v + b, len, s);
  });
}

}  // namespace grpo::ops
