// Attention over the paged KV cache (decode and chunked prefill), flash-decoding style: one work item
// is a (token, kv head) pair whose query heads share every k/v row read; blocks of the sequence are
// visited in order with an online softmax. bf16 and int8 k/v are converted inside the dot products and
// the weighted sums (int8: the per-token scale multiplies the integer dot product), never into a
// full-precision copy. The body is compiled twice: AVX-512 and baseline, chosen at run time.
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "kernels/backend.h"
#include "kernels/paged_ops.h"

namespace grpo::ops {

namespace {

template <typename E>
[[gnu::always_inline]] inline float to_f32(E x) {
  if constexpr (std::is_same_v<E, bf16_t>) {
    return grpo::bf16_to_f32(x);
  } else {
    return static_cast<float>(x);
  }
}

// sum_d q[d] * row[d] (row not yet scaled for int8).
template <typename E>
[[gnu::always_inline]] inline float dot(const float* q, const E* row, int64_t D) {
  float acc = 0;
#pragma omp simd reduction(+ : acc)
  for (int64_t d = 0; d < D; ++d) acc += q[d] * to_f32(row[d]);
  return acc;
}

// acc[d] = acc[d] * c + p * row[d]
template <typename E>
[[gnu::always_inline]] inline void scale_add(float* acc, float c, float p, const E* row, int64_t D) {
#pragma omp simd
  for (int64_t d = 0; d < D; ++d) acc[d] = acc[d] * c + p * to_f32(row[d]);
}

struct Args {
  float* o;
  const float* q;
  PagedKvView kv;
  int64_t layer;
  const int32_t* indptr;
  const int32_t* table;
  const int32_t* seq_index;
  const int32_t* pos;
  int64_t T, H;
  float scale;
  float* ws;
};

// One (token t, kv head kh) item: the G = H/K query heads h = kh*G .. kh*G+G-1.
template <typename E>
[[gnu::always_inline]] inline void attend_item(const Args& a, int64_t t, int64_t kh) {
  const PagedKvView& kv = a.kv;
  const int64_t D = kv.head_dim, bs = kv.block_size, K = kv.num_kv_heads, G = a.H / K;
  const int64_t h0 = kh * G;
  float* s = a.ws + (t * a.H + h0) * (bs + 2);  // [G, bs] scores, then [G] max and [G] sum
  float* m = s + G * bs;
  float* l = m + G;
  for (int64_t g = 0; g < G; ++g) {
    m[g] = -INFINITY;
    l[g] = 0;
    std::fill_n(a.o + (t * a.H + h0 + g) * D, D, 0.0f);
  }
  const E* kbase = static_cast<const E*>(kv.k) + a.layer * kv.layer_elems();
  const E* vbase = static_cast<const E*>(kv.v) + a.layer * kv.layer_elems();
  const float* ksc = kv.k_scale ? kv.k_scale + a.layer * kv.num_blocks * K * bs : nullptr;
  const float* vsc = kv.v_scale ? kv.v_scale + a.layer * kv.num_blocks * K * bs : nullptr;
  const int32_t* blocks = a.table + a.indptr[a.seq_index[t]];
  const int64_t n = static_cast<int64_t>(a.pos[t]) + 1;
  for (int64_t b0 = 0; b0 < n; b0 += bs) {
    const int64_t nb = std::min(bs, n - b0);
    const int64_t row0 = (static_cast<int64_t>(blocks[b0 / bs]) * K + kh) * bs;  // [blocks, K, bs] row index
    const E* krows = kbase + row0 * D;
    const E* vrows = vbase + row0 * D;
    for (int64_t g = 0; g < G; ++g) {
      const float* qg = a.q + (t * a.H + h0 + g) * D;
      float* sg = s + g * bs;
      float mx = m[g];
      for (int64_t j = 0; j < nb; ++j) {
        float d = dot(qg, krows + j * D, D);
        if (ksc) d *= ksc[row0 + j];
        sg[j] = d * a.scale;
        mx = std::max(mx, sg[j]);
      }
      const float c = std::exp(m[g] - mx);  // m[g] = -inf on the first block: c = 0
      float* og = a.o + (t * a.H + h0 + g) * D;
      float sum = l[g] * c;
      for (int64_t j = 0; j < nb; ++j) {
        const float p = std::exp(sg[j] - mx);
        sum += p;
        scale_add(og, j == 0 ? c : 1.0f, vsc ? p * vsc[row0 + j] : p, vrows + j * D, D);
      }
      m[g] = mx;
      l[g] = sum;
    }
  }
  for (int64_t g = 0; g < G; ++g) {
    float* og = a.o + (t * a.H + h0 + g) * D;
    const float inv = 1.0f / l[g];
    for (int64_t d = 0; d < D; ++d) og[d] *= inv;
  }
}

template <typename E>
[[gnu::always_inline]] inline void run_items(const Args& a, bool parallel) {
  const int64_t K = a.kv.num_kv_heads;
#pragma omp parallel for schedule(dynamic, 1) if (parallel)
  for (int64_t i = 0; i < a.T * K; ++i) attend_item<E>(a, i / K, i % K);
}

[[gnu::target("avx512f,avx512bw,avx512vl,avx512dq")]] void run_avx512(const Args& a, bool parallel) {
  switch (a.kv.dtype) {
    case KvDType::F32: return run_items<float>(a, parallel);
    case KvDType::BF16: return run_items<bf16_t>(a, parallel);
    case KvDType::I8: return run_items<int8_t>(a, parallel);
  }
}

void run_baseline(const Args& a, bool parallel) {
  switch (a.kv.dtype) {
    case KvDType::F32: return run_items<float>(a, parallel);
    case KvDType::BF16: return run_items<bf16_t>(a, parallel);
    case KvDType::I8: return run_items<int8_t>(a, parallel);
  }
}

}  // namespace

int64_t paged_attention_ws_floats(int64_t T, int64_t H, int64_t block_size) { return T * H * (block_size + 2); }

void paged_attention(float* o, const float* q, const PagedKvView& kv, int64_t layer, const int32_t* block_table_indptr,
                     const int32_t* block_table, const int32_t* seq_index, const int32_t* positions, int64_t T,
                     int64_t S, int64_t H, float scale, float* ws) {
  GRPO_CHECK(layer >= 0 && layer < kv.num_layers, "[paged_attention] layer ", layer, " not in [0, ", kv.num_layers,
             ")");
  GRPO_CHECK(kv.num_kv_heads > 0 && H % kv.num_kv_heads == 0, "[paged_attention] H = ", H,
             " is not a multiple of the kv heads K = ", kv.num_kv_heads);
  GRPO_CHECK(kv.dtype != KvDType::I8 || (kv.k_scale && kv.v_scale), "[paged_attention] int8 cache without scales");
  for (int64_t i = block_table_indptr[0]; i < block_table_indptr[S]; ++i)
    GRPO_CHECK(block_table[i] >= 0 && block_table[i] < kv.num_blocks, "[paged_attention] block_table[", i, "] = ",
               block_table[i], " not in [0, ", kv.num_blocks, ")");
  int64_t keys = 0;  // k/v rows read in total, for the threading decision
  for (int64_t t = 0; t < T; ++t) {
    const int32_t s = seq_index[t];
    keys += positions[t] + 1;
    GRPO_CHECK(s >= 0 && s < S, "[paged_attention] seq_index[", t, "] = ", s, " not in [0, ", S, ")");
    const int64_t nblocks = block_table_indptr[s + 1] - block_table_indptr[s];
    GRPO_CHECK(positions[t] >= 0 && positions[t] < nblocks * kv.block_size, "[paged_attention] positions[", t,
               "] = ", positions[t], " outside the ", nblocks, " blocks of sequence ", s);
  }
  const Args a{o, q, kv, layer, block_table_indptr, block_table, seq_index, positions, T, H, scale, ws};
  const bool parallel = T * kv.num_kv_heads > 1 && keys * H * kv.head_dim > (1 << 16);  // else threads cost more
  if (cpu_has_avx512())
    run_avx512(a, parallel);
  else
    run_baseline(a, parallel);
}

}  // namespace grpo::ops
