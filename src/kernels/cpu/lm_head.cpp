// The fused output layer: logits z = logit_scale * h W^T, log-softmax at the target, entropy and lse,
// a block at a time so that [T, V] never exists. Forward: `chunk` rows at a time, one GEMM per chunk into
// the workspace, then per row (OpenMP) a max pass and an exp pass. Backward: the rows with a non-zero
// upstream gradient (prompt tokens of a GRPO batch have none: their dh rows are zeroed and cost no GEMM work)
// are taken up to `pass_rows` at a time, and each such group walks the vocabulary in blocks of `vocab_block`
// columns: the logits block again (GEMM), dz formed in place from the forward's lse and entropy, then
// dh[group] += dz W[block] and dW[block] += dz^T h[group]. Both sizes come from the same workspace as the
// forward's chunk (pass_rows x vocab_block <= chunk x V): many rows per pass give the dW GEMM a deep k
// (2048 rows where the vocabulary allows) instead of `chunk` rows, so that it is not bound by reading and
// writing the f32 dW once per chunk. In bf16 mode dz is converted to bf16 so both backward GEMMs run on bf16
// inputs like the forward one. When a group's rows are not contiguous, their h rows are gathered and their dh
// rows scattered.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/profiler.h"
#include "kernels/backend.h"
#include "kernels/cpu/head_bf16.h"
#include "kernels/cpu/head_rows.h"
#include "kernels/ops.h"

namespace grpo::ops {
namespace {

constexpr int64_t round_up16(int64_t n) { return (n + 15) / 16 * 16; }

// The row passes of the one ISA decision, taken before the parallel loops that call them.
struct RowKernels {
  float (*row_max)(const float*, int64_t);
  detail::ExpSums (*shifted_exp_sums)(const float*, int64_t, float);
  void (*write_softmax_grad)(float*, int64_t, float, float, float);
  detail::F32ToBf16Row to_bf16;
};

RowKernels row_kernels() {
  if (cpu_has_avx512())
    return {detail::row_max_avx512, detail::shifted_exp_sums_avx512, detail::write_softmax_grad_avx512,
            detail::f32_to_bf16_row()};
  return {detail::row_max_avx2, detail::shifted_exp_sums_avx2, detail::write_softmax_grad_avx2,
          detail::f32_to_bf16_row()};
}

const void* row_ptr(const void* base, int64_t row, int64_t C, DType dt) {
  return static_cast<const char*>(base) + row * C * dtype_size(dt);
}

void check_common(const char* op, const void* h, const void* W, DType dt, const int32_t* target, int64_t T,
                  int64_t C, int64_t V, int64_t chunk, const float* ws) {
  GRPO_CHECK(T >= 0 && C > 0 && V > 0, "[", op, "] need T >= 0, C > 0, V > 0, got T=", T, " C=", C, " V=", V);
  GRPO_CHECK(chunk > 0, "[", op, "] chunk must be > 0, got ", chunk);
  GRPO_CHECK(dt == DType::F32 || dt == DType::BF16, "[", op, "] h/W dtype must be f32 or bf16, got ",
             dtype_name(dt));
  GRPO_CHECK(T == 0 || (h && W && target && ws), "[", op, "] null h, W, target or workspace");
  for (int64_t t = 0; t < T; ++t)
    GRPO_CHECK(target[t] < V, "[", op, "] target[", t, "] = ", target[t], " >= V = ", V);
}

// z [rows, V] = logit_scale * hc W^T for rows consecutive rows hc of h
void chunk_logits(float* z, const void* hc, const void* W, DType dt, int64_t rows, int64_t C, int64_t V,
                  float logit_scale) {
  gemm(Trans::N, Trans::T, rows, V, C, logit_scale, hc, C, W, C, 0.0f, z, V, dt);
}

// Backward pass sizes for a forward chunk: as many rows as possible (up to kPassRows) with vocabulary blocks
// of at least min(V, kMinVocabBlock) columns, in the forward's chunk x V floats of logits. Blocks are of
// near-equal size, in multiples of kBlockAlign where they are that large: oneDNN's transposed-A bf16 GEMM
// (dW) runs 0.75x as fast on 18,992 rows as on 18,944 or 16,896 (2026-12-07, Zen 5).
constexpr int64_t kPassRows = 2048;
constexpr int64_t kMinVocabBlock = 512;
constexpr int64_t kBlockAlign = 256;
static_assert(kMinVocabBlock >= kBlockAlign);

struct PassShape {
  int64_t rows, vocab_block;
};

PassShape pass_shape(int64_t chunk, int64_t V) {
  const int64_t budget = chunk * V;
  const int64_t rows = std::max(chunk, std::min(kPassRows, budget / std::min(V, kMinVocabBlock)));
  const int64_t max_block = budget / rows;
  if (max_block >= V) return {rows, V};
  // Here max_block >= kMinVocabBlock >= kBlockAlign: rows was capped so.
  const int64_t blocks = (V + max_block - 1) / max_block, even = (V + blocks - 1) / blocks;
  return {rows, std::min((even + kBlockAlign - 1) / kBlockAlign, max_block / kBlockAlign) * kBlockAlign};
}

// The backward workspace, carved out of the caller's floats (regions start at multiples of 16 floats).
struct BackwardWs {
  float* z;        // [rows, vocab_block] logits, then dz (f32)
  bf16_t* z16;     // [rows, vocab_block] dz in bf16 (bf16 mode)
  void* h_rows;    // [rows, C] gathered h rows (f32 or bf16)
  float* dh_rows;  // [rows, C] dh of the gathered rows before the scatter
  int32_t* rows;   // [rows] token index of each row of the group
};

struct WsLayout {
  PassShape pass;
  int64_t z, z16, h_rows, dh_rows, rows, total;  // offsets in floats
};

WsLayout ws_layout(int64_t chunk, int64_t V, int64_t C) {
  WsLayout l{};
  l.pass = pass_shape(chunk, V);
  l.z = 0;  // the forward's [chunk, V] logits, then the backward's [rows, vocab_block] (no more floats)
  l.z16 = l.z + round_up16(chunk * V);
  l.h_rows = l.z16 + round_up16((l.pass.rows * l.pass.vocab_block + 1) / 2);
  l.dh_rows = l.h_rows + round_up16(l.pass.rows * C);
  l.rows = l.dh_rows + round_up16(l.pass.rows * C);
  l.total = l.rows + round_up16(l.pass.rows);
  return l;
}

}  // namespace

int64_t lm_head_ws_floats(int64_t chunk, int64_t V, int64_t C) {
  GRPO_CHECK(chunk > 0 && V > 0 && C > 0, "[lm_head] need chunk, V, C > 0, got chunk=", chunk, " V=", V,
             " C=", C);
  return ws_layout(chunk, V, C).total;
}

void lm_head_forward(float* logprob, float* entropy, float* lse, const void* h, const void* W, DType ab_dtype,
                     const int32_t* target, int64_t T, int64_t C, int64_t V, float logit_scale, int64_t chunk,
                     float* ws) {
  GRPO_PROFILE("lm_head_forward");
  check_common("lm_head_forward", h, W, ab_dtype, target, T, C, V, chunk, ws);
  GRPO_CHECK(T == 0 || (logprob && entropy && lse), "[lm_head_forward] null logprob, entropy or lse output");
  const RowKernels k = row_kernels();
  float* z = ws;  // [chunk, V]
  for (int64_t r0 = 0; r0 < T; r0 += chunk) {
    const int64_t rows = std::min(chunk, T - r0);
    chunk_logits(z, row_ptr(h, r0, C, ab_dtype), W, ab_dtype, rows, C, V, logit_scale);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < rows; ++i) {
      const float* zi = z + i * V;
      const int64_t t = r0 + i;
      const float m = k.row_max(zi, V);
      const detail::ExpSums s = k.shifted_exp_sums(zi, V, m);
      const float log_sum = std::log(s.sum);
      lse[t] = m + log_sum;
      entropy[t] = log_sum - s.dot / s.sum;  // -sum p log p with log p = (z - m) - log_sum
      logprob[t] = target[t] >= 0 ? zi[target[t]] - lse[t] : 0.0f;
    }
  }
}

void lm_head_backward(float* dh, float* dW, const float* dlogprob, const float* dentropy, const void* h, const void* W,
                      DType ab_dtype, const int32_t* target, const float* lse, const float* entropy, int64_t T,
                      int64_t C, int64_t V, float logit_scale, int64_t chunk, float* ws) {
  GRPO_PROFILE("lm_head_backward");
  check_common("lm_head_backward", h, W, ab_dtype, target, T, C, V, chunk, ws);
  GRPO_CHECK(T == 0 || (dh && lse), "[lm_head_backward] null dh or lse");
  GRPO_CHECK(T == 0 || !dentropy || entropy, "[lm_head_backward] dentropy given without the forward's entropy");
  const RowKernels k = row_kernels();
  const bool bf16 = ab_dtype == DType::BF16;
  const int64_t row_bytes = C * dtype_size(ab_dtype);
  const WsLayout l = ws_layout(chunk, V, C);
  const int64_t pass_rows = l.pass.rows, Vb = l.pass.vocab_block;
  const BackwardWs w{ws + l.z, reinterpret_cast<bf16_t*>(ws + l.z16), ws + l.h_rows, ws + l.dh_rows,
                     reinterpret_cast<int32_t*>(ws + l.rows)};
  auto grad_lp = [&](int64_t t) { return dlogprob && target[t] >= 0 ? dlogprob[t] : 0.0f; };
  auto grad_ent = [&](int64_t t) { return dentropy ? dentropy[t] : 0.0f; };
  auto W_rows = [&](int64_t v0) { return row_ptr(W, v0, C, ab_dtype); };  // [Vb, C] block of W

  for (int64_t next = 0; next < T;) {
    int64_t n = 0;  // collect up to pass_rows rows with a gradient; the others get dh = 0
    for (; next < T && n < pass_rows; ++next) {
      if (grad_lp(next) != 0.0f || grad_ent(next) != 0.0f)
        w.rows[n++] = static_cast<int32_t>(next);
      else
        std::fill(dh + next * C, dh + (next + 1) * C, 0.0f);
    }
    if (n == 0) continue;
    const bool contiguous = w.rows[n - 1] - w.rows[0] == n - 1;
    if (!contiguous)
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(static_cast<char*>(w.h_rows) + i * row_bytes, row_ptr(h, w.rows[i], C, ab_dtype), row_bytes);
    const void* hc = contiguous ? row_ptr(h, w.rows[0], C, ab_dtype) : w.h_rows;   // [n, C]
    float* dhc = contiguous ? dh + int64_t{w.rows[0]} * C : w.dh_rows;               // [n, C]
    for (int64_t v0 = 0; v0 < V; v0 += Vb) {
      const int64_t nv = std::min(Vb, V - v0);
      chunk_logits(w.z, hc, W_rows(v0), ab_dtype, n, C, nv, logit_scale);  // [n, nv]
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < n; ++i) {
        float* zi = w.z + i * nv;
        const int64_t t = w.rows[i];
        const float g_lp = grad_lp(t), g_ent = grad_ent(t);
        const float H = g_ent != 0.0f ? entropy[t] : 0.0f;
        // dL/dz_i = g_lp (onehot_i - p_i) - g_ent p_i (log p_i + H), times logit_scale for d/d(h W^T)
        k.write_softmax_grad(zi, nv, lse[t], -logit_scale * (g_lp + g_ent * H), -logit_scale * g_ent);
        if (g_lp != 0.0f && target[t] >= v0 && target[t] < v0 + nv) zi[target[t] - v0] += logit_scale * g_lp;
        if (bf16) k.to_bf16(w.z16 + i * nv, zi, nv);
      }
      const void* dz = bf16 ? static_cast<const void*>(w.z16) : w.z;  // [n, nv]
      gemm(Trans::N, Trans::N, n, C, nv, 1.0f, dz, nv, W_rows(v0), C, v0 == 0 ? 0.0f : 1.0f, dhc, C, ab_dtype);
      if (dW) gemm(Trans::T, Trans::N, nv, C, n, 1.0f, dz, nv, hc, C, 1.0f, dW + v0 * C, C, ab_dtype);
    }
    if (!contiguous)
      for (int64_t i = 0; i < n; ++i) std::copy(dhc + i * C, dhc + (i + 1) * C, dh + int64_t{w.rows[i]} * C);
  }
}

}  // namespace grpo::ops
