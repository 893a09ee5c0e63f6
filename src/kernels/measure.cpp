// Measured machine limits (see measure.h).
#include "kernels/measure.h"

#include <emmintrin.h>

#include <algorithm>
#include <vector>

#include "core/arena.h"
#include "core/clock.h"
#include "core/rng.h"
#include "kernels/cpu/gemv_kernels.h"
#include "kernels/ops.h"
#include "kernels/paged_ops.h"

namespace grpo {

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
    const auto t0 = Clock::now();
    ops::gemm(ops::Trans::N, ops::Trans::N, M, N, K, 1.0f, a.data(), K, b.data(), N, 0.0f,
              static_cast<float*>(c.data()), N, dtype);
    if (r > 0) best = std::min(best, seconds_since(t0));
  }
  return 2.0 * M * N * K / best / 1e9;
}

float sum_for_bandwidth(const float* x, int64_t n) {
  float total = 0;
#pragma omp parallel reduction(+ : total)
  {
    __m128 acc[8];
    for (__m128& a : acc) a = _mm_setzero_ps();
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n; i += 32)
      for (int j = 0; j < 8; ++j) acc[j] = _mm_add_ps(acc[j], _mm_load_ps(x + i + 4 * j));
    alignas(16) float lanes[4];
    _mm_store_ps(lanes, _mm_add_ps(_mm_add_ps(_mm_add_ps(acc[0], acc[1]), _mm_add_ps(acc[2], acc[3])),
                                   _mm_add_ps(_mm_add_ps(acc[4], acc[5]), _mm_add_ps(acc[6], acc[7]))));
    total += lanes[0] + lanes[1] + lanes[2] + lanes[3];
  }
  return total;
}

double measure_read_bandwidth(int64_t bytes, int reps) {
  const int64_t n = bytes / static_cast<int64_t>(sizeof(float)) / 32 * 32;
  Buffer buf(n * sizeof(float));
  float* x = static_cast<float*>(buf.data());
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) x[i] = 1.0f;
  double best = 1e30;
  volatile float sink = 0;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    const float total = sum_for_bandwidth(x, n);
    best = std::min(best, seconds_since(t0));
    sink = sink + total;
  }
  return static_cast<double>(n * sizeof(float)) / best;
}

std::vector<DecodeKernelTimes> measure_decode_kernels(int64_t N, int64_t K, int64_t max_batch, int reps) {
  Rng rng(2);
  std::vector<bf16_t> w(N * K);
  for (bf16_t& v : w) v = f32_to_bf16(rng.uniform_f() - 0.5f);
  std::vector<float> x(max_batch * K), y(max_batch * N);
  for (float& v : x) v = rng.uniform_f() - 0.5f;
  std::vector<bf16_t> xb(ops::gemv_x_scratch_elems(max_batch, K));
  auto best_of = [&](auto&& run) {
    double best = 1e30;
    for (int r = 0; r <= reps; ++r) {
      const auto t0 = Clock::now();
      run();
      if (r > 0) best = std::min(best, seconds_since(t0));
    }
    return best;
  };
  std::vector<DecodeKernelTimes> out;
  for (int64_t B = 1;; B = std::min(2 * B, max_batch)) {
    DecodeKernelTimes t{B, 0, 0, 0};
    t.gemv_s = best_of([&] { ops::gemv(y.data(), x.data(), w.data(), DType::BF16, B, N, K, xb.data()); });
    t.vector_s = best_of([&] { ops::cpu_gemv::gemv_vector(y.data(), x.data(), xb.data(), w.data(), DType::BF16, B, N, K); });
    t.onednn_s = best_of([&] {
      ops::f32_to_bf16(xb.data(), x.data(), B * K);
      ops::gemm(ops::Trans::N, ops::Trans::T, B, N, K, 1.0f, xb.data(), K, w.data(), K, 0.0f, y.data(), N, DType::BF16);
    });
    out.push_back(t);
    if (B == max_batch) break;
  }
  return out;
}

}  // namespace grpo
