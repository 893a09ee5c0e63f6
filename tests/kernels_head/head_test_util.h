// Helpers of the head kernel tests: random data, guarded output buffers (sentinel values after the end
// catch out-of-bounds writes), error metrics, and a tiny reader of the shared reference safetensors files
// (F32 and I64 tensors, converted to double) that does not depend on the model level.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/files.h"
#include "core/rng.h"

namespace grpo::test {

template <typename T = float>
std::vector<T> uniform(int64_t n, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  Rng rng(seed);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) x = static_cast<T>(lo + (hi - lo) * rng.uniform());
  return v;
}

template <typename T>
std::vector<double> to_double(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

// A float buffer of n values followed by kGuardCount sentinels that no kernel may touch.
class Guarded {
 public:
  static constexpr int64_t kGuardCount = 64;
  static constexpr float kSentinel = -7.77e33f;
  explicit Guarded(int64_t n, float fill = 0.0f) : n_(n), v_(static_cast<size_t>(n + kGuardCount), kSentinel) {
    std::fill(v_.begin(), v_.begin() + n, fill);
  }
  Guarded(const std::vector<float>& init) : Guarded(static_cast<int64_t>(init.size())) {
    std::copy(init.begin(), init.end(), v_.begin());
  }
  float* data() { return v_.data(); }
  const float* data() const { return v_.data(); }
  float operator[](int64_t i) const { return v_[static_cast<size_t>(i)]; }
  std::vector<float> values() const { return {v_.begin(), v_.begin() + n_}; }
  bool guards_intact() const {
    return std::all_of(v_.begin() + n_, v_.end(), [](float x) { return x == kSentinel; });
  }

 private:
  int64_t n_;
  std::vector<float> v_;
};

// max_i |a_i - b_i| / max(max_i |b_i|, floor): error relative to the tensor's magnitude.
template <typename A, typename B>
double max_rel_err(const std::vector<A>& a, const std::vector<B>& b, double floor = 1e-30) {
  EXPECT_EQ(a.size(), b.size());
  double scale = floor, err = 0;
  for (size_t i = 0; i < b.size(); ++i) scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const double d = std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
    err = std::max(err, std::isnan(d) ? INFINITY : d);
  }
  return err / scale;
}

// name -> values as double, for the F32 and I64 tensors of a safetensors file.
inline std::map<std::string, std::vector<double>> read_safetensors(const std::string& path) {
  const std::string bytes = read_file(path);
  GRPO_CHECK(bytes.size() >= 8, path, ": shorter than the 8-byte safetensors header size");
  uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), 8);
  GRPO_CHECK(header_size <= bytes.size() - 8, path, ": header size ", header_size, " past the end");
  const auto header = nlohmann::json::parse(bytes.substr(8, header_size));
  const size_t data_size = bytes.size() - 8 - header_size;
  const char* data = bytes.data() + 8 + header_size;
  std::map<std::string, std::vector<double>> out;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") continue;
    const std::string dtype = info.at("dtype");
    const size_t begin = info.at("data_offsets")[0], end = info.at("data_offsets")[1];
    GRPO_CHECK(begin <= end && end <= data_size, path, ": tensor ", name, " offsets past the data");
    std::vector<double>& values = out[name];
    if (dtype == "F32") {
      for (size_t o = begin; o + 4 <= end; o += 4) {
        float v;
        std::memcpy(&v, data + o, 4);
        values.push_back(v);
      }
    } else if (dtype == "I64") {
      for (size_t o = begin; o + 8 <= end; o += 8) {
        int64_t v;
        std::memcpy(&v, data + o, 8);
        values.push_back(static_cast<double>(v));
      }
    }
  }
  return out;
}

}  // namespace grpo::test
