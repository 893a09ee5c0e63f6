// Writes into the paged KV cache: new tokens' k/v (converted to f32 / bf16 / int8 with per-token scales)
// and the copy of a partly filled block for copy-on-write. See kernels/paged_ops.h. The conversions are
// AVX2 (every supported CPU has it) and give the bits of the scalar definitions in core/dtype.h and
// kernels/ref/ref_paged.h.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/profiler.h"
#include "core/threads.h"
#include "kernels/cpu/bf16_avx2.h"
#include "kernels/paged_ops.h"

namespace grpo::ops {

int64_t PagedKvView::bytes_per_block() const {
  int64_t per_layer = 2 * block_elems() * kv_dtype_size(dtype);
  if (dtype == KvDType::I8) per_layer += 2 * num_kv_heads * block_size * static_cast<int64_t>(sizeof(float));
  return per_layer * num_layers;
}

namespace {

#define GRPO_AVX2 [[gnu::target("avx2,fma")]]

// |x| of 8 lanes.
GRPO_AVX2 [[gnu::always_inline]] inline __m256 abs8(__m256 x) {
  return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
}

// int8 row: scale = max |x| / 127 (0 for an all-zero row), q = round-to-nearest-even(x / scale), the same
// operations as the scalar definition (kernels/ref quantize_row_i8), so the same bits.
GRPO_AVX2 void store_row_i8(int8_t* dst, float* scale_out, const float* x, int64_t D) {
  __m256 vmax = _mm256_setzero_ps();
  int64_t d = 0;
  for (; d + 8 <= D; d += 8) vmax = _mm256_max_ps(abs8(_mm256_loadu_ps(x + d)), vmax);  // a NaN x is skipped, as by std::max
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, vmax);
  float amax = 0;
  for (float v : lanes) amax = std::max(amax, v);
  for (; d < D; ++d) amax = std::max(amax, std::fabs(x[d]));
  const float scale = amax / 127.0f;
  *scale_out = scale;
  if (!(scale > 0)) {
    std::memset(dst, 0, D);
    return;
  }
  const __m256 sv = _mm256_set1_ps(scale);
  for (d = 0; d + 16 <= D; d += 16) {
    const __m256i a = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_div_ps(_mm256_loadu_ps(x + d), sv),
                                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const __m256i b = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_div_ps(_mm256_loadu_ps(x + d + 8), sv),
                                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    // |q| <= 127: the saturating packs keep every value; pack order fixed up by the lane permute
    const __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xD8);  // 16 x int16 in order
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + d),
                     _mm_packs_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1)));
  }
  for (; d < D; ++d) dst[d] = static_cast<int8_t>(std::nearbyint(x[d] / scale));
}

GRPO_AVX2 void store_row_bf16(bf16_t* dst, const float* x, int64_t D) { cpu::f32_to_bf16_avx2(dst, x, D); }

// Converts one row x [D] into the cache row at element index `row * D` (and scale index `row`).
void store_row(void* cache, float* scales, int64_t row, const float* x, int64_t D, KvDType dtype) {
  switch (dtype) {
    case KvDType::F32:
      std::memcpy(static_cast<float*>(cache) + row * D, x, D * sizeof(float));
      return;
    case KvDType::BF16:
      return store_row_bf16(static_cast<bf16_t*>(cache) + row * D, x, D);
    case KvDType::I8:
      return store_row_i8(static_cast<int8_t*>(cache) + row * D, scales + row, x, D);
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
  parallel_for(T, T * K * D > 32768, [&](int64_t t) {
    const int64_t block = slots[t] / bs, off = slots[t] % bs;
    for (int64_t h = 0; h < K; ++h) {
      const int64_t row = ((layer * kv.num_blocks + block) * K + h) * bs + off;  // [L, blocks, K, bs]
      store_row(kv.k, kv.k_scale, row, k + (t * K + h) * D, D, kv.dtype);
      store_row(kv.v, kv.v_scale, row, v + (t * K + h) * D, D, kv.dtype);
    }
  });
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
