// Tests of RMSNorm (rows of C, also the per-head q/k norm shape): CPU (both SIMD paths) vs the double
// reference on odd sizes, finite-difference gradients for x and w, the dw += rule, in-place use (y = x,
// dx = dy), guard bytes, thread-count independence of dw, and bad sizes. Also checks that the float
// instantiation of the reference (rmsnorm, attention) agrees with the double one.
#include <gtest/gtest.h>
#include <omp.h>

#include <vector>

#include "core/error.h"
#include "kernels/ops.h"
#include "kernels/ref/ref_nn.h"
#include "nn_test_util.h"

using namespace grpo;
using namespace nn_test;

namespace {

constexpr float kEps = 1e-6f;

struct NormCase {
  int64_t N, C;
};

TEST(NnRmsnorm, MatchesReferenceAndFiniteDifferences) {
  for (auto isa : available_isas())
    for (NormCase c : {NormCase{5, 37}, NormCase{1, 24}, NormCase{70, 64}, NormCase{3, 512}}) {
      ForceIsa force(isa);
      SCOPED_TRACE(std::string(isa_name(isa)) + " N=" + std::to_string(c.N) + " C=" + std::to_string(c.C));
      const int64_t N = c.N, C = c.C;
      const auto x = randn(N * C, 10, 2.0f), w = randn(C, 11), dy = randn(N * C, 12), dw0 = randn(C, 13);
      const auto xd = to_double(x), wd = to_double(w), dyd = to_double(dy);

      Guarded y(N * C), rstd(N);
      ops::rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C, kEps);
      std::vector<double> ywant(N * C), rwant(N);
      ref::rmsnorm_forward(ywant.data(), rwant.data(), xd.data(), wd.data(), N, C, double{kEps});
      // fp32 sum of C squares and one rsqrt: ~C * 6e-8 relative in the worst case, 2e-6 for C <= 512.
      EXPECT_LT(max_rel_err(y.vec(), ywant), 2e-6);
      EXPECT_LT(max_rel_err(rstd.vec(), rwant), 2e-6);
      EXPECT_TRUE(y.guards_intact() && rstd.guards_intact());

      Guarded dx(N * C), dw(dw0), ws(ops::rmsnorm_backward_ws_floats(N, C));
      ops::rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), rstd.data(), N, C, ws.data());
      std::vector<double> dxwant(N * C), dwwant = to_double(dw0);
      ref::rmsnorm_backward(dxwant.data(), dwwant.data(), dyd.data(), xd.data(), wd.data(), rwant.data(), N, C);
      EXPECT_LT(max_rel_err(dx.vec(), dxwant), 1e-5);  // dot product of C terms, then a difference
      EXPECT_LT(max_rel_err(dw.vec(), dwwant), 1e-5);  // sums of N terms in row blocks
      EXPECT_TRUE(dx.guards_intact() && dw.guards_intact() && ws.guards_intact());

      // Gradients of sum(dy * rmsnorm(x, w)) by central differences of the double reference.
      auto xv = xd, wv = wd;
      auto loss = [&] {
        std::vector<double> yy(N * C), rr(N);
        ref::rmsnorm_forward(yy.data(), rr.data(), xv.data(), wv.data(), N, C, double{kEps});
        double l = 0;
        for (int64_t i = 0; i < N * C; ++i) l += dyd[i] * yy[i];
        return l;
      };
      expect_matches_finite_differences(loss, xv, dx.vec(), 200, 2e-5, "rmsnorm dx");
      std::vector<float> dw_delta(C);
      for (int64_t i = 0; i < C; ++i) dw_delta[i] = dw.data()[i] - dw0[i];  // dw is accumulated (+=)
      expect_matches_finite_differences(loss, wv, dw_delta, 200, 2e-5, "rmsnorm dw");
    }
}

TEST(NnRmsnorm, InPlaceMatchesOutOfPlace) {
  const int64_t N = 9, C = 37;
  const auto x = randn(N * C, 14), w = randn(C, 15), dy = randn(N * C, 16);
  std::vector<float> y(N * C), rstd(N), dx(N * C), dw(C, 0.0f), ws(ops::rmsnorm_backward_ws_floats(N, C));
  ops::rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C, kEps);
  ops::rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), rstd.data(), N, C, ws.data());
  auto inplace = x;
  ops::rmsnorm_forward(inplace.data(), rstd.data(), inplace.data(), w.data(), N, C, kEps);
  EXPECT_EQ(inplace, y);
  auto g = dy;
  std::vector<float> dw2(C, 0.0f);
  ops::rmsnorm_backward(g.data(), dw2.data(), g.data(), x.data(), w.data(), rstd.data(), N, C, ws.data());
  EXPECT_EQ(g, dx);
  EXPECT_EQ(dw2, dw);
}

TEST(NnRmsnorm, BackwardIdenticalForOneAndTwoThreads) {
  const int64_t N = 4096, C = 64;  // many row blocks: the dw partials are summed in a fixed order
  const auto x = randn(N * C, 17), w = randn(C, 18), dy = randn(N * C, 19);
  std::vector<float> y(N * C), rstd(N), ws(ops::rmsnorm_backward_ws_floats(N, C));
  ops::rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C, kEps);
  const int saved = omp_get_max_threads();
  std::vector<float> dx[2], dw[2];
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    dx[threads - 1].assign(N * C, 0.0f);
    dw[threads - 1].assign(C, 0.0f);
    ops::rmsnorm_backward(dx[threads - 1].data(), dw[threads - 1].data(), dy.data(), x.data(), w.data(),
                          rstd.data(), N, C, ws.data());
  }
  omp_set_num_threads(saved);
  EXPECT_EQ(dx[0], dx[1]);
  EXPECT_EQ(dw[0], dw[1]);
}

TEST(NnRmsnorm, RejectsBadSizes) {
  std::vector<float> buf(8);
  EXPECT_THROW(ops::rmsnorm_forward(buf.data(), buf.data(), buf.data(), buf.data(), 2, 0, kEps), Error);
  EXPECT_THROW(ops::rmsnorm_forward(buf.data(), buf.data(), buf.data(), buf.data(), 2, 2, -1.0f), Error);
  EXPECT_THROW(
      ops::rmsnorm_backward(buf.data(), buf.data(), buf.data(), buf.data(), buf.data(), buf.data(), -1, 2, buf.data()),
      Error);
}

}  // namespace

namespace {

// The reference is templated on the scalar type; its float instantiation must agree with the double one
// (it is the oracle other float code may be compared with): float rounding only, 1e-5 of the scale.
TEST(NnReference, FloatInstantiationMatchesDouble) {
  const int64_t N = 6, C = 24, H = 4, K = 2;
  const std::vector<int32_t> cu{0, 2, 6};
  const auto x = randn(N * C, 60), w = randn(C, 61), dy = randn(N * C, 62);
  const auto xd = to_double(x), wd = to_double(w), dyd = to_double(dy);
  std::vector<float> yf(N * C), rf(N), dxf(N * C), dwf(C, 0.0f);
  std::vector<double> yd(N * C), rd(N), dxd(N * C), dwd(C, 0.0);
  ref::rmsnorm_forward(yf.data(), rf.data(), x.data(), w.data(), N, C, kEps);
  ref::rmsnorm_forward(yd.data(), rd.data(), xd.data(), wd.data(), N, C, double{kEps});
  ref::rmsnorm_backward(dxf.data(), dwf.data(), dy.data(), x.data(), w.data(), rf.data(), N, C);
  ref::rmsnorm_backward(dxd.data(), dwd.data(), dyd.data(), xd.data(), wd.data(), rd.data(), N, C);
  EXPECT_LT(max_rel_err(yf, yd), 1e-5);
  EXPECT_LT(max_rel_err(dxf, dxd), 1e-5);
  EXPECT_LT(max_rel_err(dwf, dwd), 1e-5);

  // Attention with T = N tokens, H = 4, K = 2, head dim 6 (C = H * 6 = 24 floats per token).
  const int64_t D = C / H;
  const auto k = randn(N * K * D, 63), v = randn(N * K * D, 64);
  const auto kd = to_double(k), vd = to_double(v);
  std::vector<float> of(N * H * D), lf(N * H), dqf(N * H * D), dkf(N * K * D), dvf(N * K * D);
  std::vector<double> od(N * H * D), ld(N * H), dqd(N * H * D), dkd(N * K * D), dvd(N * K * D);
  ref::attention_forward(of.data(), lf.data(), x.data(), k.data(), v.data(), cu.data(), 2, H, K, D, 0.4f);
  ref::attention_forward(od.data(), ld.data(), xd.data(), kd.data(), vd.data(), cu.data(), 2, H, K, D, 0.4);
  ref::attention_backward(dqf.data(), dkf.data(), dvf.data(), dy.data(), x.data(), k.data(), v.data(), cu.data(), 2,
                          N, H, K, D, 0.4f);
  ref::attention_backward(dqd.data(), dkd.data(), dvd.data(), dyd.data(), xd.data(), kd.data(), vd.data(), cu.data(),
                          2, N, H, K, D, 0.4);
  EXPECT_LT(max_rel_err(of, od), 1e-5);
  EXPECT_LT(max_rel_err(lf, ld), 1e-5);
  EXPECT_LT(max_rel_err(dqf, dqd), 1e-5);
  EXPECT_LT(max_rel_err(dkf, dkd), 1e-5);
  EXPECT_LT(max_rel_err(dvf, dvd), 1e-5);
}

}  // namespace
