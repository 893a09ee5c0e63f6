// The kernel interface of grpo.cpp: every compute primitive the model, rollout and trainer call.
//
// Conventions (llm.c style):
// - Free functions on raw pointers + sizes; PyTorch dimension order, row-major, contiguous unless a
//   leading dimension (ld*) is given. Kernels never allocate: scratch comes from a caller workspace whose
//   size the matching *_ws_floats() function returns.
// - Accumulation rule: parameter gradients are accumulated (+=); activation gradients are written (=).
// - Activations, norms, softmax and losses are fp32. bf16 appears only as GEMM inputs (mixed precision).
// - Shape letters: T tokens of a packed batch, S sequences, C hidden size, H query heads, K kv heads,
//   D head dim, F ffn size, V vocab size, N generic rows, P rope table positions.
// - Packed batches: cu_seqlens [S+1] int32 prefix sums of sequence lengths (cu_seqlens[0] = 0,
//   cu_seqlens[S] = T); attention never crosses a sequence; positions restart at 0 per sequence.
//
// These functions dispatch to the CPU backend (kernels/cpu, AVX-512/AVX2 chosen at run time).
// kernels/ref holds a naive, templated (float/double) reference of each op used as the test oracle.
// A CUDA backend (kernels/cuda) will plug in behind the same functions: callers never #ifdef.
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace grpo::ops {

// ---------------------------------------------------------------- GEMM (oneDNN) and conversions
enum class Trans : uint8_t { N, T };
// C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C. op(X) = X (Trans::N) or X^T (Trans::T).
// A is stored [M,K] (N) or [K,M] (T) with leading dim lda; B [K,N] or [N,K] with ldb; C [M,N], ldc.
// A and B share ab_dtype (F32 or BF16); C and accumulation are always f32. beta is 0 or 1.
// oneDNN primitives are cached per shape (the "shape cache"), so repeated shapes cost no set-up.
void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const void* A, int64_t lda,
          const void* B, int64_t ldb, float beta, float* C, int64_t ldc, DType ab_dtype);
// Strided batched GEMM (torch.bmm, cuBLAS gemmStridedBatched), f32: for b in [0, batch),
//   C_b = alpha * op(A_b) op(B_b) + beta * C_b with X_b = X + b * stride_x (elements), each matrix stored as
// gemm's. One oneDNN primitive (a 3-D matmul) serves the whole batch, cached per shape like gemm's.
void gemm_batched(Trans ta, Trans tb, int64_t batch, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                  int64_t lda, int64_t stride_a, const float* B, int64_t ldb, int64_t stride_b, float beta, float* C,
                  int64_t ldc, int64_t stride_c);
void f32_to_bf16(bf16_t* dst, const float* src, int64_t n);
void bf16_to_f32(float* dst, const bf16_t* src, int64_t n);

// ---------------------------------------------------------------- elementwise / embedding
void add_inplace(float* y, const float* x, int64_t n);  // y += x
// y [T, N] (row stride ldy) += alpha u V with u [T, r] (ldu), V [r, N] (ldv), r small (a LoRA rank): each
// row of y read and written once. A row's result does not depend on T or the thread count.
void add_low_rank(float* y, int64_t ldy, const float* u, int64_t ldu, const float* V, int64_t ldv, int64_t T,
                  int64_t N, int64_t r, float alpha);
// The same with V given as W = V^T [N, r] (row stride ldw), a LoRA B matrix as stored: the same bits as
// add_low_rank(V), without transposing W whole.
void add_low_rank_t(float* y, int64_t ldy, const float* u, int64_t ldu, const float* W, int64_t ldw, int64_t T,
                    int64_t N, int64_t r, float alpha);
// out[t,:] = table[ids[t],:]   table [V,C], out [T,C]
void embedding_forward(float* out, const int32_t* ids, const float* table, int64_t T, int64_t C);
// dtable[ids[t],:] += dout[t,:]   (deterministic: no atomics, result independent of thread count)
void embedding_backward(float* dtable, const float* dout, const int32_t* ids, int64_t T, int64_t C);

// ---------------------------------------------------------------- RMSNorm (rows of length C)
// y = x * rstd * w with rstd = 1/sqrt(mean(x^2) + eps) in fp32; x, y [N,C]; w [C]; rstd [N] saved.
// Per-head q/k norm is the same op with N = T*H, C = D. y may alias x.
void rmsnorm_forward(float* y, float* rstd, const float* x, const float* w, int64_t N, int64_t C, float eps);
int64_t rmsnorm_backward_ws_floats(int64_t N, int64_t C);
// dx [N,C] (=), dw [C] (+=). dx may alias dy.
void rmsnorm_backward(float* dx, float* dw, const float* dy, const float* x, const float* w, const float* rstd,
                      int64_t N, int64_t C, float* ws);

// ---------------------------------------------------------------- RoPE (NEOX split halves)
// x [T, nh, D] rotated in place: for i < D/2 with c = cos[pos[t], i], s = sin[pos[t], i]:
//   x'[i] = x[i] c - x[i+D/2] s;   x'[i+D/2] = x[i+D/2] c + x[i] s.
// cos, sin [P, D/2] precomputed (YaRN scaling folded in); pos [T] int32 < P.
void rope_forward(float* x, const int32_t* pos, const float* cos, const float* sin, int64_t T, int64_t nh,
                  int64_t D);
// dx in place: the inverse rotation applied to the incoming gradient.
void rope_backward(float* dx, const int32_t* pos, const float* cos, const float* sin, int64_t T, int64_t nh,
                   int64_t D);

// ---------------------------------------------------------------- SwiGLU
// gu [T, 2F] holds gate in columns [0,F) and up in [F,2F) (one fused GEMM); out [T,F] = silu(gate) * up.
void swiglu_forward(float* out, const float* gu, int64_t T, int64_t F);
// dgu [T, 2F] (=) from dout [T,F].
void swiglu_backward(float* dgu, const float* dout, const float* gu, int64_t T, int64_t F);

// ---------------------------------------------------------------- causal GQA attention (flash style)
// q [T,H,D], k and v [T,K,D]; query head h reads kv head h / (H/K). Causal inside each sequence of
// cu_seqlens, tiled over keys with an online softmax: no [T,T] matrix is ever stored.
// o [T,H,D]; lse [T,H] = log-sum-exp of the scaled scores of each row (saved for backward).
int64_t attention_ws_floats(int64_t T, int64_t H, int64_t K, int64_t D);
void attention_forward(float* o, float* lse, const float* q, const float* k, const float* v,
                       const int32_t* cu_seqlens, int64_t S, int64_t T, int64_t H, int64_t K, int64_t D,
                       float scale, float* ws);
// dq [T,H,D], dk, dv [T,K,D] (all =). Recomputes probabilities tile by tile from lse.
void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
                        const float* v, const float* o, const float* lse, const int32_t* cu_seqlens, int64_t S,
                        int64_t T, int64_t H, int64_t K, int64_t D, float scale, float* ws);

// ---------------------------------------------------------------- fused output layer
// Never materialises [T,V]: rows are processed `chunk` at a time (workspace O(chunk x V)).
// z = logit_scale * (h W^T) with h [T,C], W [V,C] (ab_dtype F32 or BF16 for both).
// logprob[t] = log_softmax(z)[target[t]] (0 where target[t] < 0), entropy[t] = -sum p log p, lse[t].
int64_t lm_head_ws_floats(int64_t chunk, int64_t V, int64_t C);
void lm_head_forward(float* logprob, float* entropy, float* lse, const void* h, const void* W, DType ab_dtype,
                     const int32_t* target, int64_t T, int64_t C, int64_t V, float logit_scale, int64_t chunk,
                     float* ws);
// Given dlogprob [T], dentropy [T] (either may be null = 0) and the forward's lse [T] and entropy [T] (H; read
// only where dentropy is non-zero, may be null without dentropy): recomputes the logits block by block,
// dz = logit_scale * (g_lp (onehot - p) - g_ent p (log p + H)); dh [T,C] (=), dW [V,C] (+=, f32; null: a
// frozen output layer, no weight gradient). The workspace is the forward's, lm_head_ws_floats(chunk, V, C).
void lm_head_backward(float* dh, float* dW, const float* dlogprob, const float* dentropy, const void* h, const void* W,
                      DType ab_dtype, const int32_t* target, const float* lse, const float* entropy, int64_t T,
                      int64_t C, int64_t V, float logit_scale, int64_t chunk, float* ws);

// ---------------------------------------------------------------- optimizer
double sum_squares(const float* x, int64_t n);
// AdamW on flat buffers (PyTorch semantics): g_eff = g * grad_scale; m = b1 m + (1-b1) g_eff;
// v = b2 v + (1-b2) g_eff^2; p -= lr * (m / (1-b1^step) / (sqrt(v / (1-b2^step)) + eps) + wd * p),
// with the decay applied first as p *= (1 - lr wd). step >= 1.
void adamw_step(float* p, const float* g, float* m, float* v, int64_t n, float lr, float beta1, float beta2,
                float eps, float weight_decay, int64_t step, float grad_scale);

}  // namespace grpo::ops
