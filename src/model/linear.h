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
// Backward of linear_forward: din [T, K] (=) = dout W (skipped when din is null); dW [N, K] += dout^T in.
// bf16 mode converts dout into dy_bf [T, N] and reads in_bf (written by the forward) and w16.
void linear_backward(ComputeMode mode, float* din, float* dW, const float* dout, const float* in, const bf16_t* in_bf,
                     const void* w32, const void* w16, int64_t T, int64_t N, int64_t K, bf16_t* dy_bf);

}  // namespace grpo
