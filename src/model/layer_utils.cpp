// Implementation of the layer data-movement helpers (see layer_utils.h).
#include "model/layer_utils.h"

#include <algorithm>
#include <cstring>

#include "core/threads.h"

namespace grpo {

void split_qkv(float* q, float* k, float* v, const float* qkv, int64_t T, int64_t Q, int64_t KV) {
  const int64_t W = Q + 2 * KV;
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < T; ++t) {
    const float* row = qkv + t * W;
    std::memcpy(q + t * Q, row, Q * sizeof(float));
    std::memcpy(k + t * KV, row + Q, KV * sizeof(float));
    std::memcpy(v + t * KV, row + Q + KV, KV * sizeof(float));
  }
}

void merge_qkv(float* qkv, const float* q, const float* k, const float* v, int64_t T, int64_t Q, int64_t KV) {
  const int64_t W = Q + 2 * KV;
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < T; ++t) {
    float* row = qkv + t * W;
    std::memcpy(row, q + t * Q, Q * sizeof(float));
    std::memcpy(row + Q, k + t * KV, KV * sizeof(float));
    std::memcpy(row + Q + KV, v + t * KV, KV * sizeof(float));
  }
}

// y [T, N] += b [N] on every row.
void add_bias(float* y, const float* b, int64_t T, int64_t N) {
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < N; ++j) y[t * N + j] += b[j];
}

// db [N] += sum over rows of dy [T, N]; columns split across threads (deterministic).
void bias_grad(float* db, const float* dy, int64_t T, int64_t N) {
#pragma omp parallel for schedule(static)
  for (int64_t j0 = 0; j0 < N; j0 += 64) {
    const int64_t j1 = std::min(N, j0 + 64);
    float acc[64] = {0};
    for (int64_t t = 0; t < T; ++t)
      for (int64_t j = j0; j < j1; ++j) acc[j - j0] += dy[t * N + j];
    for (int64_t j = j0; j < j1; ++j) db[j] += acc[j - j0];
  }
}

void scatter_rows(float* x, const int32_t* rows, const float* src, int64_t n, int64_t C) {
  parallel_for(n, n * C >= (1 << 15),
               [&](int64_t i) { std::memcpy(x + int64_t{rows[i]} * C, src + i * C, C * sizeof(float)); });
}

void add_to_rows(float* x, const int32_t* rows, const float* src, int64_t n, int64_t C) {
  parallel_for(n, n * C >= (1 << 15), [&](int64_t i) {
    float* dst = x + int64_t{rows[i]} * C;
    for (int64_t c = 0; c < C; ++c) dst[c] += src[i * C + c];
  });
}

void gather_rows(float* dst, const float* x, const int32_t* rows, int64_t n, int64_t C) {
  parallel_for(n, n * C >= (1 << 15),
               [&](int64_t i) { std::memcpy(dst + i * C, x + int64_t{rows[i]} * C, C * sizeof(float)); });
}

}  // namespace grpo
