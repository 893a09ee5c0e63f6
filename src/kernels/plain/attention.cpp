// Plain causal GQA attention (see plain_ops.h), HF's eager attention per packed sequence of length L:
//   S = q k^T * scale (one GEMM per head into a materialised [H, L, L] tensor); causal mask pass (-inf above
//   the diagonal); softmax pass (P kept in place, lse [T, H] saved); o = P v (one GEMM per head).
// Query head h reads kv head h / (H/K) through the GEMM leading dimensions (no repeat_kv copy).
// Backward: ops.h saves only lse between forward and backward, so P is recomputed (S GEMM, mask pass,
// P = exp(S - lse) passes) into a [H, L, L] temporary, where autograd would have kept it. Then
// dP = dO v^T (GEMM), delta = rowsum(dO * O) (pass), dS = P * (dP - delta) (passes),
// dq = dS k * scale, dk = dS^T q * scale, dv = P^T dO (GEMMs; the heads of a group add into dk, dv).
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

// Views of one packed sequence [start, start + L) in the [T, heads, D] tensors.
struct SeqView {
  int64_t start, L, H, K, D;
  int64_t group() const { return H / K; }
  int64_t q_off(int64_t h) const { return start * H * D + h * D; }             // row stride H*D
  int64_t kv_off(int64_t h) const { return start * K * D + (h / group()) * D; }  // row stride K*D
};

// S [H, L, L] = scale * q k^T per head, then the causal mask (-inf above the diagonal) as its own pass.
void masked_scores(float* scores, const float* q, const float* k, const SeqView& sv, float scale) {
  const int64_t L = sv.L, ldq = sv.H * sv.D, ldk = sv.K * sv.D;
  for (int64_t h = 0; h < sv.H; ++h)
    ops::gemm(Trans::N, Trans::T, L, L, sv.D, scale, q + sv.q_off(h), ldq, k + sv.kv_off(h), ldk, 0.0f,
              scores + h * L * L, L, DType::F32);
  parallel_rows(sv.H * L, L, [&](int64_t r) {
    const int64_t i = r % L;
    vec::fill(scores + r * L + i + 1, -INFINITY, L - i - 1);
  });
}

}  // namespace

int64_t attention_ws_floats(int64_t T, int64_t H, int64_t K, int64_t D) {
  GRPO_CHECK(T >= 0 && H > 0 && K > 0 && D > 0, "[plain_attention_ws_floats] expected T >= 0 and H, K, D > 0, got T=",
             T, " H=", H, " K=", K, " D=", D);
  // Backward, the larger: P and dP/dS [H, L, L] each and delta [H, L], for a sequence as long as T.
  return 2 * H * T * T + H * T;
}

void attention_forward(float* o, float* lse, const float* q, const float* k, const float* v,
                       const int32_t* cu_seqlens, int64_t S, int64_t T, int64_t H, int64_t K, int64_t D,
                       float scale, float* ws) {
  GRPO_PROFILE("plain_attention_forward");
  check_args("plain_attention_forward", cu_seqlens, S, T, H, K, D, ws);
  const int64_t ldq = H * D, ldk = K * D;
  for (int64_t s = 0; s < S; ++s) {
    const SeqView sv{cu_seqlens[s], cu_seqlens[s + 1] - cu_seqlens[s], H, K, D};
    const int64_t L = sv.L;
    if (L == 0) continue;
    float* P = ws;  // [H, L, L] scores, then probabilities
    masked_scores(P, q, k, sv, scale);
    parallel_rows(H * L, L, [&](int64_t r) {
      const int64_t h = r / L, i = r % L;
      lse[(sv.start + i) * H + h] = vec::softmax(P + r * L, P + r * L, L);
    });
    for (int64_t h = 0; h < H; ++h)
      ops::gemm(Trans::N, Trans::N, L, D, L, 1.0f, P + h * L * L, L, v + sv.kv_off(h), ldk, 0.0f, o + sv.q_off(h),
                ldq, DType::F32);
  }
}

void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
                        const float* v, const float* o, const float* lse, const int32_t* cu_seqlens, int64_t S,
                        int64_t T, int64_t H, int64_t K, int64_t D, float scale, float* ws) {
  GRPO_PROFILE("plain_attention_backward");
  check_args("plain_attention_backward", cu_seqlens, S, T, H, K, D, ws);
  const int64_t ldq = H * D, ldk = K * D;
  for (int64_t s = 0; s < S; ++s) {
    const SeqView sv{cu_seqlens[s], cu_seqlens[s + 1] - cu_seqlens[s], H, K, D};
    const int64_t L = sv.L;
    if (L == 0) continue;
    float* P = ws;                   // [H, L, L] probabilities (recomputed)
    float* dS = ws + H * L * L;      // [H, L, L] dP, then dS
    float* delta = ws + 2 * H * L * L;  // [H, L] rowsum(dO * O)
    masked_scores(P, q, k, sv, scale);
    parallel_rows(H * L, L, [&](int64_t r) {
      const int64_t h = r / L, i = r % L;
      vec::add_scalar(P + r * L, P + r * L, -lse[(sv.start + i) * H + h], L);
    });
    parallel_rows(H * L, L, [&](int64_t r) { vec::exp(P + r * L, P + r * L, L); });
    for (int64_t h = 0; h < H; ++h)
      ops::gemm(Trans::N, Trans::T, L, L, D, 1.0f, dout + sv.q_off(h), ldq, v + sv.kv_off(h), ldk, 0.0f,
                dS + h * L * L, L, DType::F32);
    parallel_rows(H * L, D, [&](int64_t r) {
      const int64_t h = r / L, i = r % L, off = (sv.start + i) * ldq + h * D;
      delta[r] = vec::dot(dout + off, o + off, D);
    });
    parallel_rows(H * L, L, [&](int64_t r) { vec::add_scalar(dS + r * L, dS + r * L, -delta[r], L); });
    parallel_rows(H * L, L, [&](int64_t r) { vec::mul(dS + r * L, P + r * L, dS + r * L, L); });
    for (int64_t h = 0; h < H; ++h) {
      const float beta = h % sv.group() == 0 ? 0.0f : 1.0f;  // the first head of a group writes dk, dv
      ops::gemm(Trans::N, Trans::N, L, D, L, scale, dS + h * L * L, L, k + sv.kv_off(h), ldk, 0.0f,
                dq + sv.q_off(h), ldq, DType::F32);
      ops::gemm(Trans::T, Trans::N, L, D, L, scale, dS + h * L * L, L, q + sv.q_off(h), ldq, beta,
                dk + sv.kv_off(h), ldk, DType::F32);
      ops::gemm(Trans::T, Trans::N, L, D, L, 1.0f, P + h * L * L, L, dout + sv.q_off(h), ldq, beta,
                dv + sv.kv_off(h), ldk, DType::F32);
    }
  }
}

}  // namespace grpo::plain
