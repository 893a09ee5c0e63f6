// The two "tile units" the AMX kernels are written against (kernels/cpu/gemv_amx.cpp): the hardware (AMX
// tiles through TILELOADD / TDPBF16PS / TILESTORED) and a scalar emulator of the same instructions, so that
// the tiling and packing logic is written once and tested on any CPU. Both have the same interface:
//   configure()                 every tile 16 rows x 64 bytes (LDTILECFG, which also zeroes the tiles)
//   release()                   TILERELEASE (the thread's tile state back to its initial, unused state)
//   zero<T>()                   tile T = 0
//   load<T>(base, stride)       tile T row r = the 64 bytes at base + r * stride (bytes)
//   store<T>(base, stride)      the reverse
//   dot<C, A, B>()              TDPBF16PS: C [16 x 16 f32] += A [16 x 32 bf16] . B [16 pairs x 16 x 2 bf16]
// The emulator follows the Intel SDM's pseudo-code of TDPBF16PS (Vol. 2, "TDPBF16PS - Dot Product of BF16
// Tiles Accumulated into Packed Single Precision Tile") literally: for each row m and column n, the even
// and the odd products of the 16 pairs are summed in two f32 accumulators from zero, in pair order, each
// step one fused multiply-add rounded to nearest even; then dst[m][n] += (even + odd). Inputs that are
// denormal are read as zero (DAZ) and denormal results written as zero (FTZ); MXCSR plays no part. Whether
// the silicon sums in exactly this order is checked where it exists (the kernel's self-check, and the test
// of hardware against emulator bit for bit).
// The hardware unit uses inline assembly for the instructions that name a tile: GCC's _tile_loadd /
// _tile_dpbf16ps / _tile_stored macros paste their tile argument as text, so they cannot take a template
// parameter; the "n" constraints below print the same tile number into the same instruction.
// LDTILECFG and TILERELEASE are the compiler's intrinsics, under target("amx-tile").
#pragma once
#include <immintrin.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/dtype.h"

namespace grpo::ops::cpu_tiles {

constexpr int kTileRows = 16;      // rows of every tile as configured
constexpr int kTileRowBytes = 64;  // bytes per row
constexpr int kTilePairs = 16;     // bf16 pairs per row of A = rows of B
constexpr int kTileK = 32;         // bf16 of the reduction per TDPBF16PS
constexpr int kTileCols = 16;      // f32 columns of C = bf16 pairs per row of B

// LDTILECFG's 64-byte operand (palette 1).
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

// Tiles 0..7 all 16 rows x 64 bytes.
inline TileConfig uniform_tile_config() {
  TileConfig c;
  for (int t = 0; t < 8; ++t) {
    c.colsb[t] = kTileRowBytes;
    c.rows[t] = kTileRows;
  }
  return c;
}

#define GRPO_AMX_TILE [[gnu::target("amx-tile")]]

GRPO_AMX_TILE inline void load_tile_config(const TileConfig& c) { _tile_loadconfig(&c); }
GRPO_AMX_TILE inline void release_tiles() { _tile_release(); }

// The AMX unit of this core. Only where the ISA decision is amx (the CPU has it and Linux granted the tile
// state), else the first instruction raises SIGILL.
struct HardwareTiles {
  void configure() {
    static const TileConfig config = uniform_tile_config();
    load_tile_config(config);
  }
  void release() { release_tiles(); }
  template <int T>
  void zero() {
    asm volatile("tilezero %%tmm%c0" ::"n"(T));
  }
  template <int T>
  void load(const void* base, int64_t stride) {
    asm volatile("tileloadd (%0,%1,1), %%tmm%c2" ::"r"(base), "r"(stride), "n"(T) : "memory");
  }
  template <int T>
  void store(void* base, int64_t stride) {
    asm volatile("tilestored %%tmm%c2, (%0,%1,1)" ::"r"(base), "r"(stride), "n"(T) : "memory");
  }
  template <int C, int A, int B>
  void dot() {
    asm volatile("tdpbf16ps %%tmm%c2, %%tmm%c1, %%tmm%c0" ::"n"(C), "n"(A), "n"(B));
  }
};

// f32 helpers of the emulator: DAZ on inputs, FTZ on results (keeping the sign), as TDPBF16PS does.
[[gnu::always_inline]] inline float flush_denormal(float v) { return std::fabs(v) < FLT_MIN ? std::copysign(0.0f, v) : v; }
inline float bf16_daz(bf16_t h) { return flush_denormal(bf16_to_f32(h)); }

// dst [16][16] f32 += a [16][32] bf16 . b [16][16][2] bf16, in the SDM's order (see the top of this file).
// Compiled for AVX2 + FMA (which every level has: the ISA decision refuses a CPU without them), so that the
// 32 accumulators of a row are vector fused multiply-adds: the same single roundings as one fmaf each, and
// fast enough for the tests to run the real decoder on it.
[[gnu::target("avx2,fma")]] inline void emulate_tdpbf16ps(float (&dst)[kTileRows][kTileCols],
                                                          const bf16_t (&a)[kTileRows][kTileK],
                                                          const bf16_t (&b)[kTilePairs][2 * kTileCols]) {
  float af[kTileRows][kTileK], bf[kTilePairs][2 * kTileCols];
  for (int m = 0; m < kTileRows; ++m)
    for (int i = 0; i < kTileK; ++i) af[m][i] = bf16_daz(a[m][i]);
  for (int k = 0; k < kTilePairs; ++k)
    for (int i = 0; i < 2 * kTileCols; ++i) bf[k][i] = bf16_daz(b[k][i]);
  for (int m = 0; m < kTileRows; ++m) {
    float temp[2 * kTileCols] = {};  // [2n + 0]: the even products of column n, [2n + 1]: the odd ones
    for (int k = 0; k < kTilePairs; ++k) {
      float ap[2 * kTileCols];  // the pair (a[m][2k], a[m][2k + 1]) against every column
      for (int i = 0; i < 2 * kTileCols; ++i) ap[i] = af[m][2 * k + (i & 1)];
      for (int i = 0; i < 2 * kTileCols; ++i) temp[i] = flush_denormal(std::fma(ap[i], bf[k][i], temp[i]));
    }
    for (int n = 0; n < kTileCols; ++n) {
      const float pair_sum = flush_denormal(temp[2 * n] + temp[2 * n + 1]);
      dst[m][n] = flush_denormal(flush_denormal(dst[m][n]) + pair_sum);
    }
  }
}

// The scalar emulator: eight 1 KiB tiles in memory.
struct EmulatedTiles {
  alignas(64) uint8_t tile[8][kTileRows][kTileRowBytes];

  void configure() { std::memset(tile, 0, sizeof tile); }
  void release() { std::memset(tile, 0, sizeof tile); }
  template <int T>
  void zero() {
    std::memset(tile[T], 0, sizeof tile[T]);
  }
  template <int T>
  void load(const void* base, int64_t stride) {
    for (int r = 0; r < kTileRows; ++r)
      std::memcpy(tile[T][r], static_cast<const uint8_t*>(base) + r * stride, kTileRowBytes);
  }
  template <int T>
  void store(void* base, int64_t stride) const {
    for (int r = 0; r < kTileRows; ++r)
      std::memcpy(static_cast<uint8_t*>(base) + r * stride, tile[T][r], kTileRowBytes);
  }
  template <int C, int A, int B>
  void dot() {
    float c[kTileRows][kTileCols];
    bf16_t a[kTileRows][kTileK], b[kTilePairs][2 * kTileCols];
    std::memcpy(c, tile[C], sizeof c);
    std::memcpy(a, tile[A], sizeof a);
    std::memcpy(b, tile[B], sizeof b);
    emulate_tdpbf16ps(c, a, b);
    std::memcpy(tile[C], c, sizeof c);
  }
};

}  // namespace grpo::ops::cpu_tiles
