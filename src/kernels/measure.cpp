// Measured machine limits (see measure.h).
#include "kernels/measure.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/arena.h"
#include "core/rng.h"
#include "kernels/ops.h"

namespace grpo {

namespace {
double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

double measure_gemm_gflops(DType dtype, int64_t M, int64_t N, int64_t K, int reps) {
  const int64_t es = dtype_size(dtype);
  Buffer a(M * K * es), b(K * N * es), c(M * N * sizeof(float));
  Rng rng(1);
  if (dtype == DType::BF16) {
    for (int64_t i = 0; i < M * K; ++i) static_cast<bf16_t*>(a.data())[i] = f32_to_bf16(rng.uniform_f() - 0.5f);
    for (int64_t i = 0; i < K * N; ++i) static_cast<bf16_t*>(b.data())[i] = f32_to_bf16(rng.uniform_f() - 0.5f);
  } else {
    for (int64_t i = 0; i < M * K; ++i) static_cast<float*>(a.data())[i] = rng.uniform_f() - 0.5f;
    for (int64_t i = 0; i < K * N; ++i) static_cast<float*>(b.data())[i] = rng.uniform_f() - 0.5f;
  }
  double best = 1e30;
  for (int r = 0; r <= reps; ++r) {  // the first run creates the primitive and is not timed
    double t0 = now_s();
    ops::gemm(ops::Trans::N, ops::Trans::N, M, N, K, 1.0f, a.data(), K, b.data(), N, 0.0f,
              static_cast<float*>(c.data()), N, dtype);
    if (r > 0) best = std::min(best, now_s() - t0);
  }
  return 2.0 * M * N * K / best / 1e9;
}

double measure_read_bandwidth(int64_t bytes, int reps) {
  const int64_t n = bytes / static_cast<int64_t>(sizeof(float));
  Buffer buf(n * sizeof(float));
  float* x = static_cast<float*>(buf.data());
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) x[i] = 1.0f;
  double best = 1e30;
  volatile float sink = 0;
  for (int r = 0; r < reps; ++r) {
    double t0 = now_s();
    float total = 0;
#pragma omp parallel for simd schedule(static) reduction(+ : total)
    for (int64_t i = 0; i < n; ++i) total += x[i];
    best = std::min(best, now_s() - t0);
    sink = sink + total;
  }
  return static_cast<double>(n * sizeof(float)) / best;
}

}  // namespace grpo
