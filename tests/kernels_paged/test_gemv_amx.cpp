// The bf16 GEMV on AMX tiles (kernels/cpu/gemv_amx.h). Everywhere: the emulated TDPBF16PS follows the
// SDM's order, DAZ and FTZ; the tile kernel on the emulator agrees with the naive reference within the
// bounds of f32 accumulation, leaves the memory around its output alone, and is batch invariant bit for bit
// (a row alone, in batches of other sizes, whatever the thread count). Where this process runs at amx
// (else skipped, saying why): the hardware kernel equals the emulator bit for bit, the self-check passes,
// more threads than cores all running tile kernels keep their results (the tile state survives
// preemption), and ops::gemv at amx runs on the tiles within the same bounds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <thread>
#include <tuple>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/rng.h"
#include "core/threads.h"
#include "kernels/backend.h"
#include "kernels/cpu/amx_tiles.h"
#include "kernels/cpu/gemv_amx.h"
#include "kernels/measure.h"
#include "kernels/paged_ops.h"
#include "kernels/ref/ref_paged.h"

using namespace grpo;
namespace tiles = grpo::ops::cpu_tiles;

namespace {

constexpr float kAmxGuard = -777.0f;

struct TileCase {
  int64_t B, N, K;
  std::vector<float> x;
  std::vector<bf16_t> w;
  TileCase(int64_t b, int64_t n, int64_t k, uint64_t seed) : B(b), N(n), K(k), x(b * k), w(n * k) {
    Rng rng(seed);
    for (float& v : x) v = static_cast<float>(rng.normal());
    for (bf16_t& v : w) v = f32_to_bf16(static_cast<float>(rng.normal()));
  }
  // y [B, N] from the emulated (or hardware) kernel, with kAmxGuard values after it.
  std::vector<float> run(bool hardware, int64_t rows = -1, int64_t first = 0) const {
    const int64_t b = rows < 0 ? B : rows;
    std::vector<float> y(b * N + 16, kAmxGuard);
    std::vector<bf16_t> xs(tiles::staged_x_elems(b, K));
    (hardware ? tiles::gemv_tiles_hardware : tiles::gemv_tiles_emulated)(y.data(), x.data() + first * K, xs.data(),
                                                                         w.data(), b, N, K);
    return y;
  }
};

std::string amx_absent() {
  return cat("this process runs at ", isa_name(isa_decision().isa), ", not amx (CPU ", isa_decision().cpu.model,
             isa_decision().cpu.amx_refusal.empty() ? "" : "; " + isa_decision().cpu.amx_refusal, ")");
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(TileEmulator, SumsEvenAndOddProductsApartThenAddsThePairOnce) {
  float c[16][16] = {};
  bf16_t a[16][32] = {}, b[16][32] = {};
  // Row 0, column 0: pair 0 = (2^12 * 2^12, 1 * 1), pair 1 = (-2^12 * 2^12, 0). Even sums 2^24 - 2^24 = 0,
  // odd sums 1: the result is 1. Summing the products in one running total (2^24 + 1 rounds to 2^24) gives 0.
  a[0][0] = f32_to_bf16(4096.0f), b[0][0] = f32_to_bf16(4096.0f);
  a[0][1] = f32_to_bf16(1.0f), b[0][1] = f32_to_bf16(1.0f);
  a[0][2] = f32_to_bf16(-4096.0f), b[1][0] = f32_to_bf16(4096.0f);
  c[0][0] = 0.5f;
  tiles::emulate_tdpbf16ps(c, a, b);
  EXPECT_EQ(c[0][0], 1.5f);
  // Column 1 of row 0 reads pairs (b[k][2], b[k][3]): with a[0][0..3] as above, 4096 * 2 + 1 * 3 = 8195.
  b[0][2] = f32_to_bf16(2.0f), b[0][3] = f32_to_bf16(3.0f);
  float d[16][16] = {};
  tiles::emulate_tdpbf16ps(d, a, b);
  EXPECT_EQ(d[0][1], 8195.0f);
  EXPECT_EQ(d[1][0], 0.0f) << "row 1 of A is zero";
}

TEST(TileEmulator, DenormalInputsReadAsZeroAndDenormalResultsFlushed) {
  float c[16][16] = {};
  bf16_t a[16][32] = {}, b[16][32] = {};
  a[0][0] = 0x0001;  // the smallest denormal bf16: read as zero
  b[0][0] = f32_to_bf16(1e30f);
  tiles::emulate_tdpbf16ps(c, a, b);
  EXPECT_EQ(c[0][0], 0.0f);
  a[0][0] = f32_to_bf16(1e-20f), b[0][0] = f32_to_bf16(1e-20f);  // 1e-40: a denormal f32 product
  tiles::emulate_tdpbf16ps(c, a, b);
  EXPECT_EQ(c[0][0], 0.0f);
  EXPECT_FALSE(std::signbit(c[0][0]));
  a[0][0] = f32_to_bf16(-1e-20f);
  c[0][0] = 0.0f;
  tiles::emulate_tdpbf16ps(c, a, b);
  EXPECT_EQ(c[0][0], 0.0f);
}

TEST(GemvTiles, EmulatedMatchesReferenceOnOddSizesWithGuards) {
  for (int64_t B : {1, 3, 16, 17, 33, 40})
    for (int64_t N : {1, 15, 16, 17, 50, 97})
      for (int64_t K : {1, 31, 32, 33, 100}) {
        const TileCase c(B, N, K, 100 + B * 7 + N * 3 + K);
        const std::vector<float> y = c.run(false);
        std::vector<double> ref(B * N);
        ref::gemv<double>(ref.data(), c.x.data(), c.w.data(), DType::BF16, B, N, K);
        for (int64_t i = 0; i < B * N; ++i)
          ASSERT_NEAR(y[i], ref[i], 1e-5 * std::sqrt(static_cast<double>(K)) * 4)
              << "B=" << B << " N=" << N << " K=" << K << " i=" << i;
        for (int i = 0; i < 16; ++i) ASSERT_EQ(y[B * N + i], kAmxGuard) << "B=" << B << " N=" << N << " K=" << K;
      }
}

// A row's result is the same bits alone, in batches of other sizes (3 x 1 slabs up to 16 rows, 2 x 2 and
// 2 x 1 above), and with one thread or several.
TEST(GemvTiles, EmulatedIsBatchInvariantBitForBit) {
  for (auto [B, N, K] : {std::tuple<int64_t, int64_t, int64_t>{40, 301, 333}, {37, 45, 1501}, {34, 8, 4100}}) {
    const TileCase c(B, N, K, B + N + K);
    const std::vector<float> all = c.run(false);
    const int threads = num_threads();
    set_num_threads(1);
    const std::vector<float> one_thread = c.run(false);
    for (int64_t b : {int64_t{0}, int64_t{17}, B - 1}) {
      const std::vector<float> alone = c.run(false, 1, b);
      for (int64_t n = 0; n < N; ++n)
        ASSERT_TRUE(same_bits(alone[n], all[b * N + n])) << "B=" << B << " b=" << b << " n=" << n;
    }
    set_num_threads(threads);
    for (int64_t i = 0; i < B * N; ++i) ASSERT_TRUE(same_bits(one_thread[i], all[i])) << "one thread, i=" << i;
    for (int64_t sub : {2, 5, 16, 17, 33}) {  // from row 1 on
      const std::vector<float> part = c.run(false, sub, 1);
      for (int64_t i = 0; i < sub * N; ++i)
        ASSERT_TRUE(same_bits(part[i], all[N + i])) << "B=" << B << " batch of " << sub << " i=" << i;
    }
  }
}

TEST(GemvTiles, StagedXHoldsWholeTiles) {
  EXPECT_EQ(tiles::staged_x_elems(1, 1), 16 * 32);
  EXPECT_EQ(tiles::staged_x_elems(16, 32), 16 * 32);
  EXPECT_EQ(tiles::staged_x_elems(17, 33), 32 * 64);
  EXPECT_EQ(ops::gemv_x_scratch_elems(17, 33), tiles::staged_x_elems(17, 33));
  EXPECT_GE(ops::gemv_x_scratch_elems(5, 7), 5 * 7);
}

// What `grpo bench rollout` times for the tiles' crossover: every kernel at batch 1, 2, 4, ... and the max.
TEST(GemvTiles, DecodeKernelTimesCoverEveryBatchSizeUpToTheMax) {
  const std::vector<DecodeKernelTimes> times = measure_decode_kernels(64, 96, 5, 1);
  const std::vector<int64_t> batches = {1, 2, 4, 5};
  ASSERT_EQ(times.size(), batches.size());
  for (size_t i = 0; i < times.size(); ++i) {
    EXPECT_EQ(times[i].batch, batches[i]);
    EXPECT_GT(times[i].gemv_s, 0.0);
    EXPECT_GT(times[i].vector_s, 0.0);
    EXPECT_GT(times[i].onednn_s, 0.0);
  }
}

// The kernel decode_matmul reports for each batch size follows the level and the mode.
TEST(GemvTiles, DecodeMatmulNamesTheKernelItRuns) {
  using ops::DecodeMatmul;
  const int64_t past = ops::gemv_max_batch(DType::BF16) + 1;
  EXPECT_STREQ(ops::decode_matmul_kernel(DType::BF16, past, DecodeMatmul::Fastest), "onednn_bf16");
  EXPECT_STREQ(ops::decode_matmul_kernel(DType::F32, 1, DecodeMatmul::OneDnn), "onednn_f32");
  const char* bf16 = ops::decode_matmul_kernel(DType::BF16, 1, DecodeMatmul::BatchInvariant);
  EXPECT_STREQ(ops::decode_matmul_kernel(DType::BF16, 128, DecodeMatmul::BatchInvariant), bf16)
      << "one kernel at every batch size";
  const std::string expect = tiles::tiles_unavailable_reason().empty() ? "amx_tiles"
                             : !cpu_has_avx512()                     ? "avx2_bf16_split"
                             : cpu_has_avx512_bf16()                 ? "avx512_bf16_dot"
                                                                     : "avx512_bf16_widened";
  EXPECT_EQ(bf16, expect);
  EXPECT_STREQ(ops::decode_matmul_kernel(DType::F32, 7, DecodeMatmul::BatchInvariant),
               cpu_has_avx512() ? "avx512_f32" : "avx2_f32");
  tiles::set_emulated_tiles_for_tests(true);
  EXPECT_STREQ(ops::decode_matmul_kernel(DType::BF16, 3, DecodeMatmul::BatchInvariant), "amx_tiles_emulated");
  tiles::set_emulated_tiles_for_tests(false);
}

// The self-check's guard: where this process cannot run tile instructions, the check reports the SIGILL of
// the first one and the process goes on (at amx it passes, as SelfCheckPasses below also requires).
TEST(GemvTiles, SelfCheckSurvivesTheFaultOfACpuWithoutTiles) {
  const CpuInfo& cpu = isa_decision().cpu;
  const tiles::TileSelfCheck check = tiles::check_tiles_now();
  if (cpu.amx_tile && cpu.amx_bf16 && cpu.amx_permitted) {
    EXPECT_TRUE(check.passed) << check.failure;
    return;
  }
  EXPECT_FALSE(check.passed);
  EXPECT_NE(check.failure.find("the tile kernel raised"), std::string::npos) << check.failure;
  EXPECT_NE(check.failure.find("1x50x100"), std::string::npos) << "the first case: " << check.failure;
  std::cout << "on this CPU: " << check.failure << "\n";
}

// ---- on the hardware (the amx level only) ----

TEST(GemvTilesHardware, EqualsTheEmulatorBitForBit) {
  if (!isa_available(Isa::Amx)) GTEST_SKIP() << amx_absent();
  for (auto [B, N, K] : {std::tuple<int64_t, int64_t, int64_t>{1, 301, 333}, {16, 48, 64}, {17, 97, 100},
                         {40, 301, 333}, {128, 256, 1024}}) {
    const TileCase c(B, N, K, 7 * B + N + K);
    const std::vector<float> hw = c.run(true), emu = c.run(false);
    for (size_t i = 0; i < hw.size(); ++i)
      ASSERT_TRUE(same_bits(hw[i], emu[i])) << "B=" << B << " N=" << N << " K=" << K << " i=" << i << ": " << hw[i]
                                            << " vs " << emu[i];
  }
}

TEST(GemvTilesHardware, SelfCheckPasses) {
  if (!isa_available(Isa::Amx)) GTEST_SKIP() << amx_absent();
  const tiles::TileSelfCheck& check = tiles::tile_self_check();
  EXPECT_TRUE(check.passed) << check.failure;
}

// More threads than cores, each running tile kernels over and over on its own data: a preempted thread
// must find its tiles (and its tile configuration) as it left them.
TEST(GemvTilesHardware, TileStateSurvivesPreemption) {
  if (!isa_available(Isa::Amx)) GTEST_SKIP() << amx_absent();
  const int threads = 4 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<TileCase> cases;
  std::vector<std::vector<float>> expect;
  for (int t = 0; t < threads; ++t) {
    cases.emplace_back(17, 40 + t % 5, 96 + 32 * (t % 3), 1000 + t);  // under the threading threshold: 1 thread each
    expect.push_back(cases.back().run(false));
  }
  std::vector<int> wrong(threads, 0);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int it = 0; it < 200; ++it) {
        const std::vector<float> y = cases[t].run(true);
        for (size_t i = 0; i < y.size(); ++i) wrong[t] += !same_bits(y[i], expect[t][i]);
        if (it % 8 == 0) std::this_thread::yield();
      }
    });
  for (std::thread& th : pool) th.join();
  for (int t = 0; t < threads; ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t << " of " << threads;
}

// ops::gemv with bf16 weights at amx: the tiles (when the self-check passed), within the bf16 bounds.
TEST(GemvTilesHardware, OpsGemvAtAmxRunsOnTheTilesWithinBf16Bounds) {
  if (!isa_available(Isa::Amx)) GTEST_SKIP() << amx_absent();
  ASSERT_EQ(isa(), Isa::Amx);
  for (auto [B, N, K] : {std::tuple<int64_t, int64_t, int64_t>{1, 1536, 512}, {7, 100, 333}, {64, 512, 1536}}) {
    const TileCase c(B, N, K, B * N + K);
    std::vector<float> y(B * N);
    std::vector<bf16_t> scratch(ops::gemv_x_scratch_elems(B, K));
    ops::gemv(y.data(), c.x.data(), c.w.data(), DType::BF16, B, N, K, scratch.data());
    std::vector<double> ref(B * N);
    ref::gemv<double>(ref.data(), c.x.data(), c.w.data(), DType::BF16, B, N, K);
    for (int64_t i = 0; i < B * N; ++i)
      ASSERT_NEAR(y[i], ref[i], 1e-5 * std::sqrt(static_cast<double>(K)) * 4) << "B=" << B << " i=" << i;
    if (!tiles::tile_self_check().passed) continue;  // then ops::gemv took the AVX-512 path (SelfCheckPasses fails)
    const std::vector<float> emu = c.run(false);
    for (int64_t i = 0; i < B * N; ++i) ASSERT_TRUE(same_bits(y[i], emu[i])) << "B=" << B << " i=" << i;
  }
}

}  // namespace
