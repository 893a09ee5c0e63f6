// Register-blocked rows of add_low_rank_t written against the vector type V (see nn_simd.h). No include
// guard on purpose: low_rank.cpp includes this body once per instruction set, inside a namespace that
// defines V and after kLowRankTile.
//
// y[t, 0..64) += sum_j (alpha u[t, j]) vt[j, 0..64) for kRowsPerBlock rows t at a time: each row's 64
// columns stay in registers (4 AVX-512 / 8 AVX2 accumulators), and every vt row loaded serves all the rows of
// the block, so that the sums are not bound by one FMA chain per column. Per element the terms come in order
// of j, each as fma(alpha u[t, j], vt[j, i], acc): the bits of low_rank_row.

using Reg = V::reg;
constexpr int kVecs = kLowRankTile / V::W;
constexpr int kRowsPerBlock = V::W == 16 ? 4 : 1;  // AVX-512: 16 accumulators of 32 registers; AVX2: 8 of 16

template <int R>
inline void tile_rows(float* y, int64_t ldy, const float* u, int64_t ldu, const float* vt, int64_t jn, float alpha) {
  Reg acc[R][kVecs];
#pragma GCC unroll 4
  for (int m = 0; m < R; ++m)
#pragma GCC unroll 8
    for (int c = 0; c < kVecs; ++c) acc[m][c] = V::load(y + m * ldy + c * V::W);
  for (int64_t j = 0; j < jn; ++j) {
    Reg a[R];
#pragma GCC unroll 4
    for (int m = 0; m < R; ++m) a[m] = V::set1(alpha * u[m * ldu + j]);
    const float* v = vt + j * kLowRankTile;
#pragma GCC unroll 8
    for (int c = 0; c < kVecs; ++c) {
      const Reg vc = V::load(v + c * V::W);
#pragma GCC unroll 4
      for (int m = 0; m < R; ++m) acc[m][c] = V::fmadd(a[m], vc, acc[m][c]);
    }
  }
#pragma GCC unroll 4
  for (int m = 0; m < R; ++m)
#pragma GCC unroll 8
    for (int c = 0; c < kVecs; ++c) V::store(y + m * ldy + c * V::W, acc[m][c]);
}

// Rows [0, T) of one full tile of 64 columns (y and vt already offset to it).
inline void full_tile(float* y, int64_t ldy, const float* u, int64_t ldu, const float* vt, int64_t T, int64_t jn,
                      float alpha) {
  int64_t t = 0;
  for (; t + kRowsPerBlock <= T; t += kRowsPerBlock)
    tile_rows<kRowsPerBlock>(y + t * ldy, ldy, u + t * ldu, ldu, vt, jn, alpha);
  for (; t < T; ++t) tile_rows<1>(y + t * ldy, ldy, u + t * ldu, ldu, vt, jn, alpha);
}
