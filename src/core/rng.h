// Deterministic random numbers: xoshiro256** seeded through splitmix64 from a tuple of keys, so a stream
// can be derived from (seed, request, sample) and results never depend on scheduling or thread count.
// The full state is plain data, so it can be saved in checkpoints and restored exactly.
#pragma once
#include <cmath>
#include <cstdint>
#include <initializer_list>

namespace grpo {

inline uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

class Rng {
 public:
  Rng() : Rng({0}) {}
  explicit Rng(uint64_t seed) : Rng({seed}) {}
  // Seeds from several keys, e.g. Rng({seed, request_id, sample_index}).
  Rng(std::initializer_list<uint64_t> keys) {
    uint64_t x = 0x243f6a8885a308d3ull;
    for (uint64_t k : keys) {
      x ^= k + 0x9e3779b97f4a7c15ull + (x << 6) + (x >> 2);
      splitmix64(x);
    }
    for (auto& s : s_) s = splitmix64(x);
  }

  uint64_t next_u64() {
    uint64_t result = rotl(s_[1] * 5, 7) * 9;
    uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 53 random bits (double) / 24 bits (float).
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  float uniform_f() { return static_cast<float>(next_u64() >> 40) * 0x1.0p-24f; }
  // Uniform integer in [0, n).
  uint64_t below(uint64_t n) { return n ? next_u64() % n : 0; }
  // An integer in [lo, hi] (lo <= hi).
  int64_t between(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(below(static_cast<uint64_t>(hi - lo + 1))); }
  // Standard normal (Box-Muller, no cached second value, so the state stays one struct).
  double normal() {
    double u1 = uniform(), u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

  struct State {
    uint64_t s[4];
  };
  State state() const { return {{s_[0], s_[1], s_[2], s_[3]}}; }
  void set_state(const State& st) {
    for (int i = 0; i < 4; ++i) s_[i] = st.s[i];
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace grpo
