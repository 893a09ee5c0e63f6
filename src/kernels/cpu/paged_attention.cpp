// Attention over the paged KV cache (decode and chunked prefill), flash-decoding style: one work item
// is a (token, kv head) pair whose query heads share every k/v row read; blocks of the sequence are
// visited in order with an online softmax. bf16 and int8 k/v are converted inside the dot products and
// the weighted sums (int8: the per-token scale multiplies the integer dot product), never into a
// full-precision copy. The body is compiled twice: AVX-512 and baseline, chosen at run time.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/error.h"
#include "kernels/backend.h"
#include "kernels/paged_ops.h"

namespace grpo::ops {

namespace {

#define GRPO_AVX512 [[gnu::target("avx512f,avx512bw,avx512vl,avx512dq")]]

template <typename E>
[[gnu::always_inline]] inline float to_f32(E x) {
  if constexpr (std::is_same_v<E, bf16_t>) {
    return grpo::bf16_to_f32(x);
  } else {
    return static_cast<float>(x);
  }
}

// Baseline row operations. dot: sum_d q[d] * row[d] (int8 rows not yet scaled).
struct ScalarRows {
  template <typename E>
  static float dot(const float* q, const E* row, int64_t D) {
    float acc = 0;
    for (int64_t d = 0; d < D; ++d) acc += q[d] * to_f32(row[d]);
    return acc;
  }
  // acc[d] = acc[d] * c + p * row[d]
  template <typename E>
  static void scale_add(float* acc, float c, float p, const E* row, int64_t D) {
    for (int64_t d = 0; d < D; ++d) acc[d] = acc[d] * c + p * to_f32(row[d]);
  }
};

// AVX-512 row operations: 16 lanes, masked tail, bf16 / int8 converted in registers.
struct Avx512Rows {
  template <typename E>
  GRPO_AVX512 [[gnu::always_inline]] static inline __m512 load(const E* p, __mmask16 m) {
    if constexpr (std::is_same_v<E, float>) {
      return _mm512_maskz_loadu_ps(m, p);
    } else if constexpr (std::is_same_v<E, bf16_t>) {
      const __m512i w = _mm512_maskz_cvtepu16_epi32(0xffff, _mm256_maskz_loadu_epi16(m, p));
      return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xffff, w, 16));
    } else {
      return _mm512_maskz_cvtepi32_ps(0xffff, _mm512_maskz_cvtepi8_epi32(0xffff, _mm_maskz_loadu_epi8(m, p)));
    }
  }
  GRPO_AVX512 [[gnu::always_inline]] static inline __mmask16 mask(int64_t left) {
    return left >= 16 ? __mmask16(0xffff) : __mmask16((1u << left) - 1);
  }
  template <typename E>
  GRPO_AVX512 static inline float dot(const float* q, const E* row, int64_t D) {
    __m512 acc = _mm512_setzero_ps();
    for (int64_t d = 0; d < D; d += 16) {
      const __mmask16 m = mask(D - d);
      acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + d), load(row + d, m), acc);
    }
    const __m256 lo = _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xf, _mm512_castps_pd(acc), 0));
    const __m256 hi = _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xf, _mm512_castps_pd(acc), 1));
    const __m256 s8 = _mm256_add_ps(lo, hi);
    const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
  }
  template <typename E>
  GRPO_AVX512 static inline void scale_add(float* acc, float c, float p, const E* row,
                                                                  int64_t D) {
    const __m512 cv = _mm512_set1_ps(c), pv = _mm512_set1_ps(p);
    for (int64_t d = 0; d < D; d += 16) {
      const __mmask16 m = mask(D - d);
      const __m512 a = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, acc + d), cv);
      _mm512_mask_storeu_ps(acc + d, m, _mm512_fmadd_ps(pv, load(row + d, m), a));
    }
  }
};

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
template <typename Rows, typename E>
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
        float d = Rows::dot(qg, krows + j * D, D);
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
        Rows::scale_add(og, j == 0 ? c : 1.0f, vsc ? p * vsc[row0 + j] : p, vrows + j * D, D);
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
GRPO_AVX512 void attend_avx512(const Args& a, int64_t t, int64_t kh) {
  attend_item<Avx512Rows, E>(a, t, kh);
}
template <typename E>
void attend_baseline(const Args& a, int64_t t, int64_t kh) {
  attend_item<ScalarRows, E>(a, t, kh);
}

// The items in parallel (the OpenMP region stays outside the target-specific functions: its outlined body
// would not inherit their instruction set).
template <typename E>
void run_items(const Args& a, bool avx512, bool parallel) {
  const int64_t K = a.kv.num_kv_heads;
  const auto item = avx512 ? &attend_avx512<E> : &attend_baseline<E>;
#pragma omp parallel for schedule(dynamic, 1) if (parallel)
  for (int64_t i = 0; i < a.T * K; ++i) item(a, i / K, i % K);
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
  switch (kv.dtype) {
    case KvDType::F32: return run_items<float>(a, cpu_has_avx512(), parallel);
    case KvDType::BF16: return run_items<bf16_t>(a, cpu_has_avx512(), parallel);
    case KvDType::I8: return run_items<int8_t>(a, cpu_has_avx512(), parallel);
  }
}

}  // namespace grpo::ops
