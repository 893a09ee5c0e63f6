// Predetermined response lengths for benchmarks (see response_lengths.h).
#include "rollout/response_lengths.h"

#include <algorithm>
#include <cmath>

#include "core/rng.h"

namespace grpo {

int32_t long_tail_response_length(uint64_t seed, int64_t step, int64_t batch, int64_t prompt, int64_t sample,
                                  int32_t limit) {
  constexpr double kMedianFraction = 1.0 / 20, kSigma = 1.4;
  constexpr uint64_t kStream = 0x6c656e67746873ull;  // "lengths": a stream of its own, apart from sampling's
  Rng rng({seed, kStream, static_cast<uint64_t>(step), static_cast<uint64_t>(batch), static_cast<uint64_t>(prompt),
           static_cast<uint64_t>(sample)});
  const double length = kMedianFraction * limit * std::exp(kSigma * rng.normal());
  return static_cast<int32_t>(std::clamp<double>(std::round(length), 1, limit));
}

}  // namespace grpo
