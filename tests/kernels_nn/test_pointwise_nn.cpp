// Tests of the pointwise decoder kernels (add_inplace, embedding, RoPE, SwiGLU) and of the vector exp/exp2
// they rely on: CPU (both SIMD paths) vs the double reference on odd sizes, finite-difference gradients of
// the backward passes, guard bytes after every output, thread-count independence, and bad-input errors.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "kernels/ops.h"
#include "kernels/ref/ref_nn.h"
#include "nn_test_util.h"

using namespace grpo;
using namespace nn_test;

namespace {

// exp/exp2 of nn_simd.h against libm over the range the kernels use.
NN_BEGIN_AVX512
void exp_avx512(float* y, const float* x, int64_t n, bool base2) {
  for (int64_t i = 0; i < n; i += 16) {
    const auto v = cpu::Vec512::load_n(x + i, std::min<int64_t>(16, n - i));
    cpu::Vec512::store_n(y + i, base2 ? cpu::Vec512::exp2(v) : cpu::Vec512::exp(v), std::min<int64_t>(16, n - i));
  }
}
NN_END_TARGET
NN_BEGIN_AVX2
void exp_avx2(float* y, const float* x, int64_t n, bool base2) {
  for (int64_t i = 0; i < n; i += 8) {
    const auto v = cpu::Vec256::load_n(x + i, std::min<int64_t>(8, n - i));
    cpu::Vec256::store_n(y + i, base2 ? cpu::Vec256::exp2(v) : cpu::Vec256::exp(v), std::min<int64_t>(8, n - i));
  }
}
NN_END_TARGET

TEST(NnSimd, ExpAndExp2MatchLibm) {
  std::vector<float> x;
  for (float v = -87.0f; v <= 88.0f; v += 0.0137f) x.push_back(v);
  const int64_t n = static_cast<int64_t>(x.size());
  for (auto isa : available_isas()) {
    SCOPED_TRACE(isa_name(isa));
    for (bool base2 : {false, true}) {
      std::vector<float> y(n);
      (isa == Isa::Avx512 ? exp_avx512 : exp_avx2)(y.data(), x.data(), n, base2);
      double worst = 0;
      for (int64_t i = 0; i < n; ++i) {
        if (base2 && x[i] < -126.0f) continue;
        const double want = base2 ? std::exp2(double{x[i]}) : std::exp(double{x[i]});
        worst = std::max(worst, std::abs(y[i] - want) / want);
      }
      // Cephes polynomials: a few float ulps (1 ulp = 6e-8) on the reduced range.
      EXPECT_LT(worst, 5e-7) << (base2 ? "exp2" : "exp");
    }
    // exp2 is exactly 0 below -126 (the masked scores of attention are -inf) and NaN stays NaN.
    const float special[4] = {-INFINITY, -200.0f, NAN, 0.0f};
    float out[4];
    (isa == Isa::Avx512 ? exp_avx512 : exp_avx2)(out, special, 4, true);
    EXPECT_EQ(out[0], 0.0f);
    EXPECT_EQ(out[1], 0.0f);
    EXPECT_TRUE(std::isnan(out[2]));
    EXPECT_EQ(out[3], 1.0f);
    (isa == Isa::Avx512 ? exp_avx512 : exp_avx2)(out, special, 4, false);
    EXPECT_TRUE(std::isnan(out[2]));
  }
}

TEST(NnAdd, MatchesReferenceWithGuards) {
  for (auto isa : available_isas()) {
    ForceIsa force(isa);
    for (int64_t n : {int64_t{1}, int64_t{37}, int64_t{100003}}) {
      SCOPED_TRACE(std::string(isa_name(isa)) + " n=" + std::to_string(n));
      const auto x = randn(n, 1), y0 = randn(n, 2);
      Guarded y(y0);
      ops::add_inplace(y.data(), x.data(), n);
      auto want = to_double(y0);
      ref::add_inplace(want.data(), to_double(x).data(), n);
      EXPECT_LT(max_rel_err(y.vec(), want), 1e-7);  // one float rounding per element
      EXPECT_TRUE(y.guards_intact());
    }
  }
}

// y += alpha u V into strided rows (a module's columns of a packed output), ranks 1..33, against the double
// reference; a row's result must not depend on how many rows the call has (batch invariance).
TEST(NnAddLowRank, MatchesReferenceStridedAndRowInvariant) {
  for (auto isa : available_isas())
    for (int64_t r : {int64_t{1}, int64_t{16}, int64_t{33}})
      for (int64_t N : {int64_t{7}, int64_t{1500}}) {
        ForceIsa force(isa);
        SCOPED_TRACE(std::string(isa_name(isa)) + " r=" + std::to_string(r) + " N=" + std::to_string(N));
        const int64_t T = 37, ldy = N + 5, ldu = r + 3, ldv = N + 2;
        const auto u = randn(T * ldu, 1), V = randn(r * ldv, 2), y0 = randn(T * ldy, 3);
        Guarded y(y0);
        ops::add_low_rank(y.data(), ldy, u.data(), ldu, V.data(), ldv, T, N, r, 0.75f);
        auto want = to_double(y0);
        ref::add_low_rank(want.data(), ldy, to_double(u).data(), ldu, to_double(V).data(), ldv, T, N, r, 0.75);
        const std::vector<float> got = y.vec();
        double worst = 0;  // error relative to the sum of |terms|, as the sum may cancel
        for (int64_t t = 0; t < T; ++t)
          for (int64_t n = 0; n < ldy; ++n) {
            double mag = std::abs(y0[t * ldy + n]);
            if (n < N)
              for (int64_t j = 0; j < r; ++j) mag += 0.75 * std::abs(double{u[t * ldu + j]} * V[j * ldv + n]);
            worst = std::max(worst, std::abs(got[t * ldy + n] - want[t * ldy + n]) / mag);
          }
        EXPECT_LT(worst, 1e-6 * (r + 1));
        EXPECT_TRUE(y.guards_intact());
        // The same rows in a call of 3 rows give the same bits.
        for (int64_t t0 : {int64_t{0}, int64_t{20}}) {
          std::vector<float> part(y0.begin() + t0 * ldy, y0.begin() + (t0 + 3) * ldy);
          ops::add_low_rank(part.data(), ldy, u.data() + t0 * ldu, ldu, V.data(), ldv, 3, N, r, 0.75f);
          for (int64_t i = 0; i < 3 * ldy; ++i) ASSERT_EQ(part[i], got[t0 * ldy + i]) << "row " << t0 + i / ldy;
        }
      }
}

// The same product with V given transposed (W = V^T [N, r], strided rows, as a LoRA B matrix is stored): the
// bits of add_low_rank on the transpose, at ranks past one 128-wide chunk of the kernel's local block, and a
// row's result independent of the rows in the call.
TEST(NnAddLowRank, TransposedGivesTheBitsOfTheTranspose) {
  for (auto isa : available_isas())
    for (int64_t r : {int64_t{1}, int64_t{32}, int64_t{200}})
      for (int64_t N : {int64_t{7}, int64_t{64}, int64_t{1500}}) {
        ForceIsa force(isa);
        SCOPED_TRACE(std::string(isa_name(isa)) + " r=" + std::to_string(r) + " N=" + std::to_string(N));
        const int64_t T = 19, ldy = N + 5, ldu = r + 3, ldw = r + 2;
        const auto u = randn(T * ldu, 4), W = randn(N * ldw, 5), y0 = randn(T * ldy, 6);
        std::vector<float> V(r * N);
        for (int64_t n = 0; n < N; ++n)
          for (int64_t j = 0; j < r; ++j) V[j * N + n] = W[n * ldw + j];
        Guarded y(y0);
        ops::add_low_rank_t(y.data(), ldy, u.data(), ldu, W.data(), ldw, T, N, r, 0.75f);
        std::vector<float> want = y0;
        ops::add_low_rank(want.data(), ldy, u.data(), ldu, V.data(), N, T, N, r, 0.75f);
        const std::vector<float> got = y.vec();
        for (int64_t i = 0; i < T * ldy; ++i) ASSERT_EQ(got[i], want[i]) << "element " << i;
        EXPECT_TRUE(y.guards_intact());
        std::vector<float> one(y0.begin() + 7 * ldy, y0.begin() + 8 * ldy);  // row 7 alone
        ops::add_low_rank_t(one.data(), ldy, u.data() + 7 * ldu, ldu, W.data(), ldw, 1, N, r, 0.75f);
        for (int64_t i = 0; i < ldy; ++i) ASSERT_EQ(one[i], want[7 * ldy + i]) << "row 7, column " << i;
      }
}

TEST(NnEmbedding, ForwardAndDeterministicBackward) {
  const int64_t V = 11, T = 9;
  const std::vector<int32_t> ids{3, 0, 10, 3, 3, 7, 0, 10, 1};  // repeats: the backward must sum them
  for (auto isa : available_isas())
    for (int64_t C : {int64_t{37}, int64_t{200}}) {
      ForceIsa force(isa);
      SCOPED_TRACE(std::string(isa_name(isa)) + " C=" + std::to_string(C));
      const auto table = randn(V * C, 3), dout = randn(T * C, 4), dtable0 = randn(V * C, 5);
      Guarded out(T * C);
      ops::embedding_forward(out.data(), ids.data(), table.data(), T, C);
      std::vector<double> want(T * C);
      ref::embedding_forward(want.data(), ids.data(), to_double(table).data(), T, C);
      EXPECT_EQ(max_rel_err(out.vec(), want), 0.0);  // a copy is exact
      EXPECT_TRUE(out.guards_intact());

      Guarded dtable(dtable0);
      ops::embedding_backward(dtable.data(), dout.data(), ids.data(), T, C);
      auto dwant = to_double(dtable0);
      ref::embedding_backward(dwant.data(), to_double(dout).data(), ids.data(), T, C);
      EXPECT_LT(max_rel_err(dtable.vec(), dwant), 1e-6);  // up to 4 float additions per entry
      EXPECT_TRUE(dtable.guards_intact());

      // d/dtable sum(dout * embedding(table)) by central differences (the backward accumulates: +=).
      auto td = to_double(table);
      const auto doutd = to_double(dout);
      auto loss = [&] {
        std::vector<double> y(T * C);
        ref::embedding_forward(y.data(), ids.data(), td.data(), T, C);
        double l = 0;
        for (int64_t i = 0; i < T * C; ++i) l += doutd[i] * y[i];
        return l;
      };
      std::vector<float> grad(V * C);
      for (int64_t i = 0; i < V * C; ++i) grad[i] = dtable.data()[i] - dtable0[i];
      expect_matches_finite_differences(loss, td, grad, 300, 1e-6, "embedding dtable");

      // Same bits with 1 and 2 threads.
      const int saved = omp_get_max_threads();
      std::vector<float> by_threads[2];
      for (int threads : {1, 2}) {
        omp_set_num_threads(threads);
        by_threads[threads - 1] = dtable0;
        ops::embedding_backward(by_threads[threads - 1].data(), dout.data(), ids.data(), T, C);
      }
      omp_set_num_threads(saved);
      EXPECT_EQ(by_threads[0], by_threads[1]);
    }
}

TEST(NnEmbedding, RejectsNegativeIds) {
  const std::vector<int32_t> ids{0, -1};
  std::vector<float> table(4, 1.0f), out(4);
  EXPECT_THROW(ops::embedding_forward(out.data(), ids.data(), table.data(), 2, 2), Error);
  EXPECT_THROW(ops::embedding_backward(table.data(), out.data(), ids.data(), 2, 2), Error);
}

// cos/sin tables [P, D/2] for theta 10000.
void rope_tables(std::vector<float>& cos, std::vector<float>& sin, int64_t P, int64_t D) {
  cos.resize(P * D / 2);
  sin.resize(P * D / 2);
  for (int64_t p = 0; p < P; ++p)
    for (int64_t i = 0; i < D / 2; ++i) {
      const double angle = p * std::pow(10000.0, -2.0 * i / D);
      cos[p * D / 2 + i] = static_cast<float>(std::cos(angle));
      sin[p * D / 2 + i] = static_cast<float>(std::sin(angle));
    }
}

TEST(NnRope, ForwardBackwardMatchReferenceAndFiniteDifferences) {
  const int64_t P = 40;
  for (auto isa : available_isas())
    for (auto [T, nh, D] : {std::tuple<int64_t, int64_t, int64_t>{5, 3, 24}, {1, 1, 2}, {7, 2, 130}}) {
      ForceIsa force(isa);
      SCOPED_TRACE(std::string(isa_name(isa)) + " T=" + std::to_string(T) + " nh=" + std::to_string(nh) +
                   " D=" + std::to_string(D));
      std::vector<float> cos, sin;
      rope_tables(cos, sin, P, D);
      std::vector<int32_t> pos(T);
      for (int64_t t = 0; t < T; ++t) pos[t] = static_cast<int32_t>((t * 7 + 3) % P);
      const auto x0 = randn(T * nh * D, 6), dy = randn(T * nh * D, 7);
      const auto cos_d = to_double(cos), sin_d = to_double(sin);

      Guarded x(x0);
      ops::rope_forward(x.data(), pos.data(), cos.data(), sin.data(), T, nh, D);
      auto want = to_double(x0);
      ref::rope_forward(want.data(), pos.data(), cos_d.data(), sin_d.data(), T, nh, D);
      EXPECT_LT(max_rel_err(x.vec(), want), 1e-6);  // two products and a sum per element
      EXPECT_TRUE(x.guards_intact());

      Guarded dx(dy);
      ops::rope_backward(dx.data(), pos.data(), cos.data(), sin.data(), T, nh, D);
      auto dwant = to_double(dy);
      ref::rope_backward(dwant.data(), pos.data(), cos_d.data(), sin_d.data(), T, nh, D);
      EXPECT_LT(max_rel_err(dx.vec(), dwant), 1e-6);
      EXPECT_TRUE(dx.guards_intact());

      // d/dx sum(dy * rope(x)) by central differences of the double reference; float backward: 1e-5.
      auto xd = to_double(x0);
      const auto dyd = to_double(dy);
      auto loss = [&] {
        auto y = xd;
        ref::rope_forward(y.data(), pos.data(), cos_d.data(), sin_d.data(), T, nh, D);
        double l = 0;
        for (size_t i = 0; i < y.size(); ++i) l += dyd[i] * y[i];
        return l;
      };
      expect_matches_finite_differences(loss, xd, dx.vec(), 200, 1e-5, "rope dx");
    }
}

TEST(NnRope, RejectsOddHeadDimAndNegativePositions) {
  std::vector<float> x(6), cs(3);
  std::vector<int32_t> pos{0, -2};
  EXPECT_THROW(ops::rope_forward(x.data(), pos.data(), cs.data(), cs.data(), 2, 1, 3), Error);
  EXPECT_THROW(ops::rope_backward(x.data(), pos.data(), cs.data(), cs.data(), 2, 1, 2), Error);
}

TEST(NnSwiglu, ForwardBackwardMatchReferenceAndFiniteDifferences) {
  for (auto isa : available_isas())
    for (auto [T, F] : {std::pair<int64_t, int64_t>{3, 37}, {1, 1}, {4, 40}, {2, 1536}}) {
      ForceIsa force(isa);
      SCOPED_TRACE(std::string(isa_name(isa)) + " T=" + std::to_string(T) + " F=" + std::to_string(F));
      auto gu = randn(T * 2 * F, 8, 3.0f);  // gates spread over [-10, 10]: both tails of the sigmoid
      const auto dout = randn(T * F, 9);
      Guarded out(T * F);
      ops::swiglu_forward(out.data(), gu.data(), T, F);
      std::vector<double> want(T * F);
      const auto gud = to_double(gu);
      ref::swiglu_forward(want.data(), gud.data(), T, F);
      // Vector exp (~2e-7 relative) and a division, relative to the largest output: 2e-6.
      EXPECT_LT(max_rel_err(out.vec(), want), 2e-6);
      EXPECT_TRUE(out.guards_intact());

      Guarded dgu(T * 2 * F);
      ops::swiglu_backward(dgu.data(), dout.data(), gu.data(), T, F);
      std::vector<double> dwant(T * 2 * F);
      ref::swiglu_backward(dwant.data(), to_double(dout).data(), gud.data(), T, F);
      EXPECT_LT(max_rel_err(dgu.vec(), dwant), 2e-6);
      EXPECT_TRUE(dgu.guards_intact());

      auto x = gud;
      const auto dd = to_double(dout);
      auto loss = [&] {
        std::vector<double> y(T * F);
        ref::swiglu_forward(y.data(), x.data(), T, F);
        double l = 0;
        for (int64_t i = 0; i < T * F; ++i) l += dd[i] * y[i];
        return l;
      };
      expect_matches_finite_differences(loss, x, dgu.vec(), 300, 1e-5, "swiglu dgu");
    }
}

}  // namespace
