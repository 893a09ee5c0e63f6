// Plain output layer (see plain_ops.h): the full [T, V] logits and the eager ops on them.
// `chunk` is ignored: all T rows are done at once, in a workspace of lm_head_ws_floats(T, V, C) floats.
// Forward: z = logit_scale * h W^T (GEMM) -> [T, V]; log_softmax pass -> a second [T, V] (lse saved);
//   gather at the targets; entropy = -sum(p * logp) as passes p = exp(logp), p * logp, row sums.
// Backward (autograd of the forward; ops.h saves only lse, so the logits are recomputed by the GEMM):
//   logp = z - lse, p = exp(logp) (passes); d_logp = -g_ent p (1 + logp) (passes) + the gather's scatter of
//   g_lp; log_softmax backward dz = d_logp - p * rowsum(d_logp) (passes); dh = dz W, dW += dz^T h (GEMMs,
//   logit_scale as alpha). In bf16 mode dz is converted to bf16 for the GEMMs, as autocast does.
#include "core/error.h"
#include "core/profiler.h"
#include "kernels/plain/parallel.h"
#include "kernels/plain/vec.h"
#include "kernels/plain_ops.h"

namespace grpo::plain {
namespace {

using ops::Trans;

void check_args(const char* op, const void* h, const void* W, DType dt, const int32_t* target, int64_t T,
                int64_t C, int64_t V, const float* ws) {
  GRPO_CHECK(T >= 0 && C > 0 && V > 0, "[", op, "] need T >= 0, C > 0, V > 0, got T=", T, " C=", C, " V=", V);
  GRPO_CHECK(dt == DType::F32 || dt == DType::BF16, "[", op, "] h/W dtype must be f32 or bf16, got ",
             dtype_name(dt));
  GRPO_CHECK(T == 0 || (h && W && target && ws), "[", op, "] null h, W, target or workspace");
  for (int64_t t = 0; t < T; ++t)
    GRPO_CHECK(target[t] < V, "[", op, "] target[", t, "] = ", target[t], " >= V = ", V);
}

// z [T, V] = logit_scale * h W^T
void logits(float* z, const void* h, const void* W, DType dt, int64_t T, int64_t C, int64_t V, float logit_scale) {
  ops::gemm(Trans::N, Trans::T, T, V, C, logit_scale, h, C, W, C, 0.0f, z, V, dt);
}

}  // namespace

int64_t lm_head_ws_floats(int64_t chunk, int64_t V, int64_t C) {
  GRPO_CHECK(chunk > 0 && V > 0 && C > 0, "[plain_lm_head_ws_floats] need chunk (= T), V, C > 0, got chunk=",
             chunk, " V=", V, " C=", C);
  return 2 * chunk * V + chunk;  // two [T, V] temporaries and one [T]
}

void lm_head_forward(float* logprob, float* entropy, float* lse, const void* h, const void* W, DType ab_dtype,
                     const int32_t* target, int64_t T, int64_t C, int64_t V, float logit_scale, int64_t chunk,
                     float* ws) {
  GRPO_PROFILE("plain_lm_head_forward");
  check_args("plain_lm_head_forward", h, W, ab_dtype, target, T, C, V, ws);
  GRPO_CHECK(T == 0 || (logprob && entropy && lse), "[plain_lm_head_forward] null logprob, entropy or lse");
  float* z = ws;             // [T, V] logits, later p and p * logp
  float* logp = ws + T * V;  // [T, V]
  logits(z, h, W, ab_dtype, T, C, V, logit_scale);
  parallel_rows(T, V, [&](int64_t t) { lse[t] = vec::log_softmax(logp + t * V, z + t * V, V); });
  for (int64_t t = 0; t < T; ++t) logprob[t] = target[t] >= 0 ? logp[t * V + target[t]] : 0.0f;
  parallel_rows(T, V, [&](int64_t t) { vec::exp(z + t * V, logp + t * V, V); });
  parallel_rows(T, V, [&](int64_t t) { vec::mul(z + t * V, z + t * V, logp + t * V, V); });
  parallel_rows(T, V, [&](int64_t t) { entropy[t] = -vec::sum(z + t * V, V); });
}

void lm_head_backward(float* dh, float* dW, const float* dlogprob, const float* dentropy, const void* h, const void* W,
                      DType ab_dtype, const int32_t* target, const float* lse, const float* /*entropy*/, int64_t T,
                      int64_t C, int64_t V, float logit_scale, int64_t chunk, float* ws) {
  GRPO_PROFILE("plain_lm_head_backward");
  check_args("plain_lm_head_backward", h, W, ab_dtype, target, T, C, V, ws);
  GRPO_CHECK(T == 0 || (dh && lse), "[plain_lm_head_backward] null dh or lse");
  if (T == 0) return;
  float* a = ws;                // [T, V] logits -> logp -> d_logp -> dz
  float* p = ws + T * V;        // [T, V] probabilities, then p * rowsum(d_logp); then dz in bf16
  float* rowsum = ws + 2 * T * V;  // [T]
  logits(a, h, W, ab_dtype, T, C, V, logit_scale);
  parallel_rows(T, V, [&](int64_t t) { vec::add_scalar(a + t * V, a + t * V, -lse[t], V); });  // logp
  parallel_rows(T, V, [&](int64_t t) { vec::exp(p + t * V, a + t * V, V); });
  if (dentropy) {  // entropy = -sum p logp with p = e^logp:  d_logp = -g_ent (p + p logp)
    parallel_rows(T, V, [&](int64_t t) { vec::add_scalar(a + t * V, a + t * V, 1.0f, V); });
    parallel_rows(T, V, [&](int64_t t) { vec::mul(a + t * V, a + t * V, p + t * V, V); });
    parallel_rows(T, V, [&](int64_t t) { vec::mul_scalar(a + t * V, a + t * V, -dentropy[t], V); });
  } else {
    parallel_rows(T, V, [&](int64_t t) { vec::fill(a + t * V, 0.0f, V); });
  }
  if (dlogprob)  // the gather's backward: scatter g_lp at the targets
    for (int64_t t = 0; t < T; ++t)
      if (target[t] >= 0) a[t * V + target[t]] += dlogprob[t];
  // log_softmax backward: dz = d_logp - p * rowsum(d_logp)
  parallel_rows(T, V, [&](int64_t t) { rowsum[t] = vec::sum(a + t * V, V); });
  parallel_rows(T, V, [&](int64_t t) { vec::mul_scalar(p + t * V, p + t * V, rowsum[t], V); });
  parallel_rows(T, V, [&](int64_t t) { vec::sub(a + t * V, a + t * V, p + t * V, V); });
  const void* dz = a;
  if (ab_dtype == DType::BF16) {
    bf16_t* dz16 = reinterpret_cast<bf16_t*>(p);  // [T, V] bf16 fits in the [T, V] floats of p
    ops::f32_to_bf16(dz16, a, T * V);
    dz = dz16;
  }
  ops::gemm(Trans::N, Trans::N, T, C, V, logit_scale, dz, V, W, C, 0.0f, dh, C, ab_dtype);
  if (dW) ops::gemm(Trans::T, Trans::N, V, C, T, logit_scale, dz, V, h, C, 1.0f, dW, C, ab_dtype);
}

}  // namespace grpo::plain
