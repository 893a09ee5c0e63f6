// Plain SwiGLU (see plain_ops.h): out = silu(gate) * up as eager passes, with the output buffers as the
// temporaries (ops.h gives SwiGLU no workspace). Forward: sig = sigmoid(gate) -> out; silu = gate * sig
// -> out; out *= up. Backward (autograd of silu(g) * u, silu recomputed since ops.h keeps only gu):
// d_silu = dout * up -> dgu[:, :F]; sig -> dgu[:, F:]; dgate = silu_backward(d_silu, g, sig) (ATen's
// kernel); silu = gate * sig -> dgu[:, F:]; dup = dout * silu.
#include "core/error.h"
#include "core/profiler.h"
#include "kernels/plain/parallel.h"
#include "kernels/plain/vec.h"
#include "kernels/plain_ops.h"

namespace grpo::plain {
namespace {

void check_sizes(const char* op, int64_t T, int64_t F) {
  GRPO_CHECK(T >= 0 && F > 0, "[", op, "] expected T >= 0 and F > 0, got T=", T, " F=", F);
}

}  // namespace

void swiglu_forward(float* out, const float* gu, int64_t T, int64_t F) {
  GRPO_PROFILE("plain_swiglu_forward");
  check_sizes("plain_swiglu_forward", T, F);
  const int64_t ld = 2 * F;  // row stride of gu: gate in [0, F), up in [F, 2F)
  parallel_rows(T, F, [&](int64_t t) { vec::sigmoid(out + t * F, gu + t * ld, F); });
  parallel_rows(T, F, [&](int64_t t) { vec::mul(out + t * F, gu + t * ld, out + t * F, F); });
  parallel_rows(T, F, [&](int64_t t) { vec::mul(out + t * F, out + t * F, gu + t * ld + F, F); });
}

void swiglu_backward(float* dgu, const float* dout, const float* gu, int64_t T, int64_t F) {
  GRPO_PROFILE("plain_swiglu_backward");
  check_sizes("plain_swiglu_backward", T, F);
  const int64_t ld = 2 * F;
  auto gate = [&](int64_t t) { return gu + t * ld; };       // [F]
  auto up = [&](int64_t t) { return gu + t * ld + F; };     // [F]
  auto dgate = [&](int64_t t) { return dgu + t * ld; };     // [F]
  auto dup = [&](int64_t t) { return dgu + t * ld + F; };   // [F]
  parallel_rows(T, F, [&](int64_t t) { vec::mul(dgate(t), dout + t * F, up(t), F); });           // d_silu
  parallel_rows(T, F, [&](int64_t t) { vec::sigmoid(dup(t), gate(t), F); });                     // sig
  parallel_rows(T, F, [&](int64_t t) { vec::silu_backward(dgate(t), dgate(t), gate(t), dup(t), F); });
  parallel_rows(T, F, [&](int64_t t) { vec::mul(dup(t), gate(t), dup(t), F); });                 // silu
  parallel_rows(T, F, [&](int64_t t) { vec::mul(dup(t), dout + t * F, dup(t), F); });            // d_up
}

}  // namespace grpo::plain
