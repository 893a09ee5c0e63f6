// Naive references of the paged kernels (paged_ops.h), templated on the math type (float / double):
// the test oracle. Straight loops, no tiling, a full softmax per row.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "kernels/paged_ops.h"

namespace grpo::ref {

// Value of element (layer, slot, kv head, d) of the k (is_v = false) or v cache, dequantised.
template <typename R>
R paged_kv_value(const ops::PagedKvView& kv, bool is_v, int64_t layer, int64_t slot, int64_t head, int64_t d) {
  int64_t block = slot / kv.block_size, off = slot % kv.block_size;
  int64_t row = ((layer * kv.num_blocks + block) * kv.num_kv_heads + head) * kv.block_size + off;
  int64_t idx = row * kv.head_dim + d;
  const void* base = is_v ? kv.v : kv.k;
  switch (kv.dtype) {
    case ops::KvDType::F32: return static_cast<R>(static_cast<const float*>(base)[idx]);
    case ops::KvDType::BF16: return static_cast<R>(bf16_to_f32(static_cast<const bf16_t*>(base)[idx]));
    case ops::KvDType::I8: {
      const float* scale = is_v ? kv.v_scale : kv.k_scale;
      return static_cast<R>(static_cast<const int8_t*>(base)[idx]) * static_cast<R>(scale[row]);
    }
  }
  return 0;
}

// o [T, H, D] from q [T, H, D] over the dequantised paged cache (see ops::paged_attention).
template <typename R>
void paged_attention(R* o, const R* q, const ops::PagedKvView& kv, int64_t layer, const int32_t* indptr,
                     const int32_t* table, const int32_t* seq_index, const int32_t* pos, int64_t T, int64_t H,
                     R scale) {
  const int64_t D = kv.head_dim, group = H / kv.num_kv_heads, bs = kv.block_size;
  for (int64_t t = 0; t < T; ++t) {
    const int32_t* blocks = table + indptr[seq_index[t]];
    const int64_t n = pos[t] + 1;
    for (int64_t h = 0; h < H; ++h) {
      const int64_t kh = h / group;
      std::vector<R> s(n);
      R mx = -INFINITY;
      for (int64_t p = 0; p < n; ++p) {
        int64_t slot = blocks[p / bs] * bs + p % bs;
        R acc = 0;
        for (int64_t d = 0; d < D; ++d) acc += q[(t * H + h) * D + d] * paged_kv_value<R>(kv, false, layer, slot, kh, d);
        s[p] = acc * scale;
        mx = std::max(mx, s[p]);
      }
      R sum = 0;
      for (int64_t p = 0; p < n; ++p) sum += (s[p] = std::exp(s[p] - mx));
      for (int64_t d = 0; d < D; ++d) {
        R acc = 0;
        for (int64_t p = 0; p < n; ++p) {
          int64_t slot = blocks[p / bs] * bs + p % bs;
          acc += s[p] * paged_kv_value<R>(kv, true, layer, slot, kh, d);
        }
        o[(t * H + h) * D + d] = acc / sum;
      }
    }
  }
}

// Symmetric int8 quantisation of one row x [D]: scale = absmax / 127, q = round(x / scale).
inline float quantize_row_i8(int8_t* q, const float* x, int64_t D) {
  float amax = 0;
  for (int64_t d = 0; d < D; ++d) amax = std::max(amax, std::fabs(x[d]));
  float scale = amax / 127.0f;
  for (int64_t d = 0; d < D; ++d) q[d] = static_cast<int8_t>(scale > 0 ? std::nearbyint(x[d] / scale) : 0);
  return scale;
}

// y [B, N] = x [B, K] . W [N, K]^T with W in f32 or bf16 (then x is rounded to bf16 too, as ops::gemv does).
template <typename R>
void gemv(R* y, const float* x, const void* W, DType w_dtype, int64_t B, int64_t N, int64_t K) {
  const bool bf16 = w_dtype == DType::BF16;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 0; n < N; ++n) {
      R acc = 0;
      for (int64_t k = 0; k < K; ++k) {
        const R w = bf16 ? static_cast<R>(bf16_to_f32(static_cast<const bf16_t*>(W)[n * K + k]))
                         : static_cast<R>(static_cast<const float*>(W)[n * K + k]);
        const R xv = static_cast<R>(bf16 ? bf16_to_f32(f32_to_bf16(x[b * K + k])) : x[b * K + k]);
        acc += xv * w;
      }
      y[b * N + n] = acc;
    }
}

// p [n] = exp((x - max x) * scale); returns the sum (see ops::softmax_numerators).
template <typename R>
R softmax_numerators(R* p, const float* x, int64_t n, R scale) {
  R mx = -INFINITY;
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, static_cast<R>(x[i]));
  R sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += (p[i] = std::exp((static_cast<R>(x[i]) - mx) * scale));
  return sum;
}

}  // namespace grpo::ref
