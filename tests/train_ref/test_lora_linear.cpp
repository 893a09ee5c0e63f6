// The LoRA linear (model/linear.h) against a plain double-precision loop and central finite differences:
// forward y += s (x A^T) B^T into a strided slice of a packed output, backward dx (+=), dA and dB; a group of
// linears reading one input (A matrices back to back, as q/k/v) against the same linears one by one; the
// group's bf16 operands (ComputeMode::BF16) against double sums of the same rounded operands.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "core/rng.h"
#include "model/linear.h"

using namespace grpo;

namespace {

// n values drawn uniformly from [-1, 1).
std::vector<float> uniform_values(Rng& rng, int64_t n) {
  std::vector<float> v(n);
  for (float& f : v) f = static_cast<float>(rng.uniform() * 2 - 1);
  return v;
}

struct Problem {
  int64_t T = 5, N = 6, K = 7, r = 3, ld = 10, off = 2;  // y is [T, ld]; the module writes columns [off, off+N)
  float s = 1.7f;
  std::vector<float> x, A, B, wy;  // wy [T, ld]: the loss is sum(wy * y)
};

Problem make_problem() {
  Problem p;
  Rng rng(11);
  auto fill = [&](std::vector<float>& v, int64_t n) { v = uniform_values(rng, n); };
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
  std::vector<float> y(p.T * p.ld, 0.5f), u(p.T * p.r);
  lora_linear_forward(y.data() + p.off, p.ld, p.x.data(), p.A.data(), p.B.data(), u.data(), p.T, p.N, p.K, p.r, p.s);
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
  std::vector<float> y(p.T * p.ld, 0.0f), u(p.T * p.r), du(p.T * p.r);
  lora_linear_forward(y.data() + p.off, p.ld, p.x.data(), p.A.data(), p.B.data(), u.data(), p.T, p.N, p.K, p.r, p.s);
  std::vector<float> dx(p.T * p.K, 0.25f), dA(p.r * p.K, 0.0f), dB(p.N * p.r, 0.0f);
  // dy = d loss / dy = wy (the whole packed row; the module reads its columns).
  lora_linear_backward(dx.data(), dA.data(), dB.data(), p.wy.data() + p.off, p.ld, p.x.data(), p.A.data(), p.B.data(),
                       u.data(), du.data(), p.T, p.N, p.K, p.r, p.s);
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
                       u.data(), du.data(), p.T, p.N, p.K, p.r, p.s);
  EXPECT_EQ(dx, dx2);
}

// Three linears of different widths reading one input and writing adjacent column ranges of one packed
// output (as q, k, v): the group's calls give what the linears give one at a time.
TEST(LoraLinear, GroupMatchesModulesOneByOne) {
  const int64_t T = 9, K = 11, r = 4, g = 3;
  const int64_t N[g] = {8, 4, 4}, col[g] = {0, 8, 12}, ld = 16;
  const float s = 0.6f;
  Rng rng(5);
  auto rnd = [&](int64_t n) { return uniform_values(rng, n); };
  const std::vector<float> x = rnd(T * K), A = rnd(g * r * K), dy = rnd(T * ld);
  std::vector<std::vector<float>> B(g);
  for (int j = 0; j < g; ++j) B[j] = rnd(N[j] * r);
  // The group.
  std::vector<float> y(T * ld, 0.5f), u(T * g * r), du(T * g * r), dx(T * K, 0.25f), dA(g * r * K, 0.0f);
  std::vector<std::vector<float>> dB(g);
  std::vector<LoraModule> mods;
  for (int j = 0; j < g; ++j) {
    dB[j].assign(N[j] * r, 0.0f);
    mods.push_back({B[j].data(), dB[j].data(), col[j], N[j]});
  }
  lora_group_forward(y.data(), ld, x.data(), A.data(), mods.data(), g, u.data(), T, K, r, s);
  lora_group_backward(dx.data(), dA.data(), dy.data(), ld, x.data(), A.data(), mods.data(), g, u.data(), du.data(), T,
                      K, r, s);
  // One at a time.
  std::vector<float> y1(T * ld, 0.5f), u1(T * r), du1(T * r), dx1(T * K, 0.25f), dA1(g * r * K, 0.0f);
  for (int j = 0; j < g; ++j) {
    std::vector<float> dB1(N[j] * r, 0.0f);
    const float* Aj = A.data() + j * r * K;
    lora_linear_forward(y1.data() + col[j], ld, x.data(), Aj, B[j].data(), u1.data(), T, N[j], K, r, s);
    lora_linear_backward(dx1.data(), dA1.data() + j * r * K, dB1.data(), dy.data() + col[j], ld, x.data(), Aj,
                         B[j].data(), u1.data(), du1.data(), T, N[j], K, r, s);
    for (int64_t i = 0; i < N[j] * r; ++i) EXPECT_NEAR(dB[j][i], dB1[i], 1e-5) << "dB of module " << j << " at " << i;
  }
  for (int64_t i = 0; i < T * ld; ++i) EXPECT_NEAR(y[i], y1[i], 1e-5) << "y " << i;
  for (int64_t i = 0; i < T * K; ++i) EXPECT_NEAR(dx[i], dx1[i], 1e-5) << "dx " << i;
  for (int64_t i = 0; i < g * r * K; ++i) EXPECT_NEAR(dA[i], dA1[i], 1e-5) << "dA " << i;
}

// Under ComputeMode::BF16 the group's GEMMs read bf16 operands: x A^T from the rounded x and A, dy_j B_j from
// the rounded dy and B_j, dy_j^T u_j from the rounded dy and u, du^T x from the rounded du and x, each summed
// in f32; y += s u B^T and dx += du A stay f32. Each is checked against a double sum of exactly those operands.
TEST(LoraLinear, GroupInBf16ReadsRoundedOperands) {
  const int64_t T = 9, K = 40, r = 4, g = 3;
  const int64_t N[g] = {24, 8, 8}, col[g] = {0, 24, 32}, ld = 40;
  const float s = 0.6f;
  Rng rng(7);
  auto rnd = [&](int64_t n) { return uniform_values(rng, n); };
  auto to_bf16 = [](const std::vector<float>& v) {
    std::vector<bf16_t> h(v.size());
    for (size_t i = 0; i < v.size(); ++i) h[i] = f32_to_bf16(v[i]);
    return h;
  };
  auto rounded = [](float f) { return double(bf16_to_f32(f32_to_bf16(f))); };
  const std::vector<float> x = rnd(T * K), A = rnd(g * r * K), dy = rnd(T * ld);
  const std::vector<bf16_t> x_bf = to_bf16(x), dy_bf = to_bf16(dy);
  std::vector<std::vector<float>> B(g), dB(g);
  std::vector<LoraModule> mods;
  for (int j = 0; j < g; ++j) {
    B[j] = rnd(N[j] * r);
    dB[j].assign(N[j] * r, 0.0f);
  }
  for (int j = 0; j < g; ++j) mods.push_back({B[j].data(), dB[j].data(), col[j], N[j]});
  std::vector<bf16_t> w_bf(g * r * K), u_bf(T * g * r), du_bf(T * g * r);
  const LoraBf16 bf{x_bf.data(), dy_bf.data(), w_bf.data(), u_bf.data(), du_bf.data()};
  std::vector<float> y(T * ld, 0.5f), u(T * g * r), du(T * g * r), dx(T * K, 0.25f), dA(g * r * K, 0.0f);
  lora_group_forward(y.data(), ld, x.data(), A.data(), mods.data(), g, u.data(), T, K, r, s, &bf);
  lora_group_backward(dx.data(), dA.data(), dy.data(), ld, x.data(), A.data(), mods.data(), g, u.data(), du.data(), T,
                      K, r, s, &bf);
  const int64_t gr = g * r;
  double u_moved = 0;  // how far the rounded operands moved u from its f32 value
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < gr; ++i) {
      double want = 0, exact = 0;
      for (int64_t k = 0; k < K; ++k) {
        want += rounded(x[t * K + k]) * rounded(A[i * K + k]);
        exact += double(x[t * K + k]) * A[i * K + k];
      }
      EXPECT_NEAR(u[t * gr + i], want, 1e-5) << "u " << t << "," << i;
      u_moved = std::max(u_moved, std::fabs(exact - u[t * gr + i]));
    }
  EXPECT_GT(u_moved, 1e-4) << "x A^T read f32 operands";
  for (int j = 0; j < g; ++j)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t n = 0; n < N[j]; ++n) {
        double want = 0.5;
        for (int64_t i = 0; i < r; ++i) want += s * double(u[t * gr + j * r + i]) * B[j][n * r + i];
        EXPECT_NEAR(y[t * ld + col[j] + n], want, 1e-5) << "y " << t << "," << col[j] + n;
      }
  for (int j = 0; j < g; ++j)
    for (int64_t i = 0; i < r; ++i) {
      for (int64_t t = 0; t < T; ++t) {
        double want = 0;
        for (int64_t n = 0; n < N[j]; ++n) want += s * rounded(dy[t * ld + col[j] + n]) * rounded(B[j][n * r + i]);
        EXPECT_NEAR(du[t * gr + j * r + i], want, 1e-5) << "du of module " << j << " at " << t << "," << i;
      }
      for (int64_t n = 0; n < N[j]; ++n) {
        double want = 0;
        for (int64_t t = 0; t < T; ++t) want += s * rounded(dy[t * ld + col[j] + n]) * rounded(u[t * gr + j * r + i]);
        EXPECT_NEAR(dB[j][n * r + i], want, 1e-5) << "dB of module " << j << " at " << n << "," << i;
      }
    }
  for (int64_t i = 0; i < gr; ++i)
    for (int64_t k = 0; k < K; ++k) {
      double want = 0;
      for (int64_t t = 0; t < T; ++t) want += rounded(du[t * gr + i]) * rounded(x[t * K + k]);
      EXPECT_NEAR(dA[i * K + k], want, 1e-5) << "dA " << i << "," << k;
    }
  for (int64_t t = 0; t < T; ++t)
    for (int64_t k = 0; k < K; ++k) {
      double want = 0.25;
      for (int64_t i = 0; i < gr; ++i) want += double(du[t * gr + i]) * A[i * K + k];
      EXPECT_NEAR(dx[t * K + k], want, 1e-5) << "dx " << t << "," << k;
    }
}

}  // namespace
