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

// LoRA (fp32 adapters; the GEMMs' operands in bf16 under ComputeMode::BF16, see LoraBf16) on a group of g
// linears that read the same input x [T, K] (q/k/v, gate/up, or one linear alone) and write column ranges of
// one output y [T, ldy] (a packed output). A [g r, K] holds the group's A matrices back to back; module j
// has B_j [N_j, r] and writes columns col_j .. col_j + N_j; s is the scale.
struct LoraModule {
  const float* B;  // [N, r]
  float* dB;       // [N, r] its gradient (+=); null: none
  int64_t col, N;  // first output column, out features
};
// The bf16 operands of the adapters' GEMMs in ComputeMode::BF16 (bf16 inputs, f32 accumulation, as the base
// linear's): x A^T, dy_j^T u_j, dy_j B_j and du^T x read bf16 copies (x and dy are the base linear's own, the
// adapters' matrices and u, du are converted into the scratch here), while y += s u B^T and dx += du A stay
// f32 (ops::add_low_rank). A null pointer to it: every product in f32.
struct LoraBf16 {
  const bf16_t* x = nullptr;   // [T, K] the input (the base linear's copy)
  const bf16_t* dy = nullptr;  // [T, ldy] the output gradient (backward: the base linear's copy, same stride)
  bf16_t* w = nullptr;         // [max(g r K, N_j r)] scratch: A, then each B_j
  bf16_t* u = nullptr;         // [T, g r] scratch (backward)
  bf16_t* du = nullptr;        // [T, g r] scratch (backward)
};

// u [T, g r] = x A^T (one GEMM, kept for backward); y[:, col_j ..] += s u_j B_j^T (u_j: columns j r .. of u),
// each output row read and written once (ops::add_low_rank_t, reading B_j as stored).
void lora_group_forward(float* y, int64_t ldy, const float* x, const float* A, const LoraModule* mods, int g, float* u,
                        int64_t T, int64_t K, int64_t r, float s, const LoraBf16* bf = nullptr);
// Backward, dy [T, ldy]: du [T, g r] (scratch) with du_j = s dy_j B_j; dB_j += s dy_j^T u_j; dA [g r, K] += du^T x
// (skipped when null); dx [T, K] += du A (one GEMM and one add_low_rank for the group; skipped when null).
void lora_group_backward(float* dx, float* dA, const float* dy, int64_t ldy, const float* x, const float* A,
                         const LoraModule* mods, int g, const float* u, float* du, int64_t T, int64_t K, int64_t r,
                         float s, const LoraBf16* bf = nullptr);

// One linear alone (g = 1): y [T, N] with row stride ldy; A [r, K], B [N, r]; u [T, r].
void lora_linear_forward(float* y, int64_t ldy, const float* x, const float* A, const float* B, float* u, int64_t T,
                         int64_t N, int64_t K, int64_t r, float s);
// Backward: du [T, r] scratch; dx [T, K] += du A (skipped when null); dA [r, K] += du^T x and dB [N, r] += s dy^T u (both skipped
// when null).
void lora_linear_backward(float* dx, float* dA, float* dB, const float* dy, int64_t ldy, const float* x,
                          const float* A, const float* B, const float* u, float* du, int64_t T, int64_t N, int64_t K,
                          int64_t r, float s);

}  // namespace grpo
