// Helpers of the plain kernel tests: random data, buffers with sentinels after the end (out-of-bounds
// writes), conversions to double for the ref:: oracle, and the error metric (max abs difference relative to
// the reference tensor's largest magnitude).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/rng.h"

namespace grpo::plain_test {

inline std::vector<float> random_floats(int64_t n, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(lo + (hi - lo) * rng.uniform());
  return v;
}

inline std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// n floats followed by sentinels that no kernel may overwrite.
class Guarded {
 public:
  static constexpr int64_t kGuard = 32;
  static constexpr float kSentinel = -3.25e33f;
  explicit Guarded(int64_t n, float fill = 0.0f) : n_(n), v_(static_cast<size_t>(n + kGuard), kSentinel) {
    std::fill(v_.begin(), v_.begin() + n, fill);
  }
  explicit Guarded(const std::vector<float>& init) : Guarded(static_cast<int64_t>(init.size())) {
    std::copy(init.begin(), init.end(), v_.begin());
  }
  float* data() { return v_.data(); }
  std::vector<float> values() const { return {v_.begin(), v_.begin() + n_}; }
  bool intact() const {
    return std::all_of(v_.begin() + n_, v_.end(), [](float x) { return x == kSentinel; });
  }

 private:
  int64_t n_;
  std::vector<float> v_;
};

// max_i |a_i - b_i| / max_i |b_i| (NaN counts as infinite error).
template <typename A, typename B>
double rel_err(const std::vector<A>& a, const std::vector<B>& b) {
  EXPECT_EQ(a.size(), b.size());
  double scale = 1e-30, err = 0;
  for (const B& x : b) scale = std::max(scale, std::abs(static_cast<double>(x)));
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const double d = std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
    err = std::max(err, std::isnan(d) ? INFINITY : d);
  }
  return err / scale;
}

}  // namespace grpo::plain_test
