// Writes into the paged KV cache: new tokens' k/v (converted to f32 / bf16 / int8 with per-token scales)
// and the copy of a partly filled block for copy-on-write. See kernels/paged_ops.h.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/profiler.h"
#include "kernels/paged_ops.h"

namespace grpo::ops {

int64_t PagedKvView::bytes_per_block() const {
  int64_t per_layer = 2 * block_elems() * kv_dtype_size(dtype);
  if (dtype == KvDType::I8) per_layer += 2 * num_kv_heads * block_size * static_cast<int64_t>(sizeof(float));
  return per_layer * num_layers;
}

namespace {

// Converts one row x [D] into the cache row at element index `row * D` (and scale index `row`).
void store_row(void* cache, float* scales, int64_t row, const float* x, int64_t D, KvDType dtype) {
  switch (dtype) {
    case KvDType::F32:
      std::memcpy(static_cast<float*>(cache) + row * D, x, D * sizeof(float));
      return;
    case KvDType::BF16: {
      bf16_t* dst = static_cast<bf16_t*>(cache) + row * D;
      for (int64_t d = 0; d < D; ++d) dst[d] = f32_to_bf16(x[d]);
      return;
    }
    case KvDType::I8: {
      int8_t* dst = static_cast<int8_t*>(cache) + row * D;
      float amax = 0;
      for (int64_t d = 0; d < D; ++d) amax = std::max(amax, std::fabs(x[d]));
      const float scale = amax / 127.0f;
      for (int64_t d = 0; d < D; ++d) dst[d] = static_cast<int8_t>(scale > 0 ? std::nearbyint(x[d] / scale) : 0);
      scales[row] = scale;
      return;
    }
  }
}

}  // namespace

void paged_kv_write(const PagedKvView& kv, int64_t layer, const float* k, const float* v, const int32_t* slots,
                    int64_t T) {
  GRPO_PROFILE("paged_kv_write");
  GRPO_CHECK(layer >= 0 && layer < kv.num_layers, "[paged_kv_write] layer ", layer, " not in [0, ", kv.num_layers,
             ")");
  const int64_t K = kv.num_kv_heads, D = kv.head_dim, bs = kv.block_size;
  for (int64_t t = 0; t < T; ++t)
    GRPO_CHECK(slots[t] >= 0 && slots[t] < kv.num_slots(), "[paged_kv_write] slots[", t, "] = ", slots[t],
               " not in [0, ", kv.num_slots(), ")");
#pragma omp parallel for schedule(static) if (T * K * D > 32768)
  for (int64_t t = 0; t < T; ++t) {
    const int64_t block = slots[t] / bs, off = slots[t] % bs;
    for (int64_t h = 0; h < K; ++h) {
      const int64_t row = ((layer * kv.num_blocks + block) * K + h) * bs + off;  // [L, blocks, K, bs]
      store_row(kv.k, kv.k_scale, row, k + (t * K + h) * D, D, kv.dtype);
      store_row(kv.v, kv.v_scale, row, v + (t * K + h) * D, D, kv.dtype);
    }
  }
}

void paged_kv_copy_block(const PagedKvView& kv, int32_t src, int32_t dst, int64_t n_tokens) {
  GRPO_CHECK(src >= 0 && src < kv.num_blocks && dst >= 0 && dst < kv.num_blocks && src != dst,
             "[paged_kv_copy_block] blocks ", src, " -> ", dst, " must be distinct and in [0, ", kv.num_blocks, ")");
  GRPO_CHECK(n_tokens >= 0 && n_tokens <= kv.block_size, "[paged_kv_copy_block] n_tokens ", n_tokens,
             " not in [0, ", kv.block_size, "]");
  const int64_t K = kv.num_kv_heads, D = kv.head_dim, bs = kv.block_size, esize = kv_dtype_size(kv.dtype);
  for (int64_t l = 0; l < kv.num_layers; ++l)
    for (int64_t h = 0; h < K; ++h) {
      const int64_t src_row = ((l * kv.num_blocks + src) * K + h) * bs;
      const int64_t dst_row = ((l * kv.num_blocks + dst) * K + h) * bs;
      for (void* base : {kv.k, kv.v})
        std::memcpy(static_cast<char*>(base) + dst_row * D * esize, static_cast<char*>(base) + src_row * D * esize,
                    n_tokens * D * esize);
      if (kv.dtype == KvDType::I8)
        for (float* scales : {kv.k_scale, kv.v_scale})
          std::memcpy(scales + dst_row, scales + src_row, n_tokens * sizeof(float));
    }
}

}  // namespace grpo::ops
