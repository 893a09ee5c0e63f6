// Linear layers as oneDNN GEMMs in f32 or bf16 (see linear.h).
#include "model/linear.h"

#include "core/threads.h"
#include "kernels/ops.h"

namespace grpo {

void linear_forward(ComputeMode mode, float* out, const float* in, bf16_t* in_bf, const void* w32, const void* w16,
                    int64_t T, int64_t N, int64_t K) {
  if (mode == ComputeMode::BF16) {
    ops::f32_to_bf16(in_bf, in, T * K);
    ops::gemm(ops::Trans::N, ops::Trans::T, T, N, K, 1.0f, in_bf, K, w16, K, 0.0f, out, N, DType::BF16);
  } else {
    ops::gemm(ops::Trans::N, ops::Trans::T, T, N, K, 1.0f, in, K, w32, K, 0.0f, out, N, DType::F32);
  }
}

void linear_backward(ComputeMode mode, float* din, float* dW, const float* dout, const float* in, const bf16_t* in_bf,
                     const void* w32, const void* w16, int64_t T, int64_t N, int64_t K, bf16_t* dy_bf) {
  if (mode == ComputeMode::BF16) {
    ops::f32_to_bf16(dy_bf, dout, T * N);
    if (din) ops::gemm(ops::Trans::N, ops::Trans::N, T, K, N, 1.0f, dy_bf, N, w16, K, 0.0f, din, K, DType::BF16);
    if (dW) ops::gemm(ops::Trans::T, ops::Trans::N, N, K, T, 1.0f, dy_bf, N, in_bf, K, 1.0f, dW, K, DType::BF16);
  } else {
    if (din) ops::gemm(ops::Trans::N, ops::Trans::N, T, K, N, 1.0f, dout, N, w32, K, 0.0f, din, K, DType::F32);
    if (dW) ops::gemm(ops::Trans::T, ops::Trans::N, N, K, T, 1.0f, dout, N, in, K, 1.0f, dW, K, DType::F32);
  }
}

namespace {
// y [T, N] (row stride ldy) += t [T, N] (contiguous).
void add_rows(float* y, int64_t ldy, const float* t, int64_t T, int64_t N) {
  parallel_for(T, T * N >= (1 << 15), [&](int64_t i) {
    float* dst = y + i * ldy;
    const float* src = t + i * N;
    for (int64_t j = 0; j < N; ++j) dst[j] += src[j];
  });
}
}  // namespace

void lora_linear_forward(float* y, int64_t ldy, const float* x, const float* A, const float* B, float* u, float* tmp,
                         int64_t T, int64_t N, int64_t K, int64_t r, float s) {
  ops::gemm(ops::Trans::N, ops::Trans::T, T, r, K, 1.0f, x, K, A, K, 0.0f, u, r, DType::F32);
  ops::gemm(ops::Trans::N, ops::Trans::T, T, N, r, s, u, r, B, r, 0.0f, tmp, N, DType::F32);
  add_rows(y, ldy, tmp, T, N);
}

void lora_linear_backward(float* dx, float* dA, float* dB, const float* dy, int64_t ldy, const float* x,
                          const float* A, const float* B, const float* u, float* du, float* tmp, int64_t T, int64_t N,
                          int64_t K, int64_t r, float s) {
  if (dB) ops::gemm(ops::Trans::T, ops::Trans::N, N, r, T, s, dy, ldy, u, r, 1.0f, dB, r, DType::F32);
  ops::gemm(ops::Trans::N, ops::Trans::N, T, r, N, s, dy, ldy, B, r, 0.0f, du, r, DType::F32);
  if (dA) ops::gemm(ops::Trans::T, ops::Trans::N, r, K, T, 1.0f, du, r, x, K, 1.0f, dA, K, DType::F32);
  ops::gemm(ops::Trans::N, ops::Trans::N, T, K, r, 1.0f, du, r, A, K, 0.0f, tmp, K, DType::F32);
  add_rows(dx, K, tmp, T, K);
}

}  // namespace grpo
