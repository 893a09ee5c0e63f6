// AVX2 + FMA body of ops::gemv (CPUs without AVX-512): y [B,N] = x [B,K] . W[N,K]^T, computed like a GEMM
// on packed weights. Threads share out blocks of weight rows (at most kBlockRows); each block is cut along
// k into chunks of at most kChunk, and each chunk is packed (bf16 W widened to f32) into panels of 8
// weight rows, [k][8], that stay in L2 while every batch row runs against them: register tiles of MR batch
// rows x 8*NV weight rows (MR * NV accumulators), x broadcast one value at a time, W one packed vector per
// panel and k. Small batches (B <= kDirectMaxB) skip the packing: 8 x 8 values of W are transposed in
// registers and used at once (bf16 as 32-bit pairs, split after the transpose). W is read from memory once per call, prefetched ahead. bf16 W: x is rounded
// to bf16 once (into x_scratch) and widened back to f32 per tile and chunk (a small stack buffer).
// Every y[b,n] is summed the same way whatever B, its path, tile, block and chunk and the thread count: one
// fused multiply-add per k, in order of k, from zero (a chunk's partial sum is stored in y and reloaded
// exactly). Any tile shape therefore gives bitwise the same sums, and no horizontal reduction is needed.
#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "core/threads.h"
#include "kernels/cpu/bf16_avx2.h"
#include "kernels/cpu/gemv_kernels.h"

namespace grpo::ops::cpu_gemv {
namespace {

#define GRPO_AVX2 [[gnu::target("avx2,fma")]]

constexpr int kPanel = 8;                // weight rows per packed panel (one ymm of outputs)
constexpr int kMaxMR = 6;                // batch rows per register tile
constexpr int64_t kChunk = 256;          // k per packed chunk
constexpr int64_t kBlockRows = 128;      // weight rows per block: 128 x 256 f32 = 128 KiB packed (in L2)
constexpr int64_t kBlocksPerThread = 4;  // when W is small, at least this many blocks per thread
constexpr int64_t kPrefetchPanels = 2;   // packing prefetches this many panels ahead from memory
constexpr int kDirectMaxB = 8;           // batches up to this size read W unpacked (see direct())
constexpr int64_t kDirectMaxK = 4096;    // ... and, for bf16 W, rows up to this long (x widened on the stack)

// Accumulator vectors along N for MR batch rows: MR * NV <= 12 accumulators, NV W vectors and one
// broadcast in the 16 ymm registers (one row: 8 accumulators, enough to hide the FMA latency).
constexpr int nv_for(int mr) { return mr >= 5 ? 2 : mr == 4 ? 3 : mr == 3 ? 4 : mr == 2 ? 6 : 8; }

// y[m, 0 .. cols) for m < MR (row stride ldy) (+)= sum over k < kc, in order, of x[m, k] (at x + m * ldx + k)
// times row k of NV consecutive panels (wp, panel stride kc * 8). accumulate: start from y (the previous
// chunks), else from zero. cols <= 8 * NV (the block's last panel may hold padding rows).
template <int MR, int NV>
GRPO_AVX2 void tile(float* y, int64_t ldy, const float* x, int64_t ldx, const float* wp, int64_t kc, bool accumulate,
                    int64_t cols) {
  constexpr int NR = kPanel * NV;
  const bool full = cols == NR;
  alignas(32) float part[MR][NR];  // the tile's outputs when some columns are padding
  __m256 acc[MR][NV];
  if (!full)
    for (int m = 0; m < MR; ++m)
      for (int c = 0; c < NR; ++c) part[m][c] = accumulate && c < cols ? y[m * ldy + c] : 0.0f;
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v)
      acc[m][v] = !full         ? _mm256_load_ps(&part[m][v * kPanel])
                  : accumulate ? _mm256_loadu_ps(y + m * ldy + v * kPanel)
                               : _mm256_setzero_ps();
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    __m256 w[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) w[v] = _mm256_load_ps(wp + (v * kc + k) * kPanel);
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      const __m256 xv = _mm256_broadcast_ss(x + m * ldx + k);
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[m][v] = _mm256_fmadd_ps(xv, w[v], acc[m][v]);
    }
  }
  if (full) {
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m)
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) _mm256_storeu_ps(y + m * ldy + v * kPanel, acc[m][v]);
    return;
  }
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) _mm256_store_ps(&part[m][v * kPanel], acc[m][v]);
  for (int m = 0; m < MR; ++m)
    for (int64_t c = 0; c < cols; ++c) y[m * ldy + c] = part[m][c];
}

// MR batch rows against `panels` packed panels (cols weight rows in all): NV = nv_for(MR) panels at a
// time, the rest with as many as are left.
template <int MR, int NV = nv_for(MR)>
void tile_row(float* y, int64_t ldy, const float* x, int64_t ldx, const float* wp, int64_t kc, bool accumulate,
              int64_t panels, int64_t cols) {
  if constexpr (NV > 0) {
    int64_t p = 0;
    for (; p + NV <= panels; p += NV)
      tile<MR, NV>(y + p * kPanel, ldy, x, ldx, wp + p * kc * kPanel, kc, accumulate,
                   std::min<int64_t>(NV * kPanel, cols - p * kPanel));
    if (p < panels)
      tile_row<MR, NV - 1>(y + p * kPanel, ldy, x, ldx, wp + p * kc * kPanel, kc, accumulate, panels - p,
                           cols - p * kPanel);
  }
}

template <int MR = kMaxMR>
void tile_rows(int64_t mr, float* y, int64_t ldy, const float* x, int64_t ldx, const float* wp, int64_t kc,
               bool accumulate, int64_t panels, int64_t cols) {
  if constexpr (MR > 0) {
    if (mr != MR) return tile_rows<MR - 1>(mr, y, ldy, x, ldx, wp, kc, accumulate, panels, cols);
    tile_row<MR>(y, ldy, x, ldx, wp, kc, accumulate, panels, cols);
  }
}

inline float widen(float v) { return v; }
inline float widen(bf16_t v) { return bf16_to_f32(v); }

// c[j] = u[0..3][j] in each 128-bit half: four 4 x 4 transposes at once (in-lane shuffles only).
GRPO_AVX2 [[gnu::always_inline]] inline void transpose4x2(__m256* c, const __m256 (&u)[4]) {
  const __m256 t0 = _mm256_unpacklo_ps(u[0], u[1]), t1 = _mm256_unpackhi_ps(u[0], u[1]);
  const __m256 t2 = _mm256_unpacklo_ps(u[2], u[3]), t3 = _mm256_unpackhi_ps(u[2], u[3]);
  c[0] = _mm256_shuffle_ps(t0, t2, 0x44);
  c[1] = _mm256_shuffle_ps(t0, t2, 0xEE);
  c[2] = _mm256_shuffle_ps(t1, t3, 0x44);
  c[3] = _mm256_shuffle_ps(t1, t3, 0xEE);
}

// c[j] = (w[0][j], w[ld][j], .., w[7 ld][j]) for j < 8 as f32: 8 rows of W x 8 values of k, transposed.
// Rows i and i+4 share a register (low and high half), so the transpose needs in-lane shuffles only.
GRPO_AVX2 [[gnu::always_inline]] inline void columns8(__m256 (&c)[8], const float* w, int64_t ld) {
  __m256 u[4], v[4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    u[i] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(w + i * ld)), _mm_loadu_ps(w + (i + 4) * ld), 1);
    v[i] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(w + i * ld + 4)),
                                _mm_loadu_ps(w + (i + 4) * ld + 4), 1);
  }
  transpose4x2(c, u);
  transpose4x2(c + 4, v);
}
GRPO_AVX2 [[gnu::always_inline]] inline void columns8(__m256 (&c)[8], const bf16_t* w, int64_t ld) {
  // pairs of bf16 (values 2q, 2q+1) transposed as 32-bit elements, then split: the even value is the
  // pair's low half shifted up, the odd one its high half with the low bits cleared
  __m256 u[4], p[4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i)
    u[i] = _mm256_castsi256_ps(_mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + i * ld))),
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + (i + 4) * ld)), 1));
  transpose4x2(p, u);
  const __m256i high = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) {
    const __m256i v = _mm256_castps_si256(p[q]);
    c[2 * q] = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
    c[2 * q + 1] = _mm256_castsi256_ps(_mm256_and_si256(v, high));
  }
}

// Panel [kc][8] f32 of W rows w (row stride K; `rows` <= 8 of them, the others zero) over kc values of k.
// ahead: the same chunk of the rows kPrefetchPanels panels on (prefetched, 8 rows of kc values), or null.
template <typename E>
GRPO_AVX2 void pack_panel(float* dst, const E* w, int64_t K, int64_t rows, int64_t kc, const E* ahead,
                          int64_t ahead_rows) {
  int64_t k = 0;
  if (rows == kPanel) {
    // the rows ahead as one sweep, row after row: sizeof(E) lines of 64 bytes per step of 8 k (as many
    // bytes as the step reads)
    const int64_t row_bytes = kc * static_cast<int64_t>(sizeof(E));
    int64_t row = 0, at = 0;  // the next line to prefetch: row `row` of ahead, byte `at`
    for (; k + 8 <= kc; k += 8) {
      __m256 r[8];
      columns8(r, w + k, K);
#pragma GCC unroll 4
      for (size_t j = 0; j < sizeof(E) && row < ahead_rows; ++j) {
        _mm_prefetch(reinterpret_cast<const char*>(ahead + row * K) + at, _MM_HINT_T0);
        if ((at += 64) >= row_bytes) at = 0, ++row;
      }
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) _mm256_store_ps(dst + (k + j) * kPanel, r[j]);
    }
  }
  for (; k < kc; ++k)
    for (int64_t i = 0; i < kPanel; ++i) dst[k * kPanel + i] = i < rows ? widen(w[i * K + k]) : 0.0f;
}

// Rows b .. b+mr of bf16 x (stride K), values k0 .. k0+kc, widened to f32 into xf [mr, kc].
GRPO_AVX2 void widen_x(float* xf, const bf16_t* xb, int64_t mr, int64_t K, int64_t kc) {
  for (int64_t m = 0; m < mr; ++m) {
    int64_t k = 0;
    for (; k + 8 <= kc; k += 8) _mm256_storeu_ps(xf + m * kc + k, cpu::load_bf16x8(xb + m * K + k));
    for (; k < kc; ++k) xf[m * kc + k] = bf16_to_f32(xb[m * K + k]);
  }
}

// Weight rows n0 .. n1 against every batch row. x: f32 [B, K] for f32 W, bf16 (rounded) for bf16 W.
template <typename E>
void block(float* y, const void* x, const E* W, int64_t B, int64_t n0, int64_t n1, int64_t N, int64_t K) {
  alignas(32) float wp[kBlockRows * kChunk];  // the chunk's panels
  alignas(32) float xf[kMaxMR * kChunk];      // bf16 W: a tile's x widened
  const int64_t rows = n1 - n0, panels = (rows + kPanel - 1) / kPanel;
  for (int64_t k0 = 0; k0 < K; k0 += kChunk) {
    const int64_t kc = std::min(kChunk, K - k0);
    for (int64_t p = 0; p < panels; ++p) {
      // the panel kPrefetchPanels on in packing order: this chunk's, else the next chunk's (same rows)
      int64_t q = p + kPrefetchPanels, qk = k0;
      if (q >= panels) q -= panels, qk += kChunk;
      const bool has_ahead = q < panels && qk < K;
      const int64_t ahead_rows = has_ahead ? std::min<int64_t>(kPanel, rows - q * kPanel) : 0;
      pack_panel(wp + p * kc * kPanel, W + (n0 + p * kPanel) * K + k0, K,
                 std::min<int64_t>(kPanel, rows - p * kPanel), kc,
                 has_ahead ? W + (n0 + q * kPanel) * K + qk : nullptr, ahead_rows);
    }
    for (int64_t b = 0; b < B; b += kMaxMR) {
      const int64_t mr = std::min<int64_t>(kMaxMR, B - b);
      if constexpr (std::is_same_v<E, bf16_t>) {
        widen_x(xf, static_cast<const bf16_t*>(x) + b * K + k0, mr, K, kc);
        tile_rows(mr, y + b * N + n0, N, xf, kc, wp, kc, k0 > 0, panels, rows);
      } else {
        tile_rows(mr, y + b * N + n0, N, static_cast<const float*>(x) + b * K + k0, K, wp, kc, k0 > 0, panels, rows);
      }
    }
  }
}

// Small batches (B <= kDirectMaxB): W read straight from its rows, no packing. NP panels of 8 rows at a
// time: 8 rows x 8 values of k are transposed in registers, then go through the same fused multiply-adds
// as tile(), in the same order. x: MR rows of f32 (row stride ldx). ahead: the next group's rows
// (contiguous in W), prefetched into L2 as one linear sweep as fast as this group's are read.
template <int MR, int NP, typename E>
GRPO_AVX2 void direct(float* y, int64_t ldy, const float* x, int64_t ldx, const E* w, int64_t K, int64_t rows,
                      const E* ahead) {
  __m256 acc[MR][NP];
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p) acc[m][p] = _mm256_setzero_ps();
  const char* sweep = reinterpret_cast<const char*>(ahead);
  int64_t k = 0;
  if (rows == NP * kPanel) {
    for (; k + 8 <= K; k += 8) {
      if (sweep) {
#pragma GCC unroll 8
        for (size_t j = 0; j < NP * sizeof(E); ++j, sweep += 64) _mm_prefetch(sweep, _MM_HINT_T1);
      }
      // the row addresses are recomputed from two registers each step (GCC would otherwise keep one
      // pointer per row and spill them)
      const E* wk = w + k;
      int64_t ld = K;
      asm("" : "+r"(wk), "+r"(ld));
      const float* xk = x + k;
#pragma GCC unroll 8
      for (int p = 0; p < NP; ++p) {
        __m256 r[8];
        columns8(r, wk + p * kPanel * ld, ld);
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j)
#pragma GCC unroll 8
          for (int m = 0; m < MR; ++m) acc[m][p] = _mm256_fmadd_ps(_mm256_broadcast_ss(xk + m * ldx + j), r[j], acc[m][p]);
      }
    }
  }
  for (; k < K; k += 8) {  // the last values of k or a group of fewer rows: zero-filled 8 x 8 blocks
    const int64_t n = std::min<int64_t>(8, K - k);
    for (int p = 0; p < NP; ++p) {
      alignas(32) float t[8][8];
      for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 8; ++j)
          t[i][j] = p * kPanel + i < rows && j < n ? widen(w[(p * kPanel + i) * K + k + j]) : 0.0f;
      __m256 r[8];
      columns8(r, t[0], 8);
      for (int j = 0; j < n; ++j)
#pragma GCC unroll 8
        for (int m = 0; m < MR; ++m)
          acc[m][p] = _mm256_fmadd_ps(_mm256_broadcast_ss(x + m * ldx + k + j), r[j], acc[m][p]);
    }
  }
  alignas(32) float out[MR][NP * kPanel];
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p) _mm256_store_ps(&out[m][p * kPanel], acc[m][p]);
  for (int m = 0; m < MR; ++m)
    for (int64_t c = 0; c < std::min<int64_t>(rows, NP * kPanel); ++c) y[m * ldy + c] = out[m][c];
}

// direct<MR, NP> for B = MR batch rows (a run-time count up to kDirectMaxB).
template <int NP, int MR = kDirectMaxB, typename E>
void direct_batch(int64_t B, float* y, int64_t ldy, const float* x, int64_t ldx, const E* w, int64_t K, int64_t rows,
                  const E* ahead) {
  if constexpr (MR > 0) {
    if (B != MR) return direct_batch<NP, MR - 1>(B, y, ldy, x, ldx, w, K, rows, ahead);
    direct<MR, NP>(y, ldy, x, ldx, w, K, rows, ahead);
  }
}

// Weight rows n0 .. n1 against the B <= kDirectMaxB batch rows (x f32, row stride K) without packing, in
// groups of 8 rows, 16 for batches of one or two rows, 32 for one row of bf16 W: each group of 8 rows is one
// chain of fused multiply-adds along k, so a batch of one row needs several groups at once to hide the FMA
// latency (bf16 B=1 from L2/L3 on a Zen 5: 48 -> 60-68 GB/s of W with 4 groups instead of 2; f32 needs 8
// registers per transposed block and loses with 4).
template <typename E>
void direct_rows(int64_t B, float* y, const float* x, const E* W, int64_t n0, int64_t n1, int64_t N, int64_t K) {
  const int64_t panels = B == 1 && std::is_same_v<E, bf16_t> ? 4 : B <= 2 ? 2 : 1;
  const int64_t step = panels * kPanel;
  for (int64_t n = n0; n < n1; n += step) {
    // the next group (which may be in the next block: the thread's blocks are consecutive rows)
    const E* ahead = n + 2 * step <= N ? W + (n + step) * K : nullptr;
    const int64_t rows = std::min(step, n1 - n);
    if (panels == 4) {
      direct<1, 4>(y + n, N, x, K, W + n * K, K, rows, ahead);
    } else if (panels == 2) {
      direct_batch<2>(B, y + n, N, x, K, W + n * K, K, rows, ahead);
    } else {
      direct_batch<1>(B, y + n, N, x, K, W + n * K, K, rows, ahead);
    }
  }
}

template <typename E>
void run(float* y, const void* x, const E* W, int64_t B, int64_t N, int64_t K) {
  // blocks of at most kBlockRows rows, but at least kBlocksPerThread per thread when W is small
  const int64_t threads = num_threads();
  const int64_t by_threads = (N + kBlocksPerThread * threads - 1) / (kBlocksPerThread * threads);
  const int64_t rows_per_block =
      std::min(kBlockRows, std::max<int64_t>(kPanel, (by_threads + kPanel - 1) / kPanel * kPanel));
  const int64_t blocks = (N + rows_per_block - 1) / rows_per_block;
  const bool direct = B <= kDirectMaxB && (std::is_same_v<E, float> || K <= kDirectMaxK);
#pragma omp parallel for schedule(static) if (B * N * K > (1 << 17))
  for (int64_t i = 0; i < blocks; ++i) {
    const int64_t n0 = i * rows_per_block, n1 = std::min(N, n0 + rows_per_block);
    if (!direct) {
      block(y, x, W, B, n0, n1, N, K);
    } else if constexpr (std::is_same_v<E, bf16_t>) {
      alignas(32) float xf[kDirectMaxB * kDirectMaxK];  // x widened
      widen_x(xf, static_cast<const bf16_t*>(x), B, K, K);
      direct_rows(B, y, xf, W, n0, n1, N, K);
    } else {
      direct_rows(B, y, static_cast<const float*>(x), W, n0, n1, N, K);
    }
  }
}

}  // namespace

void gemv_avx2(float* y, const float* x, bf16_t* x_scratch, const void* W, DType w_dtype, int64_t B, int64_t N,
               int64_t K) {
  if (K == 0) return std::fill(y, y + B * N, 0.0f);
  if (w_dtype == DType::F32) return run(y, x, static_cast<const float*>(W), B, N, K);
  cpu::f32_to_bf16_avx2(x_scratch, x, B * K);
  run(y, x_scratch, static_cast<const bf16_t*>(W), B, N, K);
}

}  // namespace grpo::ops::cpu_gemv
