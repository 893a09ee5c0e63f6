// Machine limits measured in the same run as a benchmark, so benchmarks can report ratios (fraction of
// the GEMM peak, fraction of the memory-bandwidth bound) instead of absolute timings on a noisy machine.
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace grpo {

// Best GFLOP/s of ops::gemm on an M x N x K problem (A and B in `dtype`, C f32) over `reps` runs.
double measure_gemm_gflops(DType dtype, int64_t M, int64_t N, int64_t K, int reps = 5);
// Best DRAM read bandwidth in bytes/s (all threads summing a buffer of `bytes`, far larger than caches).
double measure_read_bandwidth(int64_t bytes = int64_t{1} << 29, int reps = 5);

}  // namespace grpo
