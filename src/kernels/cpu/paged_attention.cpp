// Attention over the paged KV cache (decode and chunked prefill), flash-decoding style: one work item
// is a token and a range of its kv heads (all of them when there are tokens enough to keep every thread
// busy), whose query heads share every k/v row read and converted, two at a time; blocks of the sequence
// are visited in order with an online softmax. bf16 and int8 k/v are converted inside the dot products and
// the weighted sums (int8: the per-token scale multiplies the integer dot product), never into a
// full-precision copy. The body is compiled twice, AVX-512 (Avx512Rows below) and AVX2 (Avx2Rows,
// paged_rows_avx2.h), chosen at run time.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/error.h"
#include "core/profiler.h"
#include "core/threads.h"
#include "kernels/backend.h"
#include "kernels/cpu/lane_sums.h"
#include "kernels/cpu/paged_rows_avx2.h"
#include "kernels/paged_ops.h"

namespace grpo::ops {

namespace {

#define GRPO_AVX512 [[gnu::target("avx512f,avx512bw,avx512vl,avx512dq")]]
#define GRPO_AVX2 [[gnu::target("avx2,fma")]]

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
    return cpu::reduce16(acc);
  }
  // dot() of four consecutive rows (stride D), the same sums, reduced together.
  template <typename E>
  GRPO_AVX512 static inline void dot4(float* out, const float* q, const E* rows, int64_t D) {
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t d = 0; d < D; d += 16) {
      const __mmask16 m = mask(D - d);
      const __m512 qv = _mm512_maskz_loadu_ps(m, q + d);
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r) acc[r] = _mm512_fmadd_ps(qv, load(rows + r * D + d, m), acc[r]);
    }
    _mm_storeu_ps(out, cpu::reduce4x16(acc[0], acc[1], acc[2], acc[3]));
  }
  // e^x for x <= 0 (scores minus their max): 2^n * 2^f with n = round(x log2 e), |f| <= 1/2, and 2^f from
  // its Taylor series to degree 7 (relative error < 1e-8 before f32 rounding).
  GRPO_AVX512 static inline __m512 exp_nonpositive(__m512 x) {
    const __m512 t = _mm512_mul_ps(_mm512_maskz_max_ps(0xffff, x, _mm512_set1_ps(-100.0f)), _mm512_set1_ps(1.44269504088896341f));
    const __m512 n = _mm512_maskz_roundscale_ps(0xffff, t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 f = _mm512_sub_ps(t, n);
    constexpr float c[8] = {1.0f, 0.6931471805599453f, 0.2402265069591007f, 0.055504108664821576f,
                            0.009618129107628477f, 0.0013333558146428441f, 0.00015403530393381606f,
                            1.5252733804059838e-05f};
    __m512 p = _mm512_set1_ps(c[7]);
    for (int k = 6; k >= 0; --k) p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(c[k]));
    return _mm512_maskz_scalef_ps(0xffff, p, n);
  }
  // og [16 CH] = og * c + sum_j p_j v_j with the CH chunks of 16 dims in registers over the block's rows
  // (CH independent FMA chains; each element summed in the same order as the generic loop below).
  template <int CH, typename E>
  GRPO_AVX512 [[gnu::always_inline]] static inline void fold_rows(float* og, const float* p, int64_t nb, __m512 cv,
                                                                  const E* vrows) {
    __m512 acc[CH];
#pragma GCC unroll 8
    for (int k = 0; k < CH; ++k) acc[k] = _mm512_mul_ps(_mm512_loadu_ps(og + 16 * k), cv);
    for (int64_t j = 0; j < nb; ++j) {
      const __m512 pj = _mm512_set1_ps(p[j]);
#pragma GCC unroll 8
      for (int k = 0; k < CH; ++k) acc[k] = _mm512_fmadd_ps(pj, load(vrows + j * 16 * CH + 16 * k, __mmask16(0xffff)), acc[k]);
    }
#pragma GCC unroll 8
    for (int k = 0; k < CH; ++k) _mm512_storeu_ps(og + 16 * k, acc[k]);
  }
  // The exp step of a block for one head: p_j = exp(s_j - mx) written back into s (times vscale_j for
  // int8); returns the new running sum l c + sum_j p_j.
  GRPO_AVX512 static inline float exp_scores(float* s, int64_t nb, float mx, float l, float c, const float* vscale) {
    __m512 sum = _mm512_setzero_ps();
    for (int64_t j = 0; j < nb; j += 16) {
      const __mmask16 mk = mask(nb - j);
      const __m512 p = exp_nonpositive(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, s + j), _mm512_set1_ps(mx)));
      sum = _mm512_add_ps(sum, _mm512_maskz_mov_ps(mk, p));
      _mm512_mask_storeu_ps(s + j, mk, vscale ? _mm512_mul_ps(p, _mm512_maskz_loadu_ps(mk, vscale + j)) : p);
    }
    return l * c + cpu::reduce16(sum);
  }
  // Folds one block's scaled scores s [nb] (block max mx >= running max m) into the running output og [D]
  // and returns the new running sum: c = exp(m - mx), p_j = exp(s_j - mx) (written back into s, times
  // vscale_j for int8), og = og c + sum_j p_j v_j, sum = l c + sum_j p_j; 16 scores and 16 dims at a time,
  // the output chunk in a register over the block's rows.
  template <typename E>
  GRPO_AVX512 static inline float fold_block(float* og, float* s, int64_t nb, float m, float mx, float l,
                                             const E* vrows, const float* vscale, int64_t D) {
    const float c = std::exp(m - mx);
    const float l_new = exp_scores(s, nb, mx, l, c, vscale);
    const __m512 cv = _mm512_set1_ps(c);
    if (D == 64) {
      fold_rows<4>(og, s, nb, cv, vrows);
      return l_new;
    }
    if (D == 128) {
      fold_rows<8>(og, s, nb, cv, vrows);
      return l_new;
    }
    for (int64_t d = 0; d < D; d += 16) {
      const __mmask16 md = mask(D - d);
      __m512 acc = _mm512_mul_ps(_mm512_maskz_loadu_ps(md, og + d), cv);
      for (int64_t j = 0; j < nb; ++j) acc = _mm512_fmadd_ps(_mm512_set1_ps(s[j]), load(vrows + j * D + d, md), acc);
      _mm512_mask_storeu_ps(og + d, md, acc);
    }
    return l_new;
  }

  // --- All G query heads of a kv head over one block, two heads at a time sharing each k / v row read and
  // converted; every score and output element is summed exactly as by dot4() and fold_block() above.

  // dot4() of two heads q0, q1 against the same four rows.
  template <typename E>
  GRPO_AVX512 static inline void dot4x2(float* out0, float* out1, const float* q0, const float* q1, const E* rows,
                                        int64_t D) {
    __m512 a0[4], a1[4];
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) a0[r] = a1[r] = _mm512_setzero_ps();
    for (int64_t d = 0; d < D; d += 16) {
      const __mmask16 m = mask(D - d);
      const __m512 x0 = _mm512_maskz_loadu_ps(m, q0 + d), x1 = _mm512_maskz_loadu_ps(m, q1 + d);
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r) {
        const __m512 k = load(rows + r * D + d, m);
        a0[r] = _mm512_fmadd_ps(x0, k, a0[r]);
        a1[r] = _mm512_fmadd_ps(x1, k, a1[r]);
      }
    }
    _mm_storeu_ps(out0, cpu::reduce4x16(a0[0], a0[1], a0[2], a0[3]));
    _mm_storeu_ps(out1, cpu::reduce4x16(a1[0], a1[1], a1[2], a1[3]));
  }
  // s[g * ld_s + j] = q_g . k_j for the G heads (q rows of D) and the block's nb rows.
  template <typename E>
  GRPO_AVX512 static inline void scores(float* s, int64_t ld_s, const float* q, int64_t G, const E* krows, int64_t nb,
                                        int64_t D) {
    int64_t g = 0;
    for (; g + 2 <= G; g += 2) {
      float* s0 = s + g * ld_s;
      const float* q0 = q + g * D;
      int64_t j = 0;
      for (; j + 4 <= nb; j += 4) dot4x2(s0 + j, s0 + ld_s + j, q0, q0 + D, krows + j * D, D);
      for (; j < nb; ++j) {
        s0[j] = dot(q0, krows + j * D, D);
        s0[ld_s + j] = dot(q0 + D, krows + j * D, D);
      }
    }
    if (g < G) {
      int64_t j = 0;
      for (; j + 4 <= nb; j += 4) dot4(s + g * ld_s + j, q + g * D, krows + j * D, D);
      for (; j < nb; ++j) s[g * ld_s + j] = dot(q + g * D, krows + j * D, D);
    }
  }
  // s[j] = s[j] ksc_j scale (ksc: int8 scales or null); returns max(m, max_j s[j]).
  GRPO_AVX512 static inline float scale_max(float* s, int64_t nb, const float* ksc, float scale, float m) {
    const __m512 vs = _mm512_set1_ps(scale);
    __m512 vm = _mm512_set1_ps(m);
    for (int64_t j = 0; j < nb; j += 16) {
      const __mmask16 mk = mask(nb - j);
      __m512 d = _mm512_maskz_loadu_ps(mk, s + j);
      if (ksc) d = _mm512_mul_ps(d, _mm512_maskz_loadu_ps(mk, ksc + j));
      d = _mm512_mul_ps(d, vs);
      _mm512_mask_storeu_ps(s + j, mk, d);
      vm = _mm512_mask_max_ps(vm, mk, vm, d);
    }
    return std::max(m, _mm512_reduce_max_ps(vm));
  }
  // o0, o1 [16 CH] = o * c + sum_j p_j v_j for two heads (weights p0, p1) over the same rows (stride D).
  template <int CH, typename E>
  GRPO_AVX512 [[gnu::always_inline]] static inline void fold_rows2(float* o0, float* o1, const float* p0,
                                                                   const float* p1, int64_t nb, __m512 c0, __m512 c1,
                                                                   const E* vrows, int64_t D) {
    __m512 a0[CH], a1[CH];
#pragma GCC unroll 8
    for (int k = 0; k < CH; ++k) {
      a0[k] = _mm512_mul_ps(_mm512_loadu_ps(o0 + 16 * k), c0);
      a1[k] = _mm512_mul_ps(_mm512_loadu_ps(o1 + 16 * k), c1);
    }
    for (int64_t j = 0; j < nb; ++j) {
      const __m512 w0 = _mm512_set1_ps(p0[j]), w1 = _mm512_set1_ps(p1[j]);
#pragma GCC unroll 8
      for (int k = 0; k < CH; ++k) {
        const __m512 v = load(vrows + j * D + 16 * k, __mmask16(0xffff));
        a0[k] = _mm512_fmadd_ps(w0, v, a0[k]);
        a1[k] = _mm512_fmadd_ps(w1, v, a1[k]);
      }
    }
#pragma GCC unroll 8
    for (int k = 0; k < CH; ++k) {
      _mm512_storeu_ps(o0 + 16 * k, a0[k]);
      _mm512_storeu_ps(o1 + 16 * k, a1[k]);
    }
  }
  // fold_block for each of the G heads (outputs o [G, D], scores s [G, ld_s], running m, l [G], block max
  // mx [G]); the weighted sums two heads at a time where D is a multiple of 64.
  template <typename E>
  GRPO_AVX512 static inline void fold(float* o, float* s, int64_t ld_s, int64_t G, int64_t nb, const float* m,
                                      const float* mx, float* l, const E* vrows, const float* vscale, int64_t D) {
    int64_t g = 0;
    if (D % 64 == 0)
      for (; g + 2 <= G; g += 2) {
        const float c0 = std::exp(m[g] - mx[g]), c1 = std::exp(m[g + 1] - mx[g + 1]);
        float* s0 = s + g * ld_s;
        float* s1 = s0 + ld_s;
        l[g] = exp_scores(s0, nb, mx[g], l[g], c0, vscale);
        l[g + 1] = exp_scores(s1, nb, mx[g + 1], l[g + 1], c1, vscale);
        float* o0 = o + g * D;
        const __m512 cv0 = _mm512_set1_ps(c0), cv1 = _mm512_set1_ps(c1);
        int64_t d = 0;
        for (; d + 128 <= D; d += 128) fold_rows2<8>(o0 + d, o0 + D + d, s0, s1, nb, cv0, cv1, vrows + d, D);
        for (; d < D; d += 64) fold_rows2<4>(o0 + d, o0 + D + d, s0, s1, nb, cv0, cv1, vrows + d, D);
      }
    for (; g < G; ++g) l[g] = fold_block(o + g * D, s + g * ld_s, nb, m[g], mx[g], l[g], vrows, vscale, D);
  }
};

// Workspace floats per query head: its block of scores and running max, sum and block max (bs + 3), in whole
// 64-byte lines, so that the items of two threads never write the same cache line.
int64_t ws_floats_per_head(int64_t bs) { return (bs + 3 + 15) / 16 * 16; }

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

// One item: token t and kv heads [kh0, kh1), each with its G = H/K query heads. The blocks of the sequence
// are visited in order and, within a block, the item's kv heads, whose rows lie next to each other in it
// ([blocks, K, bs, D]): the item reads one contiguous run of the pool per block, which the hardware
// prefetcher follows, and fetches the next block's run while this one computes. Each head's result does not
// depend on the range it is computed in.
template <typename Rows, typename E>
[[gnu::always_inline]] inline void attend_item(const Args& a, int64_t t, int64_t kh0, int64_t kh1) {
  const PagedKvView& kv = a.kv;
  const int64_t D = kv.head_dim, bs = kv.block_size, K = kv.num_kv_heads, G = a.H / K;
  // per kv head kh: [G, bs] scores, then [G] running max, [G] sum, [G] block max, at ws + (t H + kh G) per_head
  const int64_t per_head = ws_floats_per_head(bs);
  float* ws = a.ws + t * a.H * per_head;
  for (int64_t kh = kh0; kh < kh1; ++kh) {
    float* m = ws + kh * G * per_head + G * bs;
    for (int64_t g = 0; g < G; ++g) {
      m[g] = -INFINITY;  // running max
      m[G + g] = 0;      // running sum
    }
  }
  // the outputs start at zero: c = 0 on the first block needs finite values
  std::fill_n(a.o + (t * a.H + kh0 * G) * D, (kh1 - kh0) * G * D, 0.0f);
  const E* kbase = static_cast<const E*>(kv.k) + a.layer * kv.layer_elems();
  const E* vbase = static_cast<const E*>(kv.v) + a.layer * kv.layer_elems();
  const float* ksc = kv.k_scale ? kv.k_scale + a.layer * kv.num_blocks * K * bs : nullptr;
  const float* vsc = kv.v_scale ? kv.v_scale + a.layer * kv.num_blocks * K * bs : nullptr;
  const int32_t* blocks = a.table + a.indptr[a.seq_index[t]];
  const int64_t n = static_cast<int64_t>(a.pos[t]) + 1;
  for (int64_t b0 = 0; b0 < n; b0 += bs) {
    const int64_t nb = std::min(bs, n - b0);
    if (b0 + bs < n) {  // the next block is elsewhere in the pool: fetch the item's run of it into L2
      const int64_t next = (static_cast<int64_t>(blocks[b0 / bs + 1]) * K + kh0) * bs * D;
      const int64_t bytes = (kh1 - kh0) * bs * D * static_cast<int64_t>(sizeof(E));
      for (int64_t off = 0; off < bytes; off += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(kbase + next) + off, _MM_HINT_T1);
        _mm_prefetch(reinterpret_cast<const char*>(vbase + next) + off, _MM_HINT_T1);
      }
    }
    for (int64_t kh = kh0; kh < kh1; ++kh) {
      const int64_t h0 = kh * G;
      float* s = ws + h0 * per_head;
      float* m = s + G * bs;
      float* l = m + G;
      float* mx = l + G;
      const float* q = a.q + (t * a.H + h0) * D;                                   // [G, D]
      float* o = a.o + (t * a.H + h0) * D;                                         // [G, D]
      const int64_t row0 = (static_cast<int64_t>(blocks[b0 / bs]) * K + kh) * bs;  // [blocks, K, bs] row index
      Rows::scores(s, bs, q, G, kbase + row0 * D, nb, D);
      for (int64_t g = 0; g < G; ++g)
        mx[g] = Rows::scale_max(s + g * bs, nb, ksc ? ksc + row0 : nullptr, a.scale, m[g]);
      Rows::fold(o, s, bs, G, nb, m, mx, l, vbase + row0 * D, vsc ? vsc + row0 : nullptr, D);
      std::copy_n(mx, G, m);
    }
  }
  for (int64_t kh = kh0; kh < kh1; ++kh) {
    const float* l = ws + kh * G * per_head + G * bs + G;
    for (int64_t g = 0; g < G; ++g) {
      const float inv = 1.0f / l[g];
      float* o = a.o + (t * a.H + kh * G + g) * D;
      for (int64_t d = 0; d < D; ++d) o[d] *= inv;
    }
  }
}

template <typename E>
GRPO_AVX512 void attend_avx512(const Args& a, int64_t t, int64_t kh0, int64_t kh1) {
  attend_item<Avx512Rows, E>(a, t, kh0, kh1);
}
template <typename E>
GRPO_AVX2 void attend_avx2(const Args& a, int64_t t, int64_t kh0, int64_t kh1) {
  attend_item<cpu::Avx2Rows, E>(a, t, kh0, kh1);
}

// kv heads per item: all of a token's (one contiguous run of each block) when the tokens alone give every
// thread several items, else halved (over divisors of K) until they do: a single sequence's decode still
// spreads its heads over the threads.
int64_t heads_per_item(int64_t T, int64_t K, int64_t threads) {
  int64_t hp = K;
  while (hp % 2 == 0 && T * (K / hp) < 4 * threads) hp /= 2;
  return hp;
}

// The items in parallel (the OpenMP region stays outside the target-specific functions: its outlined body
// would not inherit their instruction set).
template <typename E>
void run_items(const Args& a, bool avx512, bool parallel) {
  const int64_t K = a.kv.num_kv_heads, hp = parallel ? heads_per_item(a.T, K, num_threads()) : K, per_t = K / hp;
  const auto item = avx512 ? &attend_avx512<E> : &attend_avx2<E>;
  if (!parallel) {  // (not an OpenMP if clause: see parallel_for in core/threads.h)
    for (int64_t t = 0; t < a.T; ++t) item(a, t, 0, K);
    return;
  }
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t i = 0; i < a.T * per_t; ++i) item(a, i / per_t, i % per_t * hp, i % per_t * hp + hp);
}

}  // namespace

int64_t paged_attention_ws_floats(int64_t T, int64_t H, int64_t block_size) {
  return T * H * ws_floats_per_head(block_size);
}

void paged_attention(float* o, const float* q, const PagedKvView& kv, int64_t layer, const int32_t* block_table_indptr,
                     const int32_t* block_table, const int32_t* seq_index, const int32_t* positions, int64_t T,
                     int64_t S, int64_t H, float scale, float* ws) {
  GRPO_PROFILE("paged_attention");
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
