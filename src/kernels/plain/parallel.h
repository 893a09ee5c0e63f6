// How the plain kernels split a pass over threads: ATen's at::parallel_for with its default grain size
// (32768 elements), i.e. one OpenMP team per pass, static schedule, serial (no team) when the pass is small.
#pragma once
#include <algorithm>
#include <cstdint>

#include "core/threads.h"

namespace grpo::plain {

constexpr int64_t kGrain = 32768;  // elements below which a pass runs on one thread

// fn(r) for each of N rows of `width` elements.
template <typename Fn>
void parallel_rows(int64_t N, int64_t width, Fn fn) {
  grpo::parallel_for(N, N * width >= kGrain, fn);
}

// fn(i0, len) over [0, n) cut into blocks of kGrain elements.
template <typename Fn>
void parallel_blocks(int64_t n, Fn fn) {
  const int64_t blocks = (n + kGrain - 1) / kGrain;
  grpo::parallel_for(blocks, blocks > 1, [&](int64_t b) { fn(b * kGrain, std::min(kGrain, n - b * kGrain)); });
}

}  // namespace grpo::plain
