// Small data-movement helpers shared by the training decoder, the vision tower and the inference path:
// splitting the fused qkv projection into contiguous q/k/v, merging their gradients back, bias add / bias
// gradient, and row scatters/gathers (image features in and out of the token rows).
#pragma once
#include <cstdint>

namespace grpo {

// qkv [T, Q + 2KV] -> q [T, Q], k [T, KV], v [T, KV]
void split_qkv(float* q, float* k, float* v, const float* qkv, int64_t T, int64_t Q, int64_t KV);
// q [T, Q], k [T, KV], v [T, KV] -> qkv [T, Q + 2KV]
void merge_qkv(float* qkv, const float* q, const float* k, const float* v, int64_t T, int64_t Q, int64_t KV);
// y [T, N] += b [N] on every row
void add_bias(float* y, const float* b, int64_t T, int64_t N);
// db [N] += column sums of dy [T, N] (deterministic: columns split across threads)
void bias_grad(float* db, const float* dy, int64_t T, int64_t N);
// Row moves between a [T, C] matrix x and n rows src/dst [n, C]; rows [n] are row indices of x.
void scatter_rows(float* x, const int32_t* rows, const float* src, int64_t n, int64_t C);  // x[rows[i]] = src[i]
void add_to_rows(float* x, const int32_t* rows, const float* src, int64_t n, int64_t C);   // x[rows[i]] += src[i]
void gather_rows(float* dst, const float* x, const int32_t* rows, int64_t n, int64_t C);   // dst[i] = x[rows[i]]

}  // namespace grpo
