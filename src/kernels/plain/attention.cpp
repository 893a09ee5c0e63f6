// Plain causal GQA attention (see plain_ops.h): HF's eager attention per packed sequence of length L, its
// products batched over heads the way torch.matmul runs [H, L, D] tensors (one batched GEMM per product,
// one oneDNN primitive per sequence length, never one GEMM per head):
//   q, k, v copied to [H, L, D] (transpose(1, 2) made contiguous; k and v through repeat_kv: query head h
//   gets a copy of kv head h / (H/K)); S [H, L, L] = q k^T * scale (batched GEMM, materialised); causal mask
//   pass (-inf above the diagonal); softmax pass (P kept in place, lse [T, H] saved); o = P v (batched GEMM)
//   copied back to [L, H, D] (transpose(1, 2).contiguous()).
// Backward: ops.h saves only lse between forward and backward, so P is recomputed (S GEMM, mask pass,
// P = exp(S - lse) passes) into a [H, L, L] temporary, where autograd would have kept it. Then
// dP = dO v^T (batched GEMM), delta = rowsum(dO * O) (pass), dS = P * (dP - delta) (passes),
// dq = dS k * scale, dk = dS^T q * scale, dv = P^T dO (batched GEMMs over query heads), the heads of each
// group summed into dk and dv (repeat_kv's backward).
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/profiler.h"
#include "kernels/plain/parallel.h"
#include "kernels/plain/vec.h"
#include "kernels/plain_ops.h"

namespace grpo::plain {
namespace {

using ops::Trans;

void check_args(const char* op, const int32_t* cu_seqlens, int64_t S, int64_t T, int64_t H, int64_t K, int64_t D,
                const float* ws) {
  GRPO_CHECK(S >= 0 && T >= 0 && H > 0 && K > 0 && D > 0, "[", op,
             "] expected S, T >= 0 and H, K, D > 0, got S=", S, " T=", T, " H=", H, " K=", K, " D=", D);
  GRPO_CHECK(H % K == 0, "[", op, "] query heads H=", H, " must be a multiple of kv heads K=", K);
  GRPO_CHECK(cu_seqlens && cu_seqlens[0] == 0, "[", op, "] cu_seqlens[0] must be 0");
  for (int64_t s = 0; s < S; ++s)
    GRPO_CHECK(cu_seqlens[s + 1] >= cu_seqlens[s], "[", op, "] cu_seqlens not non-decreasing at ", s + 1, ": ",
               cu_seqlens[s], " then ", cu_seqlens[s + 1]);
  GRPO_CHECK(cu_seqlens[S] == T, "[", op, "] cu_seqlens[S=", S, "] = ", cu_seqlens[S], ", expected T = ", T);
  GRPO_CHECK(T == 0 || ws, "[", op, "] null workspace");
}

// One packed sequence [start, start + L) of the [T, heads, D] tensors, and its [H, L, D] head-major copies.
struct SeqView {
  int64_t start, L, H, K, D;
  int64_t group() const { return H / K; }
  int64_t head_elems() const { return L * D; }  // one head's [L, D] in a head-major copy
};

// dst [H, L, D] = src rows of this sequence per head: src is [T, heads, D] with heads = H (queries, dout)
// or K (keys, values: query head h reads kv head h / group, repeat_kv).
void to_heads(float* dst, const float* src, int64_t heads, const SeqView& sv) {
  const int64_t L = sv.L, D = sv.D, per_head = sv.H / heads;
  parallel_rows(sv.H * L, D, [&](int64_t r) {
    const int64_t h = r / L, i = r % L;
    const float* row = src + ((sv.start + i) * heads + h / per_head) * D;
    std::copy(row, row + D, dst + r * D);
  });
}

// dst [T, H, D] rows of this sequence (=) from src [H, L, D].
void from_heads(float* dst, const float* src, const SeqView& sv) {
  const int64_t L = sv.L, D = sv.D;
  parallel_rows(sv.H * L, D, [&](int64_t r) {
    const int64_t h = r / L, i = r % L;
    std::copy(src + r * D, src + (r + 1) * D, dst + ((sv.start + i) * sv.H + h) * D);
  });
}

// dst [T, K, D] rows of this sequence (=) = the sum over each group's query heads of src [H, L, D].
void sum_groups(float* dst, const float* src, const SeqView& sv) {
  const int64_t L = sv.L, D = sv.D, g = sv.group();
  parallel_rows(sv.K * L, D * g, [&](int64_t r) {
    const int64_t j = r / L, i = r % L;
    float* out = dst + ((sv.start + i) * sv.K + j) * D;
    std::copy(src + (j * g * L + i) * D, src + (j * g * L + i + 1) * D, out);
    for (int64_t h = j * g + 1; h < (j + 1) * g; ++h) vec::add(out, out, src + (h * L + i) * D, D);
  });
}

// S [H, L, L] = scale * q k^T (one batched GEMM over heads), then the causal mask (-inf above the diagonal)
// as its own pass. qh, kh [H, L, D].
void masked_scores(float* scores, const float* qh, const float* kh, const SeqView& sv, float scale) {
  const int64_t L = sv.L, HD = sv.head_elems();
  ops::gemm_batched(Trans::N, Trans::T, sv.H, L, L, sv.D, scale, qh, sv.D, HD, kh, sv.D, HD, 0.0f, scores, L, L * L);
  parallel_rows(sv.H * L, L, [&](int64_t r) {
    const int64_t i = r % L;
    vec::fill(scores + r * L + i + 1, -INFINITY, L - i - 1);
  });
}

}  // namespace

int64_t attention_ws_floats(int64_t T, int64_t H, int64_t K, int64_t D) {
  GRPO_CHECK(T >= 0 && H > 0 && K > 0 && D > 0, "[plain_attention_ws_floats] expected T >= 0 and H, K, D > 0, got T=",
             T, " H=", H, " K=", K, " D=", D);
  // Backward, the larger: P and dP/dS [H, L, L] each, delta [H, L], and five [H, L, D] head-major copies
  // (q, k, v, dout, one output), for a sequence as long as T.
  return 2 * H * T * T + H * T + 5 * H * T * D;
}

void attention_forward(float* o, float* lse, const float* q, const float* k, const float* v,
                       const int32_t* cu_seqlens, int64_t S, int64_t T, int64_t H, int64_t K, int64_t D,
                       float scale, float* ws) {
  GRPO_PROFILE("plain_attention_forward");
  check_args("plain_attention_forward", cu_seqlens, S, T, H, K, D, ws);
  for (int64_t s = 0; s < S; ++s) {
    const SeqView sv{cu_seqlens[s], cu_seqlens[s + 1] - cu_seqlens[s], H, K, D};
    const int64_t L = sv.L, HD = sv.head_elems();
    if (L == 0) continue;
    float* P = ws;                // [H, L, L] scores, then probabilities
    float* qh = P + H * L * L;    // [H, L, D]
    float* kh = qh + H * HD;      // [H, L, D] repeated kv heads
    float* vh = kh + H * HD;      // [H, L, D]
    float* oh = vh + H * HD;      // [H, L, D]
    to_heads(qh, q, H, sv);
    to_heads(kh, k, K, sv);
    to_heads(vh, v, K, sv);
    masked_scores(P, qh, kh, sv, scale);
    parallel_rows(H * L, L, [&](int64_t r) {
      const int64_t h = r / L, i = r % L;
      lse[(sv.start + i) * H + h] = vec::softmax(P + r * L, P + r * L, L);
    });
    ops::gemm_batched(Trans::N, Trans::N, H, L, D, L, 1.0f, P, L, L * L, vh, D, HD, 0.0f, oh, D, HD);
    from_heads(o, oh, sv);
  }
}

void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
                        const float* v, const float* o, const float* lse, const int32_t* cu_seqlens, int64_t S,
                        int64_t T, int64_t H, int64_t K, int64_t D, float scale, float* ws) {
  GRPO_PROFILE("plain_attention_backward");
  check_args("plain_attention_backward", cu_seqlens, S, T, H, K, D, ws);
  const int64_t ldq = H * D;
  for (int64_t s = 0; s < S; ++s) {
    const SeqView sv{cu_seqlens[s], cu_seqlens[s + 1] - cu_seqlens[s], H, K, D};
    const int64_t L = sv.L, HD = sv.head_elems();
    if (L == 0) continue;
    float* P = ws;                   // [H, L, L] probabilities (recomputed)
    float* dS = P + H * L * L;       // [H, L, L] dP, then dS
    float* delta = dS + H * L * L;   // [H, L] rowsum(dO * O)
    float* qh = delta + H * L;       // [H, L, D]
    float* kh = qh + H * HD;         // [H, L, D] repeated kv heads
    float* vh = kh + H * HD;         // [H, L, D]
    float* doh = vh + H * HD;        // [H, L, D]
    float* gh = doh + H * HD;        // [H, L, D] dq, then dk, then dv per query head
    to_heads(qh, q, H, sv);
    to_heads(kh, k, K, sv);
    to_heads(vh, v, K, sv);
    to_heads(doh, dout, H, sv);
    masked_scores(P, qh, kh, sv, scale);
    parallel_rows(H * L, L, [&](int64_t r) {
      const int64_t h = r / L, i = r % L;
      vec::add_scalar(P + r * L, P + r * L, -lse[(sv.start + i) * H + h], L);
    });
    parallel_rows(H * L, L, [&](int64_t r) { vec::exp(P + r * L, P + r * L, L); });
    ops::gemm_batched(Trans::N, Trans::T, H, L, L, D, 1.0f, doh, D, HD, vh, D, HD, 0.0f, dS, L, L * L);
    parallel_rows(H * L, D, [&](int64_t r) {
      const int64_t h = r / L, i = r % L, off = (sv.start + i) * ldq + h * D;
      delta[r] = vec::dot(dout + off, o + off, D);
    });
    parallel_rows(H * L, L, [&](int64_t r) { vec::add_scalar(dS + r * L, dS + r * L, -delta[r], L); });
    parallel_rows(H * L, L, [&](int64_t r) { vec::mul(dS + r * L, P + r * L, dS + r * L, L); });
    ops::gemm_batched(Trans::N, Trans::N, H, L, D, L, scale, dS, L, L * L, kh, D, HD, 0.0f, gh, D, HD);
    from_heads(dq, gh, sv);
    ops::gemm_batched(Trans::T, Trans::N, H, L, D, L, scale, dS, L, L * L, qh, D, HD, 0.0f, gh, D, HD);
    sum_groups(dk, gh, sv);
    ops::gemm_batched(Trans::T, Trans::N, H, L, D, L, 1.0f, P, L, L * L, doh, D, HD, 0.0f, gh, D, HD);
    sum_groups(dv, gh, sv);
  }
}

}  // namespace grpo::plain
