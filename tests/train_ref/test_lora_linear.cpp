// The LoRA linear (model/linear.h) against a plain double-precision loop and central finite differences:
// forward y += s (x A^T) B^T into a strided slice of a packed output, backward dx (+=), dA and dB.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.h"
#include "model/linear.h"

using namespace grpo;

namespace {

struct Problem {
  int64_t T = 5, N = 6, K = 7, r = 3, ld = 10, off = 2;  // y is [T, ld]; the module writes columns [off, off+N)
  float s = 1.7f;
  std::vector<float> x, A, B, wy;  // wy [T, ld]: the loss is sum(wy * y)
};

Problem make_problem() {
  Problem p;
  Rng rng(11);
  auto fill = [&](std::vector<float>& v, int64_t n) {
    v.resize(n);
    for (float& f : v) f = static_cast<float>(rng.uniform() * 2 - 1);
  };
  fill(p.x, p.T * p.K);
  fill(p.A, p.r * p.K);
  fill(p.B, p.N * p.r);
  fill(p.wy, p.T * p.ld);
  return p;
}

// sum(wy * (s (x A^T) B^T)) over the module's columns, in double.
double loss(const Problem& p, const std::vector<float>& x, const std::vector<float>& A, const std::vector<float>& B) {
  double L = 0;
  for (int64_t t = 0; t < p.T; ++t)
    for (int64_t n = 0; n < p.N; ++n) {
      double y = 0;
      for (int64_t j = 0; j < p.r; ++j) {
        double u = 0;
        for (int64_t k = 0; k < p.K; ++k) u += double(x[t * p.K + k]) * A[j * p.K + k];
        y += u * B[n * p.r + j];
      }
      L += p.wy[t * p.ld + p.off + n] * p.s * y;
    }
  return L;
}

TEST(LoraLinear, ForwardAddsIntoItsColumnsOnly) {
  Problem p = make_problem();
  std::vector<float> y(p.T * p.ld, 0.5f), u(p.T * p.r), tmp(p.T * p.N);
  lora_linear_forward(y.data() + p.off, p.ld, p.x.data(), p.A.data(), p.B.data(), u.data(), tmp.data(), p.T, p.N, p.K,
                      p.r, p.s);
  for (int64_t t = 0; t < p.T; ++t)
    for (int64_t c = 0; c < p.ld; ++c) {
      double want = 0.5;
      if (c >= p.off && c < p.off + p.N)
        for (int64_t j = 0; j < p.r; ++j) {
          double uj = 0;
          for (int64_t k = 0; k < p.K; ++k) uj += double(p.x[t * p.K + k]) * p.A[j * p.K + k];
          want += p.s * uj * p.B[(c - p.off) * p.r + j];
        }
      EXPECT_NEAR(y[t * p.ld + c], want, 1e-5) << t << "," << c;
    }
}

TEST(LoraLinear, BackwardMatchesFiniteDifferences) {
  Problem p = make_problem();
  std::vector<float> y(p.T * p.ld, 0.0f), u(p.T * p.r), du(p.T * p.r), tmp(p.T * std::max(p.N, p.K));
  lora_linear_forward(y.data() + p.off, p.ld, p.x.data(), p.A.data(), p.B.data(), u.data(), tmp.data(), p.T, p.N, p.K,
                      p.r, p.s);
  std::vector<float> dx(p.T * p.K, 0.25f), dA(p.r * p.K, 0.0f), dB(p.N * p.r, 0.0f);
  // dy = d loss / dy = wy (the whole packed row; the module reads its columns).
  lora_linear_backward(dx.data(), dA.data(), dB.data(), p.wy.data() + p.off, p.ld, p.x.data(), p.A.data(), p.B.data(),
                       u.data(), du.data(), tmp.data(), p.T, p.N, p.K, p.r, p.s);
  // The loss is linear in each of x, A, B alone: central differences are exact up to rounding.
  auto check = [&](std::vector<float>& v, const std::vector<float>& grad, float base, const char* what) {
    for (size_t i = 0; i < v.size(); ++i) {
      const float keep = v[i], h = 0.01f;
      v[i] = keep + h;
      const double up = loss(p, p.x, p.A, p.B);
      v[i] = keep - h;
      const double down = loss(p, p.x, p.A, p.B);
      v[i] = keep;
      const double fd = (up - down) / (2.0 * h);
      EXPECT_NEAR(grad[i] - base, fd, 1e-4 * std::max(1.0, std::fabs(fd))) << what << " " << i;
    }
  };
  check(p.x, dx, 0.25f, "dx (accumulated onto 0.25)");
  check(p.A, dA, 0.0f, "dA");
  check(p.B, dB, 0.0f, "dB");
  // Without gradient buffers only dx is computed.
  std::vector<float> dx2(p.T * p.K, 0.25f);
  lora_linear_backward(dx2.data(), nullptr, nullptr, p.wy.data() + p.off, p.ld, p.x.data(), p.A.data(), p.B.data(),
                       u.data(), du.data(), tmp.data(), p.T, p.N, p.K, p.r, p.s);
  EXPECT_EQ(dx, dx2);
}

}  // namespace
