// Helpers of the decoder-layer kernel tests: random inputs, output buffers with guard sentinels before and
// after the data, conversions to double for the reference, error measures, central finite differences, and
// the SIMD paths to test (AVX-512 and AVX2, each forced through tests/isa_util.h, so both are tested on an
// AVX-512 machine).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/rng.h"
#include "isa_util.h"
#include "kernels/backend.h"
#include "kernels/cpu/nn_simd.h"

namespace nn_test {

inline std::vector<float> randn(int64_t n, uint64_t seed, float scale = 1.0f) {
  grpo::Rng rng(seed);
  std::vector<float> x(n);
  for (float& v : x) v = static_cast<float>(rng.normal()) * scale;
  return x;
}

inline std::vector<double> to_double(const float* x, int64_t n) { return std::vector<double>(x, x + n); }
inline std::vector<double> to_double(const std::vector<float>& x) { return to_double(x.data(), x.size()); }

// A float buffer of n elements with kGuard sentinel floats on each side; the data starts filled with `fill`.
class Guarded {
 public:
  static constexpr int64_t kGuard = 16;
  explicit Guarded(int64_t n, float fill = 0.0f) : n_(n), buf_(n + 2 * kGuard, sentinel()) {
    std::fill(data(), data() + n, fill);
  }
  explicit Guarded(const std::vector<float>& init) : Guarded(static_cast<int64_t>(init.size())) {
    std::copy(init.begin(), init.end(), data());
  }
  float* data() { return buf_.data() + kGuard; }
  const float* data() const { return buf_.data() + kGuard; }
  int64_t size() const { return n_; }
  std::vector<float> vec() const { return std::vector<float>(data(), data() + n_); }
  // True when no byte of either guard zone changed.
  bool guards_intact() const {
    const float s = sentinel();
    for (int64_t i = 0; i < kGuard; ++i)
      if (std::memcmp(&buf_[i], &s, 4) != 0 || std::memcmp(&buf_[kGuard + n_ + i], &s, 4) != 0) return false;
    return true;
  }

 private:
  static float sentinel() {
    const uint32_t bits = 0x7fc0beefu;  // a NaN with a payload no kernel produces
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  int64_t n_;
  std::vector<float> buf_;
};

// max |got - want| / max(max |want|, floor): error relative to the tensor's magnitude.
inline double max_rel_err(const float* got, const double* want, int64_t n, double floor = 1e-30) {
  double max_want = floor, max_diff = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    max_want = std::max(max_want, std::abs(want[i]));
    const double d = std::abs(static_cast<double>(got[i]) - want[i]);
    max_diff = std::isnan(d) ? INFINITY : std::max(max_diff, d);
  }
  return max_diff / max_want;
}
inline double max_rel_err(const std::vector<float>& got, const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  return max_rel_err(got.data(), want.data(), static_cast<int64_t>(std::min(got.size(), want.size())));
}

// Central difference d loss / d x[i] in double precision (x[i] is restored).
inline double central_difference(const std::function<double()>& loss, double& xi, double h = 1e-6) {
  const double saved = xi;
  xi = saved + h;
  const double up = loss();
  xi = saved - h;
  const double down = loss();
  xi = saved;
  return (up - down) / (2.0 * h);
}

// Checks grad[i] against central differences of loss at `samples` coordinates spread over x (all when
// samples >= n): |grad - fd| <= tol * max(1, max |fd|).
inline void expect_matches_finite_differences(const std::function<double()>& loss, std::vector<double>& x,
                                              const std::vector<float>& grad, int64_t samples, double tol,
                                              const std::string& what) {
  ASSERT_EQ(x.size(), grad.size()) << what;
  const int64_t n = static_cast<int64_t>(x.size());
  const int64_t step = std::max<int64_t>(1, n / std::max<int64_t>(1, samples));
  std::vector<std::pair<int64_t, double>> fd;
  double scale = 1.0;
  for (int64_t i = 0; i < n; i += step) {
    fd.emplace_back(i, central_difference(loss, x[i]));
    scale = std::max(scale, std::abs(fd.back().second));
  }
  for (const auto& [i, want] : fd)
    EXPECT_NEAR(grad[i], want, tol * scale) << what << " coordinate " << i;
}

// The SIMD paths of the nn kernels this process can run.
inline std::vector<grpo::Isa> available_isas() { return grpo::test::runnable_isas({grpo::Isa::Avx512, grpo::Isa::Avx2}); }

using ForceIsa = grpo::test::ScopedIsa;

}  // namespace nn_test
