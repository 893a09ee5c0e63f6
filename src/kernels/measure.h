// Machine limits measured in the same run as a benchmark, so benchmarks can report ratios (fraction of
// the GEMM peak, fraction of the memory-bandwidth bound) instead of absolute timings on a noisy machine.
#pragma once
#include <cstdint>
#include <vector>

#include "core/dtype.h"

namespace grpo {

// Best GFLOP/s of ops::gemm on an M x N x K problem (A and B in `dtype`, C f32) over `reps` runs.
double measure_gemm_gflops(DType dtype, int64_t M, int64_t N, int64_t K, int reps = 5);
// Best DRAM read bandwidth in bytes/s (all threads summing a buffer of `bytes`, far larger than caches).
double measure_read_bandwidth(int64_t bytes = int64_t{1} << 29, int reps = 5);
// The sum of x[0 .. n) (n a multiple of 32, x 16-byte aligned) read as fast as the memory allows: all threads,
// 8 independent SSE accumulators each (baseline x86-64), so that even an L3-resident buffer is read at its
// bandwidth and never waits on the latency of one chain of additions (one 4-lane chain caps a core at
// ~5 bytes per cycle, below what one Zen 5 core reads from DRAM). The result only defeats dead-code removal.
float sum_for_bandwidth(const float* x, int64_t n);

// Best seconds (over `reps` runs after an untimed one) of the decode matmul kernels on bf16 weights
// W [N, K] for x [B, K], B = 1, 2, 4, ... up to max_batch (and max_batch itself): ops::gemv at this level
// (on the AMX tiles at amx), the vector GEMV of the level (AVX-512 or AVX2, never the tiles) and oneDNN's
// bf16 GEMM as decode_matmul runs it above its crossover (x converted to bf16 first).
struct DecodeKernelTimes {
  int64_t batch;
  double gemv_s, vector_s, onednn_s;
};
std::vector<DecodeKernelTimes> measure_decode_kernels(int64_t N, int64_t K, int64_t max_batch, int reps = 5);

}  // namespace grpo
