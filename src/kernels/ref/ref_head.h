// Naive reference of the head kernels of ops.h (GEMM, fused output layer, policy loss, sum of squares,
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

// Per-token policy loss written as verl does, with the gradient derived case by case:
//   pg = max(-A r, -A clip(r)) (then min with -c A where A < 0), r = exp(clamp(logp - old, -20, 20)).
template <typename T>
void policy_loss(T* dlogp, T* dentropy, ops::PolicyLossStats* stats, const T* logp, const T* old_logp,
                 const T* ref_logp, const T* adv, const T* entropy, const T* w, const T* tis, int64_t N,
                 const ops::PolicyLossConfig& cfg) {
  const T lo = T(1) - T(cfg.clip_ratio_low), hi = T(1) + T(cfg.clip_ratio_high), c = T(cfg.clip_ratio_c);
  for (int64_t t = 0; t < N; ++t) {
    dlogp[t] = 0;
    if (dentropy) dentropy[t] = 0;
    if (w[t] == T(0)) continue;
    const T A = adv[t], diff = logp[t] - old_logp[t];
    const T d = std::min(std::max(diff, T(-20)), T(20));
    const T ratio = std::exp(d);
    const T dratio = (diff >= T(-20) && diff <= T(20)) ? ratio : T(0);
    const T clipped_ratio = std::min(std::max(ratio, lo), hi);
    const bool clip_active = ratio < lo || ratio > hi;
    const T L1 = -A * ratio, L2 = -A * clipped_ratio;
    // d max(L1, L2): L1 when L1 > L2; L2 (constant where the clip is active) when L2 > L1; ties average.
    const T dL1 = -A * dratio, dL2 = clip_active ? T(0) : -A * dratio;
    T pg = std::max(L1, L2);
    T dpg = L1 > L2 ? dL1 : (L2 > L1 ? dL2 : (dL1 + dL2) / 2);
    if (A < T(0)) {
      const T L3 = -c * A;
      if (L3 < pg) dpg = 0;
      else if (L3 == pg) dpg /= 2;
      pg = std::min(pg, L3);
    }
    const T tis_w = tis ? tis[t] : T(1);
    T loss = pg * tis_w, grad = dpg * tis_w;
    stats->pg_loss += double(w[t] * pg * tis_w);
    if (ref_logp) {
      T kl, dkl;
      const T delta = logp[t] - ref_logp[t];
      if (cfg.kl_type == ops::KlType::K1) {
        kl = delta;
        dkl = 1;
      } else if (cfg.kl_type == ops::KlType::K2) {
        kl = delta * delta / 2;
        dkl = delta;
      } else {
        const T x = std::min(std::max(-delta, T(-20)), T(20));
        const T raw = std::exp(x) - x - T(1);
        kl = std::min(std::max(raw, T(-10)), T(10));
        const bool passes = -delta >= T(-20) && -delta <= T(20) && raw >= T(-10) && raw <= T(10);
        dkl = passes ? T(1) - std::exp(x) : T(0);
      }
      stats->kl += double(w[t] * kl);
      loss += T(cfg.kl_coef) * kl;
      grad += T(cfg.kl_coef) * dkl;
    }
    if (entropy) {
      stats->entropy += double(w[t] * entropy[t]);
      loss -= T(cfg.entropy_coef) * entropy[t];
    }
    if (dentropy) dentropy[t] = -T(cfg.entropy_coef) * w[t];
    dlogp[t] = w[t] * grad;
    stats->loss += double(w[t] * loss);
    stats->clipped += L2 > L1 ? 1 : 0;
    stats->ppo_kl += double(-d);
    stats->tokens += 1;
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
