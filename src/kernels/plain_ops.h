// The "plain" kernel set: a second implementation of the decoder kernels of ops.h, written the way
// PyTorch eager mode runs them on the CPU, used as the baseline of `grpo bench train` (the optimised
// training step against the plain path on the same batch: speed-up and peak-memory ratio).
//
// Every function has exactly the signature and meaning of its ops:: namesake, but the algorithm is the
// unfused one: each elementary op (square, mean, rsqrt, multiply, sigmoid, softmax, ...) is its own
// multi-threaded pass (OpenMP, vectorised like ATen's kernels) that materialises its result in a temporary
// taken from the workspace; GEMMs go through ops::gemm (oneDNN), as PyTorch's go through MKL/oneDNN.
// Nothing is fused or tiled, so the memory grows the way eager PyTorch's does:
// - attention materialises the scores/probabilities of every head, [H, len, len] per sequence
//   (attention_ws_floats(T, H, K, D) is quadratic in T);
// - the output layer materialises the full [T, V] logits and log-softmax (`chunk` is ignored: the
//   decoder sizes the workspace with lm_head_ws_floats(T, V, C), see DecoderKernels::full_logits).
// Functions whose ops.h signature has no workspace (rmsnorm_forward, rope_*, swiglu_*) use their output
// buffer as the temporary of each pass; RoPE, which works in place, keeps its per-token temporaries on the
// stack (the ops.h signature gives it nothing else), see plain/rope.cpp.
#pragma once
#include <cstdint>

#include "kernels/ops.h"

namespace grpo::plain {

void add_inplace(float* y, const float* x, int64_t n);
void embedding_forward(float* out, const int32_t* ids, const float* table, int64_t T, int64_t C);
void embedding_backward(float* dtable, const float* dout, const int32_t* ids, int64_t T, int64_t C);

void rmsnorm_forward(float* y, float* rstd, const float* x, const float* w, int64_t N, int64_t C, float eps);
int64_t rmsnorm_backward_ws_floats(int64_t N, int64_t C);
void rmsnorm_backward(float* dx, float* dw, const float* dy, const float* x, const float* w, const float* rstd,
                      int64_t N, int64_t C, float* ws);

void rope_forward(float* x, const int32_t* pos, const float* cos, const float* sin, int64_t T, int64_t nh,
                  int64_t D);
void rope_backward(float* dx, const int32_t* pos, const float* cos, const float* sin, int64_t T, int64_t nh,
                   int64_t D);

void swiglu_forward(float* out, const float* gu, int64_t T, int64_t F);
void swiglu_backward(float* dgu, const float* dout, const float* gu, int64_t T, int64_t F);

// Enough for every sequence of length up to T (forward and backward share it): 2 [H, T, T] + [H, T]
// + 5 [H, T, D] (head-major copies of q, k, v, dout and one output, as eager transposes make them).
// The need is set by the longest sequence, so callers pass the batch's longest sequence length as T.
int64_t attention_ws_floats(int64_t T, int64_t H, int64_t K, int64_t D);
void attention_forward(float* o, float* lse, const float* q, const float* k, const float* v,
                       const int32_t* cu_seqlens, int64_t S, int64_t T, int64_t H, int64_t K, int64_t D,
                       float scale, float* ws);
void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
                        const float* v, const float* o, const float* lse, const int32_t* cu_seqlens, int64_t S,
                        int64_t T, int64_t H, int64_t K, int64_t D, float scale, float* ws);

// `chunk` = the number of rows the workspace must cover: pass T (the plain path never chunks).
int64_t lm_head_ws_floats(int64_t chunk, int64_t V, int64_t C);
// `chunk` is ignored: all T rows at once; ws holds lm_head_ws_floats(T, V, C) floats.
void lm_head_forward(float* logprob, float* entropy, float* lse, const void* h, const void* W, DType ab_dtype,
                     const int32_t* target, int64_t T, int64_t C, int64_t V, float logit_scale, int64_t chunk,
                     float* ws);
// `entropy` is ignored: the plain backward derives the entropy term from its own [T, V] passes.
void lm_head_backward(float* dh, float* dW, const float* dlogprob, const float* dentropy, const void* h, const void* W,
                      DType ab_dtype, const int32_t* target, const float* lse, const float* entropy, int64_t T,
                      int64_t C, int64_t V, float logit_scale, int64_t chunk, float* ws);

}  // namespace grpo::plain

namespace grpo {

// A decoder kernel set as function pointers with the ops.h signatures, so the decoder switches between
// the fused (ops::) and the plain (plain::) kernels without #ifs.
struct DecoderKernels {
  const char* name;  // "fused" or "plain"
  decltype(&ops::rmsnorm_forward) rmsnorm_forward;
  decltype(&ops::rmsnorm_backward) rmsnorm_backward;
  decltype(&ops::rmsnorm_backward_ws_floats) rmsnorm_backward_ws_floats;
  decltype(&ops::rope_forward) rope_forward;
  decltype(&ops::rope_backward) rope_backward;
  decltype(&ops::swiglu_forward) swiglu_forward;
  decltype(&ops::swiglu_backward) swiglu_backward;
  decltype(&ops::attention_ws_floats) attention_ws_floats;
  decltype(&ops::attention_forward) attention_forward;
  decltype(&ops::attention_backward) attention_backward;
  decltype(&ops::lm_head_ws_floats) lm_head_ws_floats;
  decltype(&ops::lm_head_forward) lm_head_forward;
  decltype(&ops::lm_head_backward) lm_head_backward;
  decltype(&ops::embedding_forward) embedding_forward;
  decltype(&ops::embedding_backward) embedding_backward;
  decltype(&ops::add_inplace) add_inplace;
  // true for plain: the decoder sizes the lm_head workspace for all T rows, lm_head_ws_floats(T, V, C).
  bool full_logits;
  // true for plain: attention_ws_floats takes the longest sequence length instead of the batch's T.
  bool attention_ws_per_sequence;
};

const DecoderKernels& fused_kernels();  // the ops:: set
const DecoderKernels& plain_kernels();  // the plain:: set

}  // namespace grpo
