// Plain output layer (full [T, V] logits) against the double-precision ref:: oracle and the fused chunked
// ops:: kernel, f32 and bf16, with ignored targets (-1) and absent dlogprob / dentropy.
#include <gtest/gtest.h>

#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/ops.h"
#include "kernels/plain_ops.h"
#include "kernels/ref/ref_head.h"
#include "kernels_plain/plain_test_util.h"

namespace grpo {
namespace {

using plain_test::Guarded;
using plain_test::random_floats;
using plain_test::rel_err;
using plain_test::to_double;

constexpr int64_t T = 23, C = 40, V = 301;
constexpr float kScale = 0.75f;

std::vector<int32_t> targets() {
  std::vector<int32_t> t(T);
  for (int64_t i = 0; i < T; ++i) t[i] = i % 5 == 3 ? -1 : static_cast<int32_t>((i * 37) % V);
  return t;
}

std::vector<bf16_t> to_bf16(const std::vector<float>& v) {
  std::vector<bf16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = f32_to_bf16(v[i]);
  return out;
}
std::vector<float> round_bf16(const std::vector<float>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = bf16_to_f32(f32_to_bf16(v[i]));
  return out;
}

struct Grads {
  bool lp, ent;
};

// dtype F32: fp32 GEMMs, errors ~1e-6. BF16: the oracle gets the bf16-rounded h and W, so only the
// rounding of dz to bf16 before the backward GEMMs (8 bits of mantissa, ~4e-3 relative) differs.
void check(DType dt, Grads g, double tol_fwd, double tol_bwd) {
  const std::vector<float> h32 = random_floats(T * C, 60, -1, 1), W32 = random_floats(V * C, 61, -0.5, 0.5);
  const std::vector<float> h = dt == DType::BF16 ? round_bf16(h32) : h32, W = dt == DType::BF16 ? round_bf16(W32) : W32;
  const std::vector<bf16_t> h16 = to_bf16(h32), W16 = to_bf16(W32);
  const void* hp = dt == DType::BF16 ? static_cast<const void*>(h16.data()) : h.data();
  const void* Wp = dt == DType::BF16 ? static_cast<const void*>(W16.data()) : W.data();
  const std::vector<int32_t> tgt = targets();
  const std::vector<float> dlp = random_floats(T, 62), dent = random_floats(T, 63), dW0 = random_floats(V * C, 64);
  const float* dlp_p = g.lp ? dlp.data() : nullptr;
  const float* dent_p = g.ent ? dent.data() : nullptr;

  std::vector<float> ws(plain::lm_head_ws_floats(T, V, C));
  Guarded lp(T), ent(T), lse(T), dh(T * C), dW(dW0);
  plain::lm_head_forward(lp.data(), ent.data(), lse.data(), hp, Wp, dt, tgt.data(), T, C, V, kScale, 4, ws.data());
  plain::lm_head_backward(dh.data(), dW.data(), dlp_p, dent_p, hp, Wp, dt, tgt.data(), lse.data(), ent.data(), T, C, V,
                          kScale, 4, ws.data());

  std::vector<double> lp_ref(T), ent_ref(T), lse_ref(T), dh_ref(T * C), dW_ref = to_double(dW0);
  const std::vector<double> hd = to_double(h), Wd = to_double(W);
  std::vector<double> dlp_d = to_double(dlp), dent_d = to_double(dent);
  ref::lm_head_forward(lp_ref.data(), ent_ref.data(), lse_ref.data(), hd.data(), Wd.data(), tgt.data(), T, C, V,
                       double{kScale});
  ref::lm_head_backward(dh_ref.data(), dW_ref.data(), g.lp ? dlp_d.data() : nullptr,
                        g.ent ? dent_d.data() : nullptr, hd.data(), Wd.data(), tgt.data(), T, C, V, double{kScale});
  const std::string what = std::string(dtype_name(dt)) + " lp=" + std::to_string(g.lp) + " ent=" +
                           std::to_string(g.ent);
  EXPECT_LT(rel_err(lp.values(), lp_ref), tol_fwd) << what;
  EXPECT_LT(rel_err(ent.values(), ent_ref), tol_fwd) << what;
  EXPECT_LT(rel_err(lse.values(), lse_ref), tol_fwd) << what;
  EXPECT_LT(rel_err(dh.values(), dh_ref), tol_bwd) << what;
  std::vector<double> ddW(V * C), ddW_ref(V * C);  // the gradient part of dW (dW0 + gradient)
  const std::vector<float> dW_now = dW.values();
  for (int64_t i = 0; i < V * C; ++i) {
    ddW[i] = double{dW_now[i]} - dW0[i];
    ddW_ref[i] = dW_ref[i] - dW0[i];
  }
  EXPECT_LT(rel_err(ddW, ddW_ref), tol_bwd) << what;
  EXPECT_TRUE(lp.intact() && ent.intact() && lse.intact() && dh.intact() && dW.intact()) << what;
  for (int64_t t = 0; t < T; ++t) {
    if (tgt[t] < 0) {
      EXPECT_EQ(lp.values()[t], 0.0f) << "ignored target at " << t;
    }
  }

  // The fused, chunked kernel (chunk 5: partial last chunk) on the same inputs.
  const int64_t chunk = 5;
  std::vector<float> fws(ops::lm_head_ws_floats(chunk, V, C)), flp(T), fent(T), flse(T), fdh(T * C), fdW = dW0;
  ops::lm_head_forward(flp.data(), fent.data(), flse.data(), hp, Wp, dt, tgt.data(), T, C, V, kScale, chunk,
                       fws.data());
  ops::lm_head_backward(fdh.data(), fdW.data(), dlp_p, dent_p, hp, Wp, dt, tgt.data(), flse.data(), fent.data(), T, C,
                        V, kScale, chunk, fws.data());
  EXPECT_LT(rel_err(lp.values(), flp), tol_fwd) << what;
  EXPECT_LT(rel_err(ent.values(), fent), tol_fwd) << what;
  EXPECT_LT(rel_err(dh.values(), fdh), tol_bwd) << what;
  EXPECT_LT(rel_err(dW.values(), fdW), tol_bwd) << what;
}

TEST(PlainLmHead, F32MatchesRefAndFused) {
  check(DType::F32, {true, true}, 2e-5, 2e-5);
  check(DType::F32, {true, false}, 2e-5, 2e-5);
  check(DType::F32, {false, true}, 2e-5, 2e-5);
}

TEST(PlainLmHead, Bf16MatchesRefAndFused) { check(DType::BF16, {true, true}, 2e-5, 1e-2); }

TEST(PlainLmHead, WorkspaceIsTwoFullLogitMatrices) {
  EXPECT_EQ(plain::lm_head_ws_floats(512, 1000, 64), 2 * 512 * 1000 + 512);
}

TEST(PlainLmHead, RejectsTargetOutOfVocab) {
  std::vector<float> h(2 * 4), W(3 * 4), out(2), ws(plain::lm_head_ws_floats(2, 3, 4));
  std::vector<int32_t> tgt = {0, 3};
  EXPECT_THROW(plain::lm_head_forward(out.data(), out.data(), out.data(), h.data(), W.data(), DType::F32, tgt.data(),
                                      2, 4, 3, 1.0f, 2, ws.data()),
               Error);
}

}  // namespace
}  // namespace grpo
