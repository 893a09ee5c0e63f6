// Thread control: the number of OpenMP threads kernels use (default: all cores, or OMP_NUM_THREADS), and
// parallel_for, the one way kernels split a loop over them.
#pragma once

#include <cstdint>

namespace grpo {
int num_threads();
void set_num_threads(int n);

// body(i) for i in [0, n): shared out over the OpenMP threads in contiguous static chunks when `parallel`,
// else a plain loop in the calling thread. Not an OpenMP `if` clause: one that comes out false still sets
// up a team of one thread, ~2 us a call, which a decode step of small kernels (~100 of them per token)
// would pay on every call.
template <typename Body>
void parallel_for(int64_t n, bool parallel, Body&& body) {
  if (!parallel || n <= 1) {
    for (int64_t i = 0; i < n; ++i) body(i);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) body(i);
}
}  // namespace grpo
