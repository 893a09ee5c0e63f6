// Linear layers of the training models (the text decoder and the vision tower) as GEMMs in the compute mode:
// f32, or bf16 GEMM inputs with f32 accumulation (the input is converted into a caller-provided bf16 copy that
// the backward reads again, the weights come from the bf16 shadow).
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace grpo {

enum class ComputeMode { F32, BF16 };  // BF16: bf16 GEMM inputs, fp32 accumulation/master weights/norms/softmax

// out [T, N] = in [T, K] W^T with W [N, K]; bf16 mode converts in into in_bf [T, K] and reads w16.
void linear_forward(ComputeMode mode, float* out, const float* in, bf16_t* in_bf, const void* w32, const void* w16,
                    int64_t T, int64_t N, int64_t K);
// Backward of linear_forward: din [T, K] (=) = dout W (skipped when din is null); dW [N, K] += dout^T in
// (skipped when dW is null: a frozen weight).
// bf16 mode converts dout into dy_bf [T, N] and reads in_bf (written by the forward) and w16.
void linear_backward(ComputeMode mode, float* din, float* dW, const float* dout, const float* in, const bf16_t* in_bf,
                     const void* w32, const void* w16, int64_t T, int64_t N, int64_t K, bf16_t* dy_bf);

// LoRA on a linear (f32 in both modes: the adapters are small and fp32). Output rows y [T, N] with row stride
// ldy (the module's columns of a packed output); x [T, K]; A [r, K], B [N, r]; s the scale.
// Forward: u [T, r] = x A^T (kept for backward); y += s u B^T (through tmp [T, N]: oneDNN's accumulating
// GEMM (beta = 1) into a large output ran 5x slower than writing a fresh one and adding it).
void lora_linear_forward(float* y, int64_t ldy, const float* x, const float* A, const float* B, float* u, float* tmp,
                         int64_t T, int64_t N, int64_t K, int64_t r, float s);
// Backward: du [T, r] = s dy B (scratch); dx [T, K] += du A (through tmp [T, K]); dA [r, K] += du^T x and
// dB [N, r] += s dy^T u (both skipped when null).
void lora_linear_backward(float* dx, float* dA, float* dB, const float* dy, int64_t ldy, const float* x,
                          const float* A, const float* B, const float* u, float* du, float* tmp, int64_t T, int64_t N,
                          int64_t K, int64_t r, float s);

}  // namespace grpo
