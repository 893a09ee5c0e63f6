// Kernels of the Qwen3-VL vision tower and of the M-RoPE of its text decoder, with the conventions of
// ops.h (raw pointers, PyTorch order, no allocation, parameter gradients +=, activation gradients =,
// deterministic for any thread count). Shape letters as in ops.h, plus N patch rows, Dv vision hidden,
// Fv vision ffn. CPU bodies: kernels/cpu/ (AVX-512 / AVX2 chosen at run time); oracle: kernels/ref/ref_vision.h.
#pragma once
#include <cstdint>

namespace grpo::ops {

// ---------------------------------------------------------------- LayerNorm (weight + bias, fp32 statistics)
// y [N,C] = (x - mean) * rstd * w + b with mean and rstd = 1/sqrt(var + eps) (biased variance) per row,
// saved in mean [N] and rstd [N]. y may alias x.
void layernorm_forward(float* y, float* mean, float* rstd, const float* x, const float* w, const float* b, int64_t N,
                       int64_t C, float eps);
int64_t layernorm_backward_ws_floats(int64_t N, int64_t C);
// dx [N,C] (=), dw [C] and db [C] (+=). dx may alias dy.
void layernorm_backward(float* dx, float* dw, float* db, const float* dy, const float* x, const float* w,
                        const float* mean, const float* rstd, int64_t N, int64_t C, float* ws);

// ---------------------------------------------------------------- GELU fused with the bias of its GEMM
enum class Gelu : uint8_t {
  Tanh,  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  (gelu_pytorch_tanh: the vision blocks' MLP)
  Erf,   // 0.5 x (1 + erf(x / sqrt(2)))                      (exact: the mergers)
};
// x [N,F] += b [F] in place (b may be null), then y [N,F] = gelu(x). x keeps the pre-activation for backward.
void bias_gelu_forward(float* y, float* x, const float* b, int64_t N, int64_t F, Gelu kind);
// dx [N,F] (=) = dy * gelu'(x); db [F] (+=) the column sums of dx when db is not null. dx may alias dy.
void gelu_backward(float* dx, float* db, const float* dy, const float* x, int64_t N, int64_t F, Gelu kind);

// ---------------------------------------------------------------- bias
void bias_add(float* y, const float* b, int64_t N, int64_t F);   // y [N,F] += b [F] on every row
void bias_grad(float* db, const float* dy, int64_t N, int64_t F);  // db [F] += column sums of dy [N,F]

// ---------------------------------------------------------------- rotary with one table row per token
// The rotate-half rotation of ops::rope_forward where token t reads its own cos/sin row t [T, D/2]: the
// vision tower's 2D rotary (a row and a column angle per patch) and the text decoder's M-RoPE.
void rope_rows_forward(float* x, const float* cos, const float* sin, int64_t T, int64_t nh, int64_t D);
void rope_rows_backward(float* dx, const float* cos, const float* sin, int64_t T, int64_t nh, int64_t D);

// Interleaved M-RoPE tables: row t, frequency j of cos/sin [T, half] is entry (pos3[axis[j] * T + t], j) of the
// plain tables cos_table/sin_table [P, half], i.e. frequency j turns with the temporal (axis 0), height (1) or
// width (2) position of the token. With equal positions on the three axes the rows are the plain ones.
void mrope_tables(float* cos, float* sin, const int32_t* pos3, const uint8_t* axis, const float* cos_table,
                  const float* sin_table, int64_t T, int64_t P, int64_t half);

// ---------------------------------------------------------------- attention within each segment, not causal
// As ops::attention_forward / attention_backward (flash style, GQA, same workspace), but every query attends to
// every key of its segment of cu_seqlens (the patches of one picture and temporal slice).
void bidirectional_attention_forward(float* o, float* lse, const float* q, const float* k, const float* v,
                                     const int32_t* cu_seqlens, int64_t S, int64_t T, int64_t H, int64_t K,
                                     int64_t D, float scale, float* ws);
void bidirectional_attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* q,
                                      const float* k, const float* v, const float* o, const float* lse,
                                      const int32_t* cu_seqlens, int64_t S, int64_t T, int64_t H, int64_t K,
                                      int64_t D, float scale, float* ws);

// ---------------------------------------------------------------- bilinear position embedding
// out [N,C] (=) sum over the 4 corners c of w[c * N + n] * table[idx[c * N + n]]; idx, w [4, N]; table [P,C].
void bilinear_embed_forward(float* out, const int32_t* idx, const float* w, const float* table, int64_t N,
                            int64_t P, int64_t C);
// dtable [P,C] (+=) the transpose: row idx[c * N + n] gets w[c * N + n] * dout[n] (deterministic).
void bilinear_embed_backward(float* dtable, const float* dout, const int32_t* idx, const float* w, int64_t N,
                             int64_t P, int64_t C);

}  // namespace grpo::ops
