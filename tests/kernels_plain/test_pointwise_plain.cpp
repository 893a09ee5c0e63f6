// Plain add / embedding / RMSNorm / RoPE / SwiGLU against the double-precision ref:: oracle and against the
// fused ops:: kernels, forward and backward, on odd sizes (vector tails) and with the documented aliasing.
#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "core/threads.h"
#include "kernels/ops.h"
#include "kernels/plain_ops.h"
#include "kernels/ref/ref_nn.h"
#include "kernels_plain/plain_test_util.h"

namespace grpo {
namespace {

using plain_test::Guarded;
using plain_test::random_floats;
using plain_test::rel_err;
using plain_test::to_double;

// fp32 kernels vs a float64 oracle: sums over at most a few hundred terms, errors ~1e-6 of the magnitude.
constexpr double kPointwiseTol = 2e-5;

TEST(PlainPointwise, AddInplaceMatchesRefOnLongAndOddSizes) {
  for (int64_t n : {0, 1, 17, 100003}) {
    std::vector<float> y0 = random_floats(n, 1), x = random_floats(n, 2);
    Guarded y(y0);
    plain::add_inplace(y.data(), x.data(), n);
    std::vector<double> want = to_double(y0);
    ref::add_inplace(want.data(), to_double(x).data(), n);
    EXPECT_LT(rel_err(y.values(), want), 1e-7) << "n=" << n;  // one fp32 rounding
    EXPECT_TRUE(y.intact());
  }
}

TEST(PlainPointwise, EmbeddingForwardAndBackwardWithRepeatedIds) {
  const int64_t V = 11, C = 77, T = 300;
  std::vector<int32_t> ids(T);
  for (int64_t t = 0; t < T; ++t) ids[t] = static_cast<int32_t>((t * 7 + t / 5) % V);
  const std::vector<float> table = random_floats(V * C, 3), dout = random_floats(T * C, 4);
  Guarded out(T * C);
  plain::embedding_forward(out.data(), ids.data(), table.data(), T, C);
  std::vector<double> want(T * C);
  ref::embedding_forward(want.data(), ids.data(), to_double(table).data(), T, C);
  EXPECT_EQ(rel_err(out.values(), want), 0.0);
  EXPECT_TRUE(out.intact());

  const std::vector<float> dtable0 = random_floats(V * C, 5);
  Guarded dtable(dtable0);
  plain::embedding_backward(dtable.data(), dout.data(), ids.data(), T, C);
  std::vector<double> want_d = to_double(dtable0);
  ref::embedding_backward(want_d.data(), to_double(dout).data(), ids.data(), T, C);
  EXPECT_LT(rel_err(dtable.values(), want_d), kPointwiseTol);
  EXPECT_TRUE(dtable.intact());
}

TEST(PlainPointwise, EmbeddingRejectsNegativeIds) {
  std::vector<int32_t> ids = {0, -2};
  std::vector<float> table(8), out(8);
  EXPECT_THROW(plain::embedding_forward(out.data(), ids.data(), table.data(), 2, 4), Error);
  EXPECT_THROW(plain::embedding_backward(table.data(), out.data(), ids.data(), 2, 4), Error);
}

struct NormCase {
  int64_t N, C;
};

TEST(PlainPointwise, RmsNormForwardBackwardMatchesRefAndFused) {
  // (C = 1 is left out: there dx is pure cancellation, ~eps, and no relative error is meaningful.)
  for (NormCase nc : {NormCase{1, 3}, NormCase{7, 33}, NormCase{129, 64}, NormCase{300, 257}}) {
    const int64_t N = nc.N, C = nc.C;
    const float eps = 1e-6f;
    const std::vector<float> x = random_floats(N * C, 10 + N), w = random_floats(C, 11, 0.5, 1.5),
                             dy = random_floats(N * C, 12), dw0 = random_floats(C, 13);
    Guarded y(N * C), rstd(N);
    plain::rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C, eps);
    std::vector<double> y_ref(N * C), rstd_ref(N);
    ref::rmsnorm_forward(y_ref.data(), rstd_ref.data(), to_double(x).data(), to_double(w).data(), N, C,
                         static_cast<double>(eps));
    EXPECT_LT(rel_err(y.values(), y_ref), kPointwiseTol) << "N=" << N << " C=" << C;
    EXPECT_LT(rel_err(rstd.values(), rstd_ref), kPointwiseTol);
    EXPECT_TRUE(y.intact() && rstd.intact());

    std::vector<float> ws(plain::rmsnorm_backward_ws_floats(N, C));
    Guarded dx(N * C), dw(dw0);
    plain::rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), rstd.data(), N, C, ws.data());
    std::vector<double> dx_ref(N * C), dw_ref = to_double(dw0);
    ref::rmsnorm_backward(dx_ref.data(), dw_ref.data(), to_double(dy).data(), to_double(x).data(),
                          to_double(w).data(), rstd_ref.data(), N, C);
    EXPECT_LT(rel_err(dx.values(), dx_ref), kPointwiseTol) << "N=" << N << " C=" << C;
    EXPECT_LT(rel_err(dw.values(), dw_ref), kPointwiseTol);
    EXPECT_TRUE(dx.intact() && dw.intact());

    // The fused kernels on the same inputs (a cross-check of both).
    std::vector<float> fy(N * C), frstd(N), fdx(N * C), fdw = dw0, fws(ops::rmsnorm_backward_ws_floats(N, C));
    ops::rmsnorm_forward(fy.data(), frstd.data(), x.data(), w.data(), N, C, eps);
    ops::rmsnorm_backward(fdx.data(), fdw.data(), dy.data(), x.data(), w.data(), frstd.data(), N, C, fws.data());
    EXPECT_LT(rel_err(y.values(), fy), kPointwiseTol);
    EXPECT_LT(rel_err(dx.values(), fdx), kPointwiseTol);
    EXPECT_LT(rel_err(dw.values(), fdw), kPointwiseTol);
  }
}

TEST(PlainPointwise, RmsNormInPlaceAliasing) {
  const int64_t N = 9, C = 45;
  const std::vector<float> x = random_floats(N * C, 20), w = random_floats(C, 21), dy = random_floats(N * C, 22);
  std::vector<float> y(N * C), rstd(N), in_place = x, rstd2(N);
  plain::rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C, 1e-5f);
  plain::rmsnorm_forward(in_place.data(), rstd2.data(), in_place.data(), w.data(), N, C, 1e-5f);  // y aliases x
  EXPECT_LT(rel_err(in_place, y), 1e-6);
  EXPECT_LT(rel_err(rstd2, rstd), 1e-6);

  std::vector<float> ws(plain::rmsnorm_backward_ws_floats(N, C)), dx(N * C), dw(C, 0.0f), dw2(C, 0.0f);
  std::vector<float> grad = dy;
  plain::rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), rstd.data(), N, C, ws.data());
  plain::rmsnorm_backward(grad.data(), dw2.data(), grad.data(), x.data(), w.data(), rstd.data(), N, C,
                          ws.data());  // dx aliases dy
  EXPECT_EQ(rel_err(grad, dx), 0.0);
  EXPECT_EQ(rel_err(dw2, dw), 0.0);
}

TEST(PlainPointwise, RopeForwardBackwardMatchesRefAndFused) {
  const int64_t T = 37, nh = 3, D = 18, P = 50, half = D / 2;
  std::vector<float> cos_t(P * half), sin_t(P * half);
  for (int64_t p = 0; p < P; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double angle = p * std::pow(10000.0, -2.0 * i / D);
      cos_t[p * half + i] = static_cast<float>(std::cos(angle));
      sin_t[p * half + i] = static_cast<float>(std::sin(angle));
    }
  std::vector<int32_t> pos(T);
  for (int64_t t = 0; t < T; ++t) pos[t] = static_cast<int32_t>(t < 20 ? t : (t - 20) * 2);  // two sequences
  const std::vector<float> x0 = random_floats(T * nh * D, 30);
  for (bool backward : {false, true}) {
    Guarded x(x0);
    std::vector<double> want = to_double(x0);
    std::vector<float> fused = x0;
    if (!backward) {
      plain::rope_forward(x.data(), pos.data(), cos_t.data(), sin_t.data(), T, nh, D);
      ref::rope_forward(want.data(), pos.data(), to_double(cos_t).data(), to_double(sin_t).data(), T, nh, D);
      ops::rope_forward(fused.data(), pos.data(), cos_t.data(), sin_t.data(), T, nh, D);
    } else {
      plain::rope_backward(x.data(), pos.data(), cos_t.data(), sin_t.data(), T, nh, D);
      ref::rope_backward(want.data(), pos.data(), to_double(cos_t).data(), to_double(sin_t).data(), T, nh, D);
      ops::rope_backward(fused.data(), pos.data(), cos_t.data(), sin_t.data(), T, nh, D);
    }
    EXPECT_LT(rel_err(x.values(), want), 1e-6) << (backward ? "backward" : "forward");
    EXPECT_LT(rel_err(x.values(), fused), 1e-6);
    EXPECT_TRUE(x.intact());
  }
}

TEST(PlainPointwise, RopeRejectsOddHeadDimAndNegativePositions) {
  std::vector<float> x(12), table(8);
  std::vector<int32_t> pos = {0, -1};
  std::vector<int32_t> ok = {0, 1};
  EXPECT_THROW(plain::rope_forward(x.data(), ok.data(), table.data(), table.data(), 2, 2, 3), Error);
  EXPECT_THROW(plain::rope_backward(x.data(), pos.data(), table.data(), table.data(), 2, 1, 4), Error);
}

TEST(PlainPointwise, SwigluForwardBackwardMatchesRefAndFused) {
  for (int64_t F : {1, 19, 160}) {
    const int64_t T = 41;
    const std::vector<float> gu = random_floats(T * 2 * F, 40 + F, -4.0, 4.0), dout = random_floats(T * F, 41);
    Guarded out(T * F), dgu(T * 2 * F);
    plain::swiglu_forward(out.data(), gu.data(), T, F);
    plain::swiglu_backward(dgu.data(), dout.data(), gu.data(), T, F);
    std::vector<double> out_ref(T * F), dgu_ref(T * 2 * F);
    ref::swiglu_forward(out_ref.data(), to_double(gu).data(), T, F);
    ref::swiglu_backward(dgu_ref.data(), to_double(dout).data(), to_double(gu).data(), T, F);
    EXPECT_LT(rel_err(out.values(), out_ref), kPointwiseTol) << "F=" << F;
    EXPECT_LT(rel_err(dgu.values(), dgu_ref), kPointwiseTol) << "F=" << F;
    EXPECT_TRUE(out.intact() && dgu.intact());
    std::vector<float> fout(T * F), fdgu(T * 2 * F);
    ops::swiglu_forward(fout.data(), gu.data(), T, F);
    ops::swiglu_backward(fdgu.data(), dout.data(), gu.data(), T, F);
    EXPECT_LT(rel_err(out.values(), fout), kPointwiseTol);
    EXPECT_LT(rel_err(dgu.values(), fdgu), kPointwiseTol);
  }
}

// The parameter-gradient reductions (RMSNorm dw, embedding dtable) sum in a fixed order: the same bits
// for 1 and 3 threads.
TEST(PlainPointwise, ReductionsDoNotDependOnThreadCount) {
  const int64_t N = 700, C = 200, V = 5;  // N * C above the grain, so the passes do run threaded
  const std::vector<float> x = random_floats(N * C, 70), w = random_floats(C, 71), dy = random_floats(N * C, 72);
  std::vector<int32_t> ids(N);
  for (int64_t t = 0; t < N; ++t) ids[t] = static_cast<int32_t>(t % V);
  std::vector<std::vector<float>> dws, dtables;
  const int saved = num_threads();
  for (int threads : {1, 3}) {
    set_num_threads(threads);
    std::vector<float> y(N * C), rstd(N), dx(N * C), dw(C, 0.0f), dtable(V * C, 0.0f);
    std::vector<float> ws(plain::rmsnorm_backward_ws_floats(N, C));
    plain::rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C, 1e-6f);
    plain::rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), rstd.data(), N, C, ws.data());
    plain::embedding_backward(dtable.data(), dy.data(), ids.data(), N, C);
    dws.push_back(dw);
    dtables.push_back(dtable);
  }
  set_num_threads(saved);
  EXPECT_EQ(dws[0], dws[1]);
  EXPECT_EQ(dtables[0], dtables[1]);
}

}  // namespace
}  // namespace grpo
