// Small-batch matmul for decode: y [B,N] = x [B,K] . W[N,K]^T with W f32 or bf16: the AVX-512 body (below)
// and the dispatch to it, to the AVX2 body (gemv_avx2.cpp) or, for bf16 weights at the amx level, to the
// AMX tiles (gemv_amx.cpp) at every batch size once their self-check has passed. AVX-512: each thread takes tiles
// of 4 weight rows and runs every batch row against them, 4 batch rows at a time (4 x 4 register tiles of
// 16-lane accumulators) and the rest one by one, so W is read from memory once per call (the first batch
// tile prefetches the W tiles that follow, so that memory streams while the rest of the batch computes;
// a large batch goes in blocks whose x fits L2). bf16 weights: x
// is converted to bf16 once (as in ops::gemm's bf16 path, into x_scratch) and pairs are multiplied with
// avx512_bf16 dot products when the CPU has them, else W is widened to f32 in registers. Every y[b,n] is
// accumulated the same way (lane partial sums over k in order, masked tail, fixed reduction tree) whatever
// B, the tile it falls in and the thread count. decode_matmul uses gemv at every batch size
// (batch-invariant rollouts) or up to the measured crossover.
#include <immintrin.h>

#include <algorithm>

#include "core/error.h"
#include "core/profiler.h"
#include "core/threads.h"
#include "kernels/backend.h"
#include "kernels/cpu/gemv_amx.h"
#include "kernels/cpu/gemv_kernels.h"
#include "kernels/cpu/lane_sums.h"
#include "kernels/ops.h"
#include "kernels/paged_ops.h"

namespace grpo::ops {

namespace {

using cpu::reduce16;
using cpu::reduce4x16;

constexpr int kRowTile = 4;    // weight rows per register tile
constexpr int kOneRowTile = 16;  // ... for a batch of one row (from DRAM: 1.15x the speed of 4 on a Zen 5)
constexpr int kBatchTile = 4;  // batch rows per wide register tile (4 x 4 accumulators)
constexpr int kPrefetchTiles = 2;  // how many tiles ahead a batch's first tile prefetches W (from DRAM)

#define GRPO_AVX512 [[gnu::target("avx512f,avx512bw,avx512vl,avx512dq")]]
#define GRPO_AVX512_BF16 [[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")]]

// How W is read: f32; bf16 widened to f32 (x rounded to bf16 first); bf16 pairs with avx512_bf16 dot products.
enum class Kind { F32, Bf16Widen, Bf16Dot };

// y[0..NR) = the lane sums of acc[0..NR): four at a time when NR is a multiple of 4.
template <int NR>
GRPO_AVX512 [[gnu::always_inline]] inline void store_sums(float* y, const __m512 (&acc)[NR]) {
  if constexpr (NR % 4 == 0) {
#pragma GCC unroll 16
    for (int r = 0; r < NR; r += 4) _mm_storeu_ps(y + r, reduce4x16(acc[r], acc[r + 1], acc[r + 2], acc[r + 3]));
  } else {
#pragma GCC unroll 16
    for (int r = 0; r < NR; ++r) y[r] = reduce16(acc[r]);
  }
}

GRPO_AVX512 [[gnu::always_inline]] inline __m512 widen_bf16(__m256i h) {
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xffff, _mm512_maskz_cvtepu16_epi32(0xffff, h), 16));
}

// x rounded to bf16 and back (round to nearest even), 16 lanes.
GRPO_AVX512 [[gnu::always_inline]] inline __m512 round_bf16(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_maskz_and_epi32(0xffff, _mm512_maskz_srli_epi32(0xffff, u, 16), _mm512_set1_epi32(1));
  const __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb));
  return _mm512_castsi512_ps(_mm512_maskz_and_epi32(0xffff, r, _mm512_set1_epi32(int(0xffff0000u))));
}

// One k step of 16 with W in bf16 widened to f32 and x rounded to bf16 (CPUs without avx512_bf16).
template <int NR>
GRPO_AVX512 [[gnu::always_inline]] inline void step_widen(__m512 (&acc)[NR], const float* x, const bf16_t* W,
                                                          int64_t b, int64_t n0, int64_t K, int64_t k,
                                                          __mmask16 mask) {
  __m512 w[NR];
  for (int r = 0; r < NR; ++r) w[r] = widen_bf16(_mm256_maskz_loadu_epi16(mask, W + (n0 + r) * K + k));
  const __m512 xv = round_bf16(_mm512_maskz_loadu_ps(mask, x + b * K + k));
  for (int r = 0; r < NR; ++r) acc[r] = _mm512_fmadd_ps(xv, w[r], acc[r]);
}

// y[b, n0..n0+NR] for Kind::Bf16Widen, one batch row at a time.
template <int NR>
GRPO_AVX512 void tile_widen(float* y, const float* x, const bf16_t* W, int64_t b, int64_t n0, int64_t N, int64_t K) {
  __m512 acc[NR];
  for (int r = 0; r < NR; ++r) acc[r] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) step_widen<NR>(acc, x, W, b, n0, K, k, 0xffff);
  if (k < K) step_widen<NR>(acc, x, W, b, n0, K, k, static_cast<__mmask16>((1u << (K - k)) - 1));
  store_sums<NR>(y + b * N + n0, acc);
}

// y[b0 .. b0+MR, n0 .. n0+NR] from x already in bf16 (xb [B, K], see convert_x_bf16) with avx512_bf16
// dot products (pairs of bf16 products summed into f32 lanes). W's NR rows are loaded once per k step for
// MR batch rows; every element is summed the same way whatever MR.
template <int MR, int NR, bool kPrefetch>
GRPO_AVX512_BF16 void wide_tile_dot(float* y, const bf16_t* xb, const bf16_t* W, int64_t b0, int64_t n0, int64_t N,
                                    int64_t K) {
  __m512 acc[MR][NR];
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 16
    for (int r = 0; r < NR; ++r) acc[m][r] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; k += 32) {
    const __mmask32 mask = k + 32 <= K ? 0xffffffffu : static_cast<__mmask32>((1ull << (K - k)) - 1);
    __m512bh w[NR];
#pragma GCC unroll 16
    for (int r = 0; r < NR; ++r) {
      w[r] = (__m512bh)_mm512_maskz_loadu_epi16(mask, W + (n0 + r) * K + k);
      if constexpr (kPrefetch)  // W is read from memory once per call: stream the next tiles in while this one computes
        _mm_prefetch(reinterpret_cast<const char*>(W + (n0 + r + kPrefetchTiles * NR) * K + k), _MM_HINT_T0);
    }
#pragma GCC unroll 16
    for (int m = 0; m < MR; ++m) {
      const __m512bh xv = (__m512bh)_mm512_maskz_loadu_epi16(mask, xb + (b0 + m) * K + k);
#pragma GCC unroll 16
      for (int r = 0; r < NR; ++r) acc[m][r] = _mm512_dpbf16_ps(acc[m][r], xv, w[r]);
    }
  }
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m) store_sums<NR>(y + (b0 + m) * N + n0, acc[m]);
}

// The f32 version: MR x NR 16-lane FMA accumulators, k in order, masked tail.
template <int MR, int NR, bool kPrefetch>
GRPO_AVX512 void wide_tile_fma(float* y, const float* x, const float* W, int64_t b0, int64_t n0, int64_t N, int64_t K) {
  __m512 acc[MR][NR];
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 16
    for (int r = 0; r < NR; ++r) acc[m][r] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; k += 16) {
    const __mmask16 mask = k + 16 <= K ? 0xffff : static_cast<__mmask16>((1u << (K - k)) - 1);
    __m512 w[NR];
#pragma GCC unroll 16
    for (int r = 0; r < NR; ++r) {
      w[r] = _mm512_maskz_loadu_ps(mask, W + (n0 + r) * K + k);
      if constexpr (kPrefetch)  // as wide_tile_dot: one 64-byte line of each row a step, kPrefetchTiles ahead
        _mm_prefetch(reinterpret_cast<const char*>(W + (n0 + r + kPrefetchTiles * NR) * K + k), _MM_HINT_T0);
    }
#pragma GCC unroll 16
    for (int m = 0; m < MR; ++m) {
      const __m512 xv = _mm512_maskz_loadu_ps(mask, x + (b0 + m) * K + k);
#pragma GCC unroll 16
      for (int r = 0; r < NR; ++r) acc[m][r] = _mm512_fmadd_ps(xv, w[r], acc[m][r]);
    }
  }
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m) store_sums<NR>(y + (b0 + m) * N + n0, acc[m]);
}

// x [B, K] f32 -> bf16 (pairs of 16 lanes, round to nearest even).
GRPO_AVX512_BF16 void convert_x_bf16(bf16_t* xb, const float* x, int64_t B, int64_t K) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t k = 0; k < K; k += 32) {
      const __mmask32 mask = k + 32 <= K ? 0xffffffffu : static_cast<__mmask32>((1ull << (K - k)) - 1);
      const __mmask16 mlo = static_cast<__mmask16>(mask), mhi = static_cast<__mmask16>(mask >> 16);
      const float* xr = x + b * K + k;
      const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(mhi, xr + 16), _mm512_maskz_loadu_ps(mlo, xr));
      _mm512_mask_storeu_epi16(xb + b * K + k, mask, (__m512i)v);
    }
}

// wide_tile_fma (f32 W) or wide_tile_dot (bf16 W, x in bf16 as xb).
template <Kind kKind, int MR, int NR, bool kPrefetch>
[[gnu::always_inline]] inline void wide_tile(float* y, const float* x, const bf16_t* xb, const void* W, int64_t b,
                                             int64_t n0, int64_t N, int64_t K) {
  if constexpr (kKind == Kind::F32)
    wide_tile_fma<MR, NR, kPrefetch>(y, x, static_cast<const float*>(W), b, n0, N, K);
  else
    wide_tile_dot<MR, NR, kPrefetch>(y, xb, static_cast<const bf16_t*>(W), b, n0, N, K);
}

// Batch rows [b0, b1) against weight rows n0 .. n0+NR (the W tile stays in L1 while x streams): kBatchTile
// rows at a time through the wide tiles, the rest one by one. The first tile of the range also prefetches
// the W tiles that follow, so that W streams in from memory while the rest of the batch computes.
template <int NR, Kind kKind>
void rows(float* y, const float* x, const bf16_t* xb, const void* W, int64_t b0, int64_t b1, int64_t n0, int64_t N,
          int64_t K) {
  if constexpr (kKind == Kind::Bf16Widen) {
    for (int64_t b = b0; b < b1; ++b) tile_widen<NR>(y, x, static_cast<const bf16_t*>(W), b, n0, N, K);
  } else {
    if (b0 >= b1) return;
    int64_t b = b0;
    if (b1 - b0 >= kBatchTile) {
      wide_tile<kKind, kBatchTile, NR, true>(y, x, xb, W, b, n0, N, K);
      b += kBatchTile;
    } else {
      wide_tile<kKind, 1, NR, true>(y, x, xb, W, b++, n0, N, K);
    }
    for (; b + kBatchTile <= b1; b += kBatchTile) wide_tile<kKind, kBatchTile, NR, false>(y, x, xb, W, b, n0, N, K);
    for (; b < b1; ++b) wide_tile<kKind, 1, NR, false>(y, x, xb, W, b, n0, N, K);
  }
}

// Batch rows per block: as many as keep the block's x (bf16 or f32 rows of K) within kBlockXBytes of L2, in
// whole wide tiles, so that a large batch (a prefill chunk) reads x from L2 for every W tile instead of
// from L3. The blocking only decides which rows share a pass over W: every y[b, n] is summed the same way.
constexpr int64_t kBlockXBytes = 256 << 10;
int64_t batch_block(Kind kind, int64_t B, int64_t K) {
  const int64_t row_bytes = K * (kind == Kind::Bf16Dot ? 2 : 4);
  const int64_t rows =
      std::max<int64_t>(kBatchTile, kBlockXBytes / std::max<int64_t>(row_bytes, 1) / kBatchTile * kBatchTile);
  return std::min(B, rows);
}

// Every batch row against W, threads sharing out tiles of NR weight rows (the last N % NR rows one by one).
template <int NR, Kind kKind>
void tiles_of(float* y, const float* x, const bf16_t* xb, const void* W, int64_t B, int64_t N, int64_t K) {
  const int64_t full = N / NR, block = batch_block(kKind, B, K);
  for (int64_t b0 = 0; b0 < B; b0 += block) {
    const int64_t b1 = std::min(B, b0 + block);
    parallel_for(full + 1, (b1 - b0) * N * K > (1 << 17), [&](int64_t i) {
      if (i < full) {
        rows<NR, kKind>(y, x, xb, W, b0, b1, i * NR, N, K);
      } else {
        for (int64_t n = full * NR; n < N; ++n) rows<1, kKind>(y, x, xb, W, b0, b1, n, N, K);
      }
    });
  }
}

template <Kind kKind>
void gemv_avx512(float* y, const float* x, bf16_t* x_scratch, const void* W, int64_t B, int64_t N, int64_t K) {
  if constexpr (kKind == Kind::Bf16Dot) convert_x_bf16(x_scratch, x, B, K);
  if (B == 1) return tiles_of<kOneRowTile, kKind>(y, x, x_scratch, W, B, N, K);
  tiles_of<kRowTile, kKind>(y, x, x_scratch, W, B, N, K);
}

}  // namespace

namespace cpu_gemv {

void gemv_vector(float* y, const float* x, bf16_t* x_scratch, const void* W, DType w_dtype, int64_t B, int64_t N,
                 int64_t K) {
  if (!cpu_has_avx512()) return gemv_avx2(y, x, x_scratch, W, w_dtype, B, N, K);
  if (w_dtype == DType::F32) return gemv_avx512<Kind::F32>(y, x, nullptr, W, B, N, K);
  if (cpu_has_avx512_bf16()) return gemv_avx512<Kind::Bf16Dot>(y, x, x_scratch, W, B, N, K);
  gemv_avx512<Kind::Bf16Widen>(y, x, nullptr, W, B, N, K);
}

}  // namespace cpu_gemv

namespace {

bool tiles_for(DType w_dtype) {
  return w_dtype == DType::BF16 && cpu_has_amx() && cpu_tiles::tile_self_check().passed;
}

const char* gemv_kernel_name(DType w_dtype) {
  if (w_dtype == DType::BF16 && cpu_tiles::emulated_tiles_for_tests()) return "amx_tiles_emulated";
  if (tiles_for(w_dtype)) return "amx_tiles";
  if (!cpu_has_avx512()) return w_dtype == DType::BF16 ? "avx2_bf16_split" : "avx2_f32";
  if (w_dtype == DType::F32) return "avx512_f32";
  return cpu_has_avx512_bf16() ? "avx512_bf16_dot" : "avx512_bf16_widened";
}

}  // namespace

void gemv(float* y, const float* x, const void* W, DType w_dtype, int64_t B, int64_t N, int64_t K,
          bf16_t* x_scratch) {
  GRPO_PROFILE("gemv");
  GRPO_CHECK(w_dtype == DType::F32 || w_dtype == DType::BF16, "[gemv] W must be f32 or bf16, got ",
             dtype_name(w_dtype));
  GRPO_CHECK(B >= 0 && N >= 0 && K >= 0, "[gemv] negative size B=", B, " N=", N, " K=", K);
  if (B == 0 || N == 0) return;
  GRPO_CHECK(w_dtype == DType::F32 || x_scratch,
             "[gemv] bf16 weights need an x_scratch buffer of gemv_x_scratch_elems(B, K) values");
  const bf16_t* Wb = static_cast<const bf16_t*>(W);
  if (w_dtype == DType::BF16 && cpu_tiles::emulated_tiles_for_tests())
    return cpu_tiles::gemv_tiles_emulated(y, x, x_scratch, Wb, B, N, K);
  if (tiles_for(w_dtype)) return cpu_tiles::gemv_tiles_hardware(y, x, x_scratch, Wb, B, N, K);
  cpu_gemv::gemv_vector(y, x, x_scratch, W, w_dtype, B, N, K);
}

const char* decode_matmul_kernel(DType w_dtype, int64_t B, DecodeMatmul how) {
  if (how == DecodeMatmul::BatchInvariant || (how == DecodeMatmul::Fastest && B <= gemv_max_batch(w_dtype)))
    return gemv_kernel_name(w_dtype);
  return w_dtype == DType::BF16 ? "onednn_bf16" : "onednn_f32";
}

int64_t gemv_x_scratch_elems(int64_t B, int64_t K) { return cpu_tiles::staged_x_elems(B, K); }

int64_t gemv_max_batch(DType w_dtype) {
  if (!cpu_has_avx512()) return kGemvMaxBatchAvx2;
  return w_dtype == DType::BF16 ? kGemvMaxBatchBf16Avx512 : kGemvMaxBatchF32Avx512;
}

DecodeMatmul parse_decode_matmul(const std::string& name) {
  if (auto how = kDecodeMatmulNames.find(name)) return *how;
  fail("[decode_matmul] unknown kind \"", name, "\": expected ", kDecodeMatmulNames.listing());
}

// The table's names are literals: data() ends with a NUL.
const char* decode_matmul_name(DecodeMatmul how) { return kDecodeMatmulNames.name(how).data(); }

void decode_matmul(float* y, const float* x, bf16_t* x_bf16, const void* W, DType w_dtype, int64_t B, int64_t N,
                   int64_t K, DecodeMatmul how) {
  GRPO_CHECK(w_dtype == DType::F32 || x_bf16, "[decode_matmul] bf16 weights need an x_bf16 buffer");
  if (how == DecodeMatmul::BatchInvariant || (how == DecodeMatmul::Fastest && B <= gemv_max_batch(w_dtype)))
    return gemv(y, x, W, w_dtype, B, N, K, x_bf16);
  if (w_dtype == DType::F32) return gemm(Trans::N, Trans::T, B, N, K, 1.0f, x, K, W, K, 0.0f, y, N, DType::F32);
  f32_to_bf16(x_bf16, x, B * K);
  gemm(Trans::N, Trans::T, B, N, K, 1.0f, x_bf16, K, W, K, 0.0f, y, N, DType::BF16);
}

}  // namespace grpo::ops
