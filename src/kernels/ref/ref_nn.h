// Naive reference of the decoder-layer kernels of ops.h (add, embedding, RMSNorm, RoPE, SwiGLU, causal GQA
// attention), templated on the scalar type (float or double). Same argument meaning as ops.h; written for
// obviousness, not speed: the test oracle. Attention builds each row's full score vector.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace grpo::ref {

template <typename T>
void add_inplace(T* y, const T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

// y [n_tok, N] (ldy) += alpha u V, u [n_tok, r] (ldu), V [r, N] (ldv)
template <typename T>
void add_low_rank(T* y, int64_t ldy, const T* u, int64_t ldu, const T* V, int64_t ldv, int64_t n_tok, int64_t N,
                  int64_t r, T alpha) {
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t n = 0; n < N; ++n) {
      T acc = 0;
      for (int64_t j = 0; j < r; ++j) acc += u[t * ldu + j] * V[j * ldv + n];
      y[t * ldy + n] += alpha * acc;
    }
}

// out [T,C] = table[ids[t]]
template <typename T>
void embedding_forward(T* out, const int32_t* ids, const T* table, int64_t n_tok, int64_t C) {
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t c = 0; c < C; ++c) out[t * C + c] = table[int64_t{ids[t]} * C + c];
}

template <typename T>
void embedding_backward(T* dtable, const T* dout, const int32_t* ids, int64_t n_tok, int64_t C) {
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t c = 0; c < C; ++c) dtable[int64_t{ids[t]} * C + c] += dout[t * C + c];
}

// y [N,C] = x * rstd * w, rstd [N]
template <typename T>
void rmsnorm_forward(T* y, T* rstd, const T* x, const T* w, int64_t N, int64_t C, T eps) {
  for (int64_t n = 0; n < N; ++n) {
    T ss = 0;
    for (int64_t c = 0; c < C; ++c) ss += x[n * C + c] * x[n * C + c];
    T r = T(1) / std::sqrt(ss / T(C) + eps);
    rstd[n] = r;
    for (int64_t c = 0; c < C; ++c) y[n * C + c] = x[n * C + c] * r * w[c];
  }
}

// dx = r w dy - x r^3 mean(w dy x);  dw += sum_n dy x r
template <typename T>
void rmsnorm_backward(T* dx, T* dw, const T* dy, const T* x, const T* w, const T* rstd, int64_t N, int64_t C) {
  for (int64_t n = 0; n < N; ++n) {
    const T r = rstd[n];
    T dot = 0;
    for (int64_t c = 0; c < C; ++c) dot += dy[n * C + c] * w[c] * x[n * C + c];
    for (int64_t c = 0; c < C; ++c) dw[c] += dy[n * C + c] * x[n * C + c] * r;
    for (int64_t c = 0; c < C; ++c)
      dx[n * C + c] = r * w[c] * dy[n * C + c] - x[n * C + c] * r * r * r * dot / T(C);
  }
}

// x [T, nh, D] rotated in place (NEOX split halves); cos, sin [P, D/2]
template <typename T>
void rope_forward(T* x, const int32_t* pos, const T* cos, const T* sin, int64_t n_tok, int64_t nh, int64_t D) {
  const int64_t half = D / 2;
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t h = 0; h < nh; ++h) {
      T* row = x + (t * nh + h) * D;
      for (int64_t i = 0; i < half; ++i) {
        const T c = cos[pos[t] * half + i], s = sin[pos[t] * half + i];
        const T a = row[i], b = row[i + half];
        row[i] = a * c - b * s;
        row[i + half] = b * c + a * s;
      }
    }
}

// The transpose (= inverse) rotation applied to the gradient.
template <typename T>
void rope_backward(T* dx, const int32_t* pos, const T* cos, const T* sin, int64_t n_tok, int64_t nh, int64_t D) {
  const int64_t half = D / 2;
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t h = 0; h < nh; ++h) {
      T* row = dx + (t * nh + h) * D;
      for (int64_t i = 0; i < half; ++i) {
        const T c = cos[pos[t] * half + i], s = sin[pos[t] * half + i];
        const T a = row[i], b = row[i + half];
        row[i] = a * c + b * s;
        row[i + half] = b * c - a * s;
      }
    }
}

template <typename T>
T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

// out [T,F] = silu(gu[:, :F]) * gu[:, F:]
template <typename T>
void swiglu_forward(T* out, const T* gu, int64_t n_tok, int64_t F) {
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t i = 0; i < F; ++i) {
      const T g = gu[t * 2 * F + i], u = gu[t * 2 * F + F + i];
      out[t * F + i] = g * sigmoid(g) * u;
    }
}

template <typename T>
void swiglu_backward(T* dgu, const T* dout, const T* gu, int64_t n_tok, int64_t F) {
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t i = 0; i < F; ++i) {
      const T g = gu[t * 2 * F + i], u = gu[t * 2 * F + F + i], d = dout[t * F + i];
      const T s = sigmoid(g);
      dgu[t * 2 * F + i] = d * u * s * (T(1) + g * (T(1) - s));
      dgu[t * 2 * F + F + i] = d * g * s;
    }
}

// Softmax probabilities of query row (t, h) over keys [start, t] of its sequence; returns lse.
template <typename T>
T attention_row_probs(std::vector<T>& p, const T* q, const T* k, int64_t start, int64_t t, int64_t H,
                      int64_t K, int64_t D, int64_t h, T scale) {
  const int64_t kvh = h / (H / K);
  const int64_t n = t - start + 1;
  p.assign(n, T(0));
  T mx = -INFINITY;
  for (int64_t j = 0; j < n; ++j) {
    T s = 0;
    for (int64_t d = 0; d < D; ++d) s += q[(t * H + h) * D + d] * k[((start + j) * K + kvh) * D + d];
    p[j] = s * scale;
    mx = std::max(mx, p[j]);
  }
  T sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += std::exp(p[j] - mx);
  const T lse = mx + std::log(sum);
  for (int64_t j = 0; j < n; ++j) p[j] = std::exp(p[j] - lse);
  return lse;
}

// o [T,H,D], lse [T,H]; q [T,H,D], k, v [T,K,D]; causal within each sequence of cu_seqlens [S+1].
template <typename T>
void attention_forward(T* o, T* lse, const T* q, const T* k, const T* v, const int32_t* cu_seqlens, int64_t S,
                       int64_t H, int64_t K, int64_t D, T scale) {
  std::vector<T> p;
  for (int64_t s = 0; s < S; ++s)
    for (int64_t t = cu_seqlens[s]; t < cu_seqlens[s + 1]; ++t)
      for (int64_t h = 0; h < H; ++h) {
        const int64_t start = cu_seqlens[s], kvh = h / (H / K);
        lse[t * H + h] = attention_row_probs(p, q, k, start, t, H, K, D, h, scale);
        for (int64_t d = 0; d < D; ++d) {
          T acc = 0;
          for (size_t j = 0; j < p.size(); ++j) acc += p[j] * v[((start + j) * K + kvh) * D + d];
          o[(t * H + h) * D + d] = acc;
        }
      }
}

// dq [T,H,D], dk, dv [T,K,D] (=) by the textbook softmax backward, probabilities recomputed per row.
template <typename T>
void attention_backward(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v,
                        const int32_t* cu_seqlens, int64_t S, int64_t n_tok, int64_t H, int64_t K, int64_t D,
                        T scale) {
  for (int64_t i = 0; i < n_tok * H * D; ++i) dq[i] = 0;
  for (int64_t i = 0; i < n_tok * K * D; ++i) dk[i] = dv[i] = 0;
  std::vector<T> p, dp;
  for (int64_t s = 0; s < S; ++s)
    for (int64_t t = cu_seqlens[s]; t < cu_seqlens[s + 1]; ++t)
      for (int64_t h = 0; h < H; ++h) {
        const int64_t start = cu_seqlens[s], kvh = h / (H / K);
        attention_row_probs(p, q, k, start, t, H, K, D, h, scale);
        const T* g = dout + (t * H + h) * D;
        dp.assign(p.size(), T(0));
        T di = 0;  // sum_j p_j dp_j
        for (size_t j = 0; j < p.size(); ++j) {
          for (int64_t d = 0; d < D; ++d) dp[j] += g[d] * v[((start + j) * K + kvh) * D + d];
          di += p[j] * dp[j];
        }
        for (size_t j = 0; j < p.size(); ++j) {
          const T ds = p[j] * (dp[j] - di) * scale;
          const int64_t kv_row = ((start + j) * K + kvh) * D;
          for (int64_t d = 0; d < D; ++d) {
            dq[(t * H + h) * D + d] += ds * k[kv_row + d];
            dk[kv_row + d] += ds * q[(t * H + h) * D + d];
            dv[kv_row + d] += p[j] * g[d];
          }
        }
      }
}

}  // namespace grpo::ref
