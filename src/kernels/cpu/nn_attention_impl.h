// Flash-attention tile kernels written against the vector type V (see nn_simd.h). No include guard on
// purpose: attention.cpp includes this body once per instruction set, inside a namespace that defines V.
//
// Scores are kept in the log2 domain: queries are pre-scaled by scale * log2(e), so p = exp2(s - m).
// Tiles are kBlock queries x kBlock keys, both aligned to the start of the sequence, so only the diagonal
// tile needs the causal mask (a.causal); without it every query sees every key of its sequence, and only the
// keys past the end of the last tile are masked. Head dims are padded to Dp (a multiple of 64 = 4 vectors of
// either width); keys (and values, for the backward) are read from the transposed copies a.kt / a.vt [K, D, Tp].

using Reg = V::reg;

// C[r, 0:cols] (=, or += with kAccumulate) sum_k A(r, k) B[k, 0:cols] for r < R, k in [k_begin, k_end),
// where A(r, k) is A[r * a_rs + k * a_ks] (a_rs = lda, a_ks = 1 for a row-major A; a_rs = 1, a_ks = lda for
// its transpose). B [kdim, cols] with row stride ldb; C with row stride ldc; cols % (4 W) == 0.
template <int R, bool kAccumulate>
inline void gemm_rows(float* C, int64_t ldc, const float* A, int64_t a_rs, int64_t a_ks, const float* B,
                      int64_t ldb, int64_t k_begin, int64_t k_end) {
  Reg acc[R][4];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) acc[r][c] = kAccumulate ? V::load(C + r * ldc + c * V::W) : V::zero();
  for (int64_t k = k_begin; k < k_end; ++k) {
    const float* b = B + k * ldb;
    const Reg b0 = V::load(b), b1 = V::load(b + V::W), b2 = V::load(b + 2 * V::W), b3 = V::load(b + 3 * V::W);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const Reg a = V::set1(A[r * a_rs + k * a_ks]);
      acc[r][0] = V::fmadd(a, b0, acc[r][0]);
      acc[r][1] = V::fmadd(a, b1, acc[r][1]);
      acc[r][2] = V::fmadd(a, b2, acc[r][2]);
      acc[r][3] = V::fmadd(a, b3, acc[r][3]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) V::store(C + r * ldc + c * V::W, acc[r][c]);
}

// Which k a row needs when A is zero outside a triangle (the causal diagonal tile): all of [0, kdim), only
// k <= row (kLower: P or dS times keys/values) or only k >= row (kUpper: P^T or dS^T times queries/dO).
// Skipping the zero terms does not change a single bit of the sums.
enum class Tri { kFull, kLower, kUpper };

template <bool kAccumulate, Tri kTri = Tri::kFull>
inline void gemm_tile(float* C, int64_t ldc, const float* A, int64_t a_rs, int64_t a_ks, const float* B,
                      int64_t ldb, int64_t rows, int64_t cols, int64_t kdim) {
  auto k_range = [kdim](int64_t r0, int64_t n_rows, int64_t* k_begin, int64_t* k_end) {
    *k_begin = kTri == Tri::kUpper ? std::min(r0, kdim) : 0;
    *k_end = kTri == Tri::kLower ? std::min(kdim, r0 + n_rows) : kdim;
  };
  for (int64_t c0 = 0; c0 < cols; c0 += 4 * V::W) {
    int64_t r = 0, kb, ke;
    for (; r + V::kRows <= rows; r += V::kRows) {
      k_range(r, V::kRows, &kb, &ke);
      gemm_rows<V::kRows, kAccumulate>(C + r * ldc + c0, ldc, A + r * a_rs, a_rs, a_ks, B + c0, ldb, kb, ke);
    }
    for (; r < rows; ++r) {
      k_range(r, 1, &kb, &ke);
      gemm_rows<1, kAccumulate>(C + r * ldc + c0, ldc, A + r * a_rs, a_rs, a_ks, B + c0, ldb, kb, ke);
    }
  }
}

// dst [rows, Dp] = src rows (stride ld) times mul, columns D..Dp zeroed.
inline void load_rows_padded(float* dst, const float* src, int64_t ld, int64_t rows, int64_t D, int64_t Dp,
                             float mul) {
  const Reg m = V::set1(mul);
  for (int64_t r = 0; r < rows; ++r) {
    const float* s = src + r * ld;
    float* d = dst + r * Dp;
    for (int64_t c = 0; c < Dp; c += V::W) {
      const int64_t n = c >= D ? 0 : (D - c < V::W ? D - c : V::W);
      V::store(d + c, V::mul(V::load_n(s + c, n), m));
    }
  }
}

// One row of scores [kBlock] (masked entries already -inf, at least one finite) folded into the running
// max m and sum l, in place: row = exp2(row - m_new); returns alpha = exp2(m_old - m_new).
inline float softmax_row_update(float* row, float* m, float* l) {
  Reg mx = V::load(row);
  for (int64_t j = V::W; j < kBlock; j += V::W) mx = V::max(mx, V::load(row + j));
  const float m_new = std::max(*m, V::reduce_max(mx));
  const float alpha = std::exp2(*m - m_new);  // 0 on the first tile (m = -inf)
  const Reg mv = V::set1(m_new);
  Reg sum = V::zero();
  for (int64_t j = 0; j < kBlock; j += V::W) {
    const Reg e = V::exp2(V::sub(V::load(row + j), mv));
    V::store(row + j, e);
    sum = V::add(sum, e);
  }
  *l = *l * alpha + V::reduce_add(sum);
  *m = m_new;
  return alpha;
}

// Number of keys of tile kb (nk of them) visible to row r of tile qb; tiles share the sequence origin.
inline int64_t visible_keys(bool causal, int64_t qb, int64_t kb, int64_t r, int64_t nk) {
  return !causal || kb < qb ? nk : r + 1;
}

// Forward of query tile qb of head h in sequence [start, start + len): o and lse rows of that tile.
inline void forward_tile(const AttnArgs& a, const AttnScratch& w, int64_t start, int64_t len, int64_t h,
                         int64_t qb) {
  const int64_t H = a.H, K = a.K, D = a.D, Dp = a.Dp, kvh = h / (H / K);
  const int64_t q0 = start + qb * kBlock, nq = std::min(kBlock, start + len - q0);
  load_rows_padded(w.qs, a.q + (q0 * H + h) * D, H * D, nq, D, Dp, a.scale * kNnLog2e);  // [nq, Dp]
  for (int64_t r = 0; r < nq; ++r) {
    w.m[r] = -INFINITY;
    w.l[r] = 0.0f;
  }
  std::fill(w.acc, w.acc + nq * Dp, 0.0f);  // [nq, Dp] unnormalised output
  const int64_t last_kb = a.causal ? qb : (len - 1) / kBlock;
  for (int64_t kb = 0; kb <= last_kb; ++kb) {
    const int64_t k0 = start + kb * kBlock, nk = std::min(kBlock, start + len - k0);
    const float* kt = a.kt + kvh * D * a.Tp + k0;  // [D, kBlock] with row stride Tp
    const float* vrows = a.v + (k0 * K + kvh) * D;  // [nk, D] with stride K*D
    const float* vp = vrows;                        // values with a Dp-wide row: in place or padded copy
    int64_t ldv = K * D;
    if (D != Dp) {
      load_rows_padded(w.kp, vrows, K * D, nk, D, Dp, 1.0f);  // [nk, Dp]
      vp = w.kp;
      ldv = Dp;
    }
    gemm_tile<false>(w.s, kBlock, w.qs, Dp, 1, kt, a.Tp, nq, kBlock, D);  // [nq, kBlock] scores
    for (int64_t r = 0; r < nq; ++r) {
      float* srow = w.s + r * kBlock;
      for (int64_t j = visible_keys(a.causal, qb, kb, r, nk); j < kBlock; ++j) srow[j] = -INFINITY;
      const float alpha = softmax_row_update(srow, &w.m[r], &w.l[r]);
      if (alpha != 1.0f) {  // the running max moved: rescale the accumulated output row
        float* orow = w.acc + r * Dp;
        const Reg av = V::set1(alpha);
        for (int64_t c = 0; c < Dp; c += V::W) V::store(orow + c, V::mul(V::load(orow + c), av));
      }
    }
    if (kb < qb || !a.causal)
      gemm_tile<true>(w.acc, Dp, w.s, kBlock, 1, vp, ldv, nq, Dp, nk);  // acc += P V
    else
      gemm_tile<true, Tri::kLower>(w.acc, Dp, w.s, kBlock, 1, vp, ldv, nq, Dp, nk);
  }
  for (int64_t r = 0; r < nq; ++r) {
    const int64_t row = (q0 + r) * H + h;
    const float inv_l = 1.0f / w.l[r];
    for (int64_t d = 0; d < D; ++d) a.o[row * D + d] = w.acc[r * Dp + d] * inv_l;
    a.lse[row] = (w.m[r] + std::log2(w.l[r])) * kNnLn2;
  }
}

// Backward of kv head kvh over the whole sequence [start, start + len): for each key tile, every later
// query tile (every query tile when not causal) of every query head of the group. dk, dv rows of this (sequence, kv head) are written once;
// the dq rows of the group's heads (dq_rows, row stride ld_dq) are accumulated only by this task.
inline void backward_sequence(const AttnArgs& a, const AttnScratch& w, int64_t start, int64_t len, int64_t kvh,
                              float* dq_rows, int64_t ld_dq) {
  const int64_t H = a.H, K = a.K, D = a.D, Dp = a.Dp, G = H / K;
  const int64_t blocks = (len + kBlock - 1) / kBlock;
  for (int64_t kb = 0; kb < blocks; ++kb) {
    const int64_t k0 = start + kb * kBlock, nk = std::min(kBlock, start + len - k0);
    const float* kt = a.kt + kvh * D * a.Tp + k0;  // [D, kBlock] with row stride Tp
    const float* vt = a.vt + kvh * D * a.Tp + k0;
    const float* krows = a.k + (k0 * K + kvh) * D;  // [nk, D] with stride K*D
    const float* kp = krows;                        // keys with a Dp-wide row: in place or padded copy
    int64_t ldk = K * D;
    if (D != Dp) {
      load_rows_padded(w.kp, krows, K * D, nk, D, Dp, 1.0f);  // [nk, Dp]
      kp = w.kp;
      ldk = Dp;
    }
    std::fill(w.dk, w.dk + kBlock * Dp, 0.0f);              // [kBlock, Dp]
    std::fill(w.dv, w.dv + kBlock * Dp, 0.0f);              // [kBlock, Dp]
    for (int64_t qb = a.causal ? kb : 0; qb < blocks; ++qb) {
      const int64_t q0 = start + qb * kBlock, nq = std::min(kBlock, start + len - q0);
      for (int64_t g = 0; g < G; ++g) {
        const int64_t h = kvh * G + g;
        load_rows_padded(w.qs, a.q + (q0 * H + h) * D, H * D, nq, D, Dp, a.scale * kNnLog2e);  // [nq, Dp]
        load_rows_padded(w.dos, a.dout + (q0 * H + h) * D, H * D, nq, D, Dp, 1.0f);            // [nq, Dp]
        gemm_tile<false>(w.s, kBlock, w.qs, Dp, 1, kt, a.Tp, nq, kBlock, D);    // [nq, kBlock] scores
        gemm_tile<false>(w.dp, kBlock, w.dos, Dp, 1, vt, a.Tp, nq, kBlock, D);  // [nq, kBlock] dO V^T
        for (int64_t r = 0; r < nq; ++r) {
          const int64_t row = (q0 + r) * H + h;
          float* p = w.s + r * kBlock;
          float* ds = w.dp + r * kBlock;
          const Reg lse2 = V::set1(a.lse_in[row] * kNnLog2e), di = V::set1(a.di[row]);
          for (int64_t j = 0; j < kBlock; j += V::W) {
            const Reg pv = V::exp2(V::sub(V::load(p + j), lse2));
            V::store(p + j, pv);
            V::store(ds + j, V::mul(pv, V::sub(V::load(ds + j), di)));
          }
          for (int64_t j = visible_keys(a.causal, qb, kb, r, nk); j < kBlock; ++j) p[j] = ds[j] = 0.0f;
        }
        float* dq_tile = dq_rows + ((q0 - start) * H + h) * ld_dq;  // [nq, Dp] with stride H * ld_dq
        if (kb < qb || !a.causal) {
          gemm_tile<true>(w.dv, Dp, w.s, 1, kBlock, w.dos, Dp, nk, Dp, nq);              // dV += P^T dO
          gemm_tile<true>(w.dk, Dp, w.dp, 1, kBlock, w.qs, Dp, nk, Dp, nq);              // dK += dS^T Qs
          gemm_tile<true>(dq_tile, H * ld_dq, w.dp, kBlock, 1, kp, ldk, nq, Dp, nk);     // dQ += dS K
        } else {
          gemm_tile<true, Tri::kUpper>(w.dv, Dp, w.s, 1, kBlock, w.dos, Dp, nk, Dp, nq);
          gemm_tile<true, Tri::kUpper>(w.dk, Dp, w.dp, 1, kBlock, w.qs, Dp, nk, Dp, nq);
          gemm_tile<true, Tri::kLower>(dq_tile, H * ld_dq, w.dp, kBlock, 1, kp, ldk, nq, Dp, nk);
        }
      }
    }
    for (int64_t j = 0; j < nk; ++j) {
      const int64_t row = (k0 + j) * K + kvh;
      for (int64_t d = 0; d < D; ++d) {
        a.dk[row * D + d] = w.dk[j * Dp + d] * kNnLn2;  // Qs carried log2(e): dK = dS^T Q scale
        a.dv[row * D + d] = w.dv[j * Dp + d];
      }
    }
  }
}
