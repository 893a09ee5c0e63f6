// The plain row primitives (kernels/plain/vec.h) on both instruction sets (AVX-512 and AVX2, forced
// through set_isa_for_tests) against double precision, on lengths that exercise the vector tails.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/backend.h"
#include "kernels/plain/vec.h"
#include "kernels_plain/plain_test_util.h"

namespace grpo {
namespace {

using plain_test::random_floats;
using plain_test::rel_err;

class PlainVec : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!isa_available(GetParam())) GTEST_SKIP() << isa_name(GetParam()) << " not available (CPU or GRPO_ISA)";
    set_isa_for_tests(GetParam());
  }
  void TearDown() override { set_isa_for_tests(std::nullopt); }
};

TEST_P(PlainVec, ElementwiseOpsMatchDouble) {
  for (int64_t n : {1, 7, 16, 37}) {
    const std::vector<float> a = random_floats(n, 1, -5, 5), b = random_floats(n, 2, -5, 5);
    std::vector<float> out(n + 1, 42.0f);  // one sentinel after the end
    std::vector<double> want(n);
    auto expect = [&](const char* what, double tol) {
      EXPECT_LE(rel_err(std::vector<float>(out.begin(), out.begin() + n), want), tol) << what << " n=" << n;
      EXPECT_EQ(out[n], 42.0f) << what << " wrote past the end, n=" << n;
    };
    plain::vec::add(out.data(), a.data(), b.data(), n);
    for (int64_t i = 0; i < n; ++i) want[i] = double{a[i]} + b[i];
    expect("add", 1e-7);
    plain::vec::sub(out.data(), a.data(), b.data(), n);
    for (int64_t i = 0; i < n; ++i) want[i] = double{a[i]} - b[i];
    expect("sub", 1e-7);
    plain::vec::mul(out.data(), a.data(), b.data(), n);
    for (int64_t i = 0; i < n; ++i) want[i] = double{a[i]} * b[i];
    expect("mul", 1e-7);
    plain::vec::add_scalar(out.data(), a.data(), 0.5f, n);
    for (int64_t i = 0; i < n; ++i) want[i] = double{a[i]} + 0.5;
    expect("add_scalar", 1e-7);
    plain::vec::mul_scalar(out.data(), a.data(), -3.0f, n);
    for (int64_t i = 0; i < n; ++i) want[i] = double{a[i]} * -3.0;
    expect("mul_scalar", 1e-7);
    plain::vec::square(out.data(), a.data(), n);
    for (int64_t i = 0; i < n; ++i) want[i] = double{a[i]} * a[i];
    expect("square", 1e-7);
    plain::vec::exp(out.data(), a.data(), n);
    for (int64_t i = 0; i < n; ++i) want[i] = std::exp(double{a[i]});
    expect("exp", 2e-6);
    plain::vec::sigmoid(out.data(), a.data(), n);
    for (int64_t i = 0; i < n; ++i) want[i] = 1.0 / (1.0 + std::exp(-double{a[i]}));
    expect("sigmoid", 2e-6);
    plain::vec::silu_backward(out.data(), b.data(), a.data(), b.data(), n);  // b stands in for the sigmoid values
    for (int64_t i = 0; i < n; ++i) want[i] = double{b[i]} * b[i] * (1.0 + double{a[i]} * (1.0 - b[i]));
    expect("silu_backward", 1e-6);
    plain::vec::fill(out.data(), -2.0f, n);
    for (int64_t i = 0; i < n; ++i) want[i] = -2.0;
    expect("fill", 0.0);
    double s = 0, d = 0, m = -INFINITY;
    for (int64_t i = 0; i < n; ++i) s += a[i], d += double{a[i]} * b[i], m = std::max(m, double{a[i]});
    EXPECT_NEAR(plain::vec::sum(a.data(), n), s, 1e-5 * n) << "n=" << n;
    EXPECT_NEAR(plain::vec::dot(a.data(), b.data(), n), d, 1e-5 * n) << "n=" << n;
    EXPECT_EQ(plain::vec::max(a.data(), n), m) << "n=" << n;
  }
}

TEST_P(PlainVec, SoftmaxAndLogSoftmaxWithMaskedEntries) {
  for (int64_t n : {1, 5, 16, 41}) {
    std::vector<float> a = random_floats(n, 3, -8, 8);
    for (int64_t i = 2; i < n; i += 3) a[i] = -INFINITY;  // masked entries (a[0] never is)
    double m = -INFINITY, s = 0;
    for (float x : a) m = std::max(m, double{x});
    for (float x : a) s += std::exp(double{x} - m);
    const double lse = m + std::log(s);
    std::vector<float> p(n), logp(n);
    std::vector<double> p_ref(n), logp_ref;
    for (int64_t i = 0; i < n; ++i) p_ref[i] = std::exp(double{a[i]} - lse);
    EXPECT_NEAR(plain::vec::softmax(p.data(), a.data(), n), lse, 1e-5) << "n=" << n;
    EXPECT_LT(rel_err(p, p_ref), 2e-6) << "n=" << n;
    for (int64_t i = 2; i < n; i += 3) EXPECT_EQ(p[i], 0.0f) << "masked entry " << i << " of " << n;
    const std::vector<float> finite = random_floats(n, 4, -8, 8);
    double fm = -INFINITY, fs = 0;
    for (float x : finite) fm = std::max(fm, double{x});
    for (float x : finite) fs += std::exp(double{x} - fm);
    const double flse = fm + std::log(fs);
    for (float x : finite) logp_ref.push_back(double{x} - flse);
    EXPECT_NEAR(plain::vec::log_softmax(logp.data(), finite.data(), n), flse, 1e-5) << "n=" << n;
    EXPECT_LT(rel_err(logp, logp_ref), 1e-6) << "n=" << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, PlainVec, ::testing::Values(Isa::Avx512, Isa::Avx2),
                         [](const auto& info) { return info.param == Isa::Avx512 ? "Avx512" : "Avx2"; });

}  // namespace
}  // namespace grpo
