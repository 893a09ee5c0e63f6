// Linear layers as oneDNN GEMMs in f32 or bf16 (see linear.h).
#include "model/linear.h"

#include "core/profiler.h"
#include "kernels/ops.h"

namespace grpo {

void linear_forward(ComputeMode mode, float* out, const float* in, bf16_t* in_bf, const void* w32, const void* w16,
                    int64_t T, int64_t N, int64_t K) {
  GRPO_PROFILE("linear_forward");
  if (mode == ComputeMode::BF16) {
    ops::f32_to_bf16(in_bf, in, T * K);
    ops::gemm(ops::Trans::N, ops::Trans::T, T, N, K, 1.0f, in_bf, K, w16, K, 0.0f, out, N, DType::BF16);
  } else {
    ops::gemm(ops::Trans::N, ops::Trans::T, T, N, K, 1.0f, in, K, w32, K, 0.0f, out, N, DType::F32);
  }
}

void linear_backward(ComputeMode mode, float* din, float* dW, const float* dout, const float* in, const bf16_t* in_bf,
                     const void* w32, const void* w16, int64_t T, int64_t N, int64_t K, bf16_t* dy_bf) {
  GRPO_PROFILE("linear_backward");
  if (mode == ComputeMode::BF16) {
    ops::f32_to_bf16(dy_bf, dout, T * N);
    if (din) ops::gemm(ops::Trans::N, ops::Trans::N, T, K, N, 1.0f, dy_bf, N, w16, K, 0.0f, din, K, DType::BF16);
    if (dW) ops::gemm(ops::Trans::T, ops::Trans::N, N, K, T, 1.0f, dy_bf, N, in_bf, K, 1.0f, dW, K, DType::BF16);
  } else {
    if (din) ops::gemm(ops::Trans::N, ops::Trans::N, T, K, N, 1.0f, dout, N, w32, K, 0.0f, din, K, DType::F32);
    if (dW) ops::gemm(ops::Trans::T, ops::Trans::N, N, K, T, 1.0f, dout, N, in, K, 1.0f, dW, K, DType::F32);
  }
}

void lora_group_forward(float* y, int64_t ldy, const float* x, const float* A, const LoraModule* mods, int g, float* u,
                        int64_t T, int64_t K, int64_t r, float s, const LoraBf16* bf) {
  GRPO_PROFILE("lora_forward");
  const int64_t gr = g * r;
  if (bf) {
    ops::f32_to_bf16(bf->w, A, gr * K);
    ops::gemm(ops::Trans::N, ops::Trans::T, T, gr, K, 1.0f, bf->x, K, bf->w, K, 0.0f, u, gr, DType::BF16);
  } else {
    ops::gemm(ops::Trans::N, ops::Trans::T, T, gr, K, 1.0f, x, K, A, K, 0.0f, u, gr, DType::F32);
  }
  for (int j = 0; j < g; ++j) {
    const LoraModule& m = mods[j];
    ops::add_low_rank_t(y + m.col, ldy, u + j * r, gr, m.B, r, T, m.N, r, s);
  }
}

void lora_group_backward(float* dx, float* dA, const float* dy, int64_t ldy, const float* x, const float* A,
                         const LoraModule* mods, int g, const float* u, float* du, int64_t T, int64_t K, int64_t r,
                         float s, const LoraBf16* bf) {
  GRPO_PROFILE("lora_backward");
  const int64_t gr = g * r;
  if (bf) ops::f32_to_bf16(bf->u, u, T * gr);
  for (int j = 0; j < g; ++j) {
    const LoraModule& m = mods[j];
    if (bf) {
      ops::f32_to_bf16(bf->w, m.B, m.N * r);
      if (m.dB)
        ops::gemm(ops::Trans::T, ops::Trans::N, m.N, r, T, s, bf->dy + m.col, ldy, bf->u + j * r, gr, 1.0f, m.dB, r,
                  DType::BF16);
      ops::gemm(ops::Trans::N, ops::Trans::N, T, r, m.N, s, bf->dy + m.col, ldy, bf->w, r, 0.0f, du + j * r, gr,
                DType::BF16);
    } else {
      if (m.dB)
        ops::gemm(ops::Trans::T, ops::Trans::N, m.N, r, T, s, dy + m.col, ldy, u + j * r, gr, 1.0f, m.dB, r,
                  DType::F32);
      ops::gemm(ops::Trans::N, ops::Trans::N, T, r, m.N, s, dy + m.col, ldy, m.B, r, 0.0f, du + j * r, gr,
                DType::F32);
    }
  }
  if (dA && bf) {
    ops::f32_to_bf16(bf->du, du, T * gr);
    ops::gemm(ops::Trans::T, ops::Trans::N, gr, K, T, 1.0f, bf->du, gr, bf->x, K, 1.0f, dA, K, DType::BF16);
  } else if (dA) {
    ops::gemm(ops::Trans::T, ops::Trans::N, gr, K, T, 1.0f, du, gr, x, K, 1.0f, dA, K, DType::F32);
  }
  if (dx) ops::add_low_rank(dx, K, du, gr, A, K, T, K, gr, 1.0f);
}

void lora_linear_forward(float* y, int64_t ldy, const float* x, const float* A, const float* B, float* u, int64_t T,
                         int64_t N, int64_t K, int64_t r, float s) {
  const LoraModule m{B, nullptr, 0, N};
  lora_group_forward(y, ldy, x, A, &m, 1, u, T, K, r, s);
}

void lora_linear_backward(float* dx, float* dA, float* dB, const float* dy, int64_t ldy, const float* x,
                          const float* A, const float* B, const float* u, float* du, int64_t T, int64_t N, int64_t K,
                          int64_t r, float s) {
  const LoraModule m{B, dB, 0, N};
  lora_group_backward(dx, dA, dy, ldy, x, A, &m, 1, u, du, T, K, r, s);
}

}  // namespace grpo
