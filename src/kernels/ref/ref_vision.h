// Naive reference of the vision kernels of vision_ops.h (LayerNorm, GELU tanh/erf with bias, bias add/grad,
// per-row rotary, M-RoPE gather, non-causal segment attention, bilinear position embedding), templated on the
// scalar type (float or double); the test oracle. Same argument meaning as vision_ops.h.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/vision_ops.h"

namespace grpo::ref {

template <typename T>
void layernorm_forward(T* y, T* mean, T* rstd, const T* x, const T* w, const T* b, int64_t N, int64_t C, T eps) {
  for (int64_t n = 0; n < N; ++n) {
    T m = 0, v = 0;
    for (int64_t c = 0; c < C; ++c) m += x[n * C + c];
    m /= T(C);
    for (int64_t c = 0; c < C; ++c) v += (x[n * C + c] - m) * (x[n * C + c] - m);
    const T r = T(1) / std::sqrt(v / T(C) + eps);
    mean[n] = m;
    rstd[n] = r;
    for (int64_t c = 0; c < C; ++c) y[n * C + c] = (x[n * C + c] - m) * r * w[c] + b[c];
  }
}

template <typename T>
void layernorm_backward(T* dx, T* dw, T* db, const T* dy, const T* x, const T* w, const T* mean, const T* rstd,
                        int64_t N, int64_t C) {
  for (int64_t n = 0; n < N; ++n) {
    const T m = mean[n], r = rstd[n];
    T sg = 0, sgx = 0;
    for (int64_t c = 0; c < C; ++c) {
      const T xh = (x[n * C + c] - m) * r, g = w[c] * dy[n * C + c];
      sg += g;
      sgx += g * xh;
      dw[c] += dy[n * C + c] * xh;
      db[c] += dy[n * C + c];
    }
    for (int64_t c = 0; c < C; ++c) {
      const T xh = (x[n * C + c] - m) * r;
      dx[n * C + c] = r * (w[c] * dy[n * C + c] - sg / T(C) - xh * sgx / T(C));
    }
  }
}

template <typename T>
T gelu(T x, ops::Gelu kind) {
  if (kind == ops::Gelu::Erf) return T(0.5) * x * (T(1) + std::erf(x / std::sqrt(T(2))));
  const T k = std::sqrt(T(2) / T(M_PI));
  return T(0.5) * x * (T(1) + std::tanh(k * (x + T(0.044715) * x * x * x)));
}

template <typename T>
T gelu_grad(T x, ops::Gelu kind) {
  if (kind == ops::Gelu::Erf)
    return T(0.5) * (T(1) + std::erf(x / std::sqrt(T(2)))) + x * std::exp(-x * x / T(2)) / std::sqrt(T(2) * T(M_PI));
  const T k = std::sqrt(T(2) / T(M_PI));
  const T t = std::tanh(k * (x + T(0.044715) * x * x * x));
  return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * k * (T(1) + T(3) * T(0.044715) * x * x);
}

// x += b (b may be null); y = gelu(x)
template <typename T>
void bias_gelu_forward(T* y, T* x, const T* b, int64_t N, int64_t F, ops::Gelu kind) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < F; ++c) {
      if (b) x[n * F + c] += b[c];
      y[n * F + c] = gelu(x[n * F + c], kind);
    }
}

template <typename T>
void gelu_backward(T* dx, T* db, const T* dy, const T* x, int64_t N, int64_t F, ops::Gelu kind) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < F; ++c) {
      dx[n * F + c] = dy[n * F + c] * gelu_grad(x[n * F + c], kind);
      if (db) db[c] += dx[n * F + c];
    }
}

template <typename T>
void bias_add(T* y, const T* b, int64_t N, int64_t F) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < F; ++c) y[n * F + c] += b[c];
}

template <typename T>
void bias_grad(T* db, const T* dy, int64_t N, int64_t F) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < F; ++c) db[c] += dy[n * F + c];
}

// x [T, nh, D] rotated in place with cos/sin row t [T, D/2]; inverse = the transpose rotation.
template <typename T>
void rope_rows(T* x, const T* cos, const T* sin, int64_t n_tok, int64_t nh, int64_t D, bool inverse) {
  const int64_t half = D / 2;
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t h = 0; h < nh; ++h) {
      T* row = x + (t * nh + h) * D;
      for (int64_t i = 0; i < half; ++i) {
        const T c = cos[t * half + i], s = inverse ? -sin[t * half + i] : sin[t * half + i];
        const T a = row[i], b = row[i + half];
        row[i] = a * c - b * s;
        row[i + half] = b * c + a * s;
      }
    }
}

template <typename T>
void mrope_tables(T* cos, T* sin, const int32_t* pos3, const uint8_t* axis, const T* cos_table, const T* sin_table,
                  int64_t n_tok, int64_t half) {
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t j = 0; j < half; ++j) {
      const int64_t p = pos3[axis[j] * n_tok + t];
      cos[t * half + j] = cos_table[p * half + j];
      sin[t * half + j] = sin_table[p * half + j];
    }
}

// Softmax probabilities of query row (t, h) over all keys of its segment [start, end); returns lse.
template <typename T>
T segment_row_probs(std::vector<T>& p, const T* q, const T* k, int64_t start, int64_t end, int64_t t, int64_t H,
                    int64_t K, int64_t D, int64_t h, T scale) {
  const int64_t kvh = h / (H / K);
  p.assign(end - start, T(0));
  T mx = -INFINITY;
  for (int64_t j = start; j < end; ++j) {
    T s = 0;
    for (int64_t d = 0; d < D; ++d) s += q[(t * H + h) * D + d] * k[(j * K + kvh) * D + d];
    p[j - start] = s * scale;
    mx = std::max(mx, p[j - start]);
  }
  T sum = 0;
  for (T v : p) sum += std::exp(v - mx);
  const T lse = mx + std::log(sum);
  for (T& v : p) v = std::exp(v - lse);
  return lse;
}

template <typename T>
void bidirectional_attention_forward(T* o, T* lse, const T* q, const T* k, const T* v, const int32_t* cu_seqlens,
                                     int64_t S, int64_t H, int64_t K, int64_t D, T scale) {
  std::vector<T> p;
  for (int64_t s = 0; s < S; ++s)
    for (int64_t t = cu_seqlens[s]; t < cu_seqlens[s + 1]; ++t)
      for (int64_t h = 0; h < H; ++h) {
        const int64_t kvh = h / (H / K);
        lse[t * H + h] = segment_row_probs(p, q, k, cu_seqlens[s], cu_seqlens[s + 1], t, H, K, D, h, scale);
        for (int64_t d = 0; d < D; ++d) {
          T acc = 0;
          for (size_t j = 0; j < p.size(); ++j) acc += p[j] * v[((cu_seqlens[s] + j) * K + kvh) * D + d];
          o[(t * H + h) * D + d] = acc;
        }
      }
}

template <typename T>
void bidirectional_attention_backward(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v,
                                      const int32_t* cu_seqlens, int64_t S, int64_t n_tok, int64_t H, int64_t K,
                                      int64_t D, T scale) {
  for (int64_t i = 0; i < n_tok * H * D; ++i) dq[i] = 0;
  for (int64_t i = 0; i < n_tok * K * D; ++i) dk[i] = dv[i] = 0;
  std::vector<T> p, dp;
  for (int64_t s = 0; s < S; ++s)
    for (int64_t t = cu_seqlens[s]; t < cu_seqlens[s + 1]; ++t)
      for (int64_t h = 0; h < H; ++h) {
        const int64_t start = cu_seqlens[s], kvh = h / (H / K);
        segment_row_probs(p, q, k, start, cu_seqlens[s + 1], t, H, K, D, h, scale);
        const T* g = dout + (t * H + h) * D;
        dp.assign(p.size(), T(0));
        T di = 0;
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

template <typename T>
void bilinear_embed_forward(T* out, const int32_t* idx, const T* w, const T* table, int64_t N, int64_t C) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      T acc = 0;
      for (int64_t k = 0; k < 4; ++k) acc += w[k * N + n] * table[int64_t{idx[k * N + n]} * C + c];
      out[n * C + c] = acc;
    }
}

template <typename T>
void bilinear_embed_backward(T* dtable, const T* dout, const int32_t* idx, const T* w, int64_t N, int64_t C) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < 4; ++k)
      for (int64_t c = 0; c < C; ++c) dtable[int64_t{idx[k * N + n]} * C + c] += w[k * N + n] * dout[n * C + c];
}

}  // namespace grpo::ref
