// Naive reference of the head kernels of ops.h (GEMM, fused output layer, sum of squares,
// AdamW), templated on the scalar type (float or double). Same argument meaning as ops.h; written for
// obviousness, not speed: the test oracle. The output layer builds the full [T, V] logits.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/ops.h"

namespace grpo::ref {

// C[M,N] = alpha op(A) op(B) + beta C, same storage conventions as ops::gemm.
template <typename T>
void gemm(ops::Trans ta, ops::Trans tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
          const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      T acc = 0;
      for (int64_t k = 0; k < K; ++k) {
        const T a = ta == ops::Trans::N ? A[i * lda + k] : A[k * lda + i];
        const T b = tb == ops::Trans::N ? B[k * ldb + j] : B[j * ldb + k];
        acc += a * b;
      }
      C[i * ldc + j] = alpha * acc + (beta == T(0) ? T(0) : beta * C[i * ldc + j]);
    }
}

// For b in [0, batch): C_b = alpha op(A_b) op(B_b) + beta C_b, X_b = X + b * stride_x (ops::gemm_batched).
template <typename T>
void gemm_batched(ops::Trans ta, ops::Trans tb, int64_t batch, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
                  int64_t lda, int64_t stride_a, const T* B, int64_t ldb, int64_t stride_b, T beta, T* C, int64_t ldc,
                  int64_t stride_c) {
  for (int64_t b = 0; b < batch; ++b)
    gemm<T>(ta, tb, M, N, K, alpha, A + b * stride_a, lda, B + b * stride_b, ldb, beta, C + b * stride_c, ldc);
}

// logits [T, V] = scale h W^T; h [T, C], W [V, C].
template <typename T>
std::vector<T> lm_logits(const T* h, const T* W, int64_t n_tok, int64_t C, int64_t V, T scale) {
  std::vector<T> z(static_cast<size_t>(n_tok * V));
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t v = 0; v < V; ++v) {
      T acc = 0;
      for (int64_t c = 0; c < C; ++c) acc += h[t * C + c] * W[v * C + c];
      z[t * V + v] = scale * acc;
    }
  return z;
}

// Log-softmax statistics of one row of logits z [V].
template <typename T>
void log_softmax_row(const T* z, int64_t V, T* lse, T* entropy) {
  T m = z[0];
  for (int64_t v = 1; v < V; ++v) m = std::max(m, z[v]);
  T s = 0;
  for (int64_t v = 0; v < V; ++v) s += std::exp(z[v] - m);
  *lse = m + std::log(s);
  T H = 0;
  for (int64_t v = 0; v < V; ++v) {
    const T logp = z[v] - *lse;
    H -= std::exp(logp) * logp;
  }
  *entropy = H;
}

template <typename T>
void lm_head_forward(T* logprob, T* entropy, T* lse, const T* h, const T* W, const int32_t* target,
                     int64_t n_tok, int64_t C, int64_t V, T scale) {
  const std::vector<T> z = lm_logits(h, W, n_tok, C, V, scale);
  for (int64_t t = 0; t < n_tok; ++t) {
    log_softmax_row(&z[t * V], V, &lse[t], &entropy[t]);
    logprob[t] = target[t] >= 0 ? z[t * V + target[t]] - lse[t] : T(0);
  }
}

// dh [T, C] (=), dW [V, C] (+=) for the loss sum_t dlogprob[t] logprob[t] + dentropy[t] entropy[t].
template <typename T>
void lm_head_backward(T* dh, T* dW, const T* dlogprob, const T* dentropy, const T* h, const T* W,
                      const int32_t* target, int64_t n_tok, int64_t C, int64_t V, T scale) {
  const std::vector<T> z = lm_logits(h, W, n_tok, C, V, scale);
  std::vector<T> dz(static_cast<size_t>(V));
  for (int64_t t = 0; t < n_tok; ++t) {
    T lse, H;
    log_softmax_row(&z[t * V], V, &lse, &H);
    const T g_lp = (dlogprob && target[t] >= 0) ? dlogprob[t] : T(0);
    const T g_ent = dentropy ? dentropy[t] : T(0);
    for (int64_t v = 0; v < V; ++v) {
      const T logp = z[t * V + v] - lse, p = std::exp(logp);
      const T onehot = v == target[t] ? T(1) : T(0);
      dz[v] = scale * (g_lp * (onehot - p) - g_ent * p * (logp + H));
    }
    for (int64_t c = 0; c < C; ++c) {
      T acc = 0;
      for (int64_t v = 0; v < V; ++v) acc += dz[v] * W[v * C + c];
      dh[t * C + c] = acc;
    }
    for (int64_t v = 0; v < V; ++v)
      for (int64_t c = 0; c < C; ++c) dW[v * C + c] += dz[v] * h[t * C + c];
  }
}

template <typename T>
T sum_squares(const T* x, int64_t n) {
  T acc = 0;
  for (int64_t i = 0; i < n; ++i) acc += x[i] * x[i];
  return acc;
}

// AdamW as written in torch.optim.AdamW's documentation.
template <typename T>
void adamw_step(T* p, const T* g, T* m, T* v, int64_t n, T lr, T beta1, T beta2, T eps, T weight_decay,
                int64_t step, T grad_scale) {
  const T bc1 = T(1) - std::pow(beta1, T(step)), bc2 = T(1) - std::pow(beta2, T(step));
  for (int64_t i = 0; i < n; ++i) {
    const T ge = g[i] * grad_scale;
    p[i] *= T(1) - lr * weight_decay;
    m[i] = beta1 * m[i] + (T(1) - beta1) * ge;
    v[i] = beta2 * v[i] + (T(1) - beta2) * ge * ge;
    p[i] -= lr * (m[i] / bc1) / (std::sqrt(v[i] / bc2) + eps);
  }
}

}  // namespace grpo::ref
