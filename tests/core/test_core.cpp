// Tests of the core level: arenas, workspace, RNG determinism, bf16 conversion, atomic files, profiler,
// medians.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <vector>

#include "core/arena.h"
#include "core/files.h"
#include "core/profiler.h"
#include "core/rng.h"
#include "core/stats.h"
#include "test_util.h"

using namespace grpo;

TEST(Arena, NamedViewsShareOneFlatAllocation) {
  Arena a;
  a.add("w1", Shape{3, 5});
  a.add("gate", Shape{4, 2});
  a.add("up", Shape{4, 2}, /*pack=*/true);
  a.allocate();
  EXPECT_EQ(a.view("w1").numel(), 15);
  // gate and up are packed: up directly follows gate, forming one [8, 2] matrix.
  EXPECT_EQ(a.view("up").f32(), a.view("gate").f32() + 8);
  // unpacked tensors start 64-byte aligned.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.view("gate").data) % 64, 0u);
  float* base = a.flat().f32();
  EXPECT_GE(a.view("up").f32() + 8, base);
  EXPECT_LE(a.view("up").f32() + 8, base + a.numel());
  EXPECT_THROW(a.view("missing"), Error);
}

TEST(Arena, DuplicateNameIsAnError) {
  Arena a;
  a.add("x", Shape{2});
  EXPECT_THROW(a.add("x", Shape{2}), Error);
}

TEST(Workspace, OverflowNamesTheRequest) {
  Workspace ws(256);
  ws.take<float>(32, "a");
  try {
    ws.take<float>(64, "attention scratch");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("attention scratch"), std::string::npos);
  }
  ws.reset();
  EXPECT_NO_THROW(ws.take<float>(64, "b"));
}

// Workspace::discard between uses (a GRPO step's KV cache and activations): the pages go back to the system
// and the same addresses are written again without any allocation.
TEST(Workspace, DiscardReturnsThePagesAndKeepsTheReservation) {
  const size_t bytes = size_t{64} << 20;
  Workspace ws(bytes, "a test workspace");
  auto* p = ws.take<unsigned char>(static_cast<int64_t>(bytes), "all of it");
  for (size_t i = 0; i < bytes; i += 4096) p[i] = 1;
  EXPECT_EQ(test::resident_bytes(p, bytes), static_cast<int64_t>(bytes));
  const uint64_t allocs = Buffer::alloc_count();
  ws.discard();
  EXPECT_LT(test::resident_bytes(p, bytes), int64_t{4} << 20);
  EXPECT_EQ(ws.used(), 0u);
  EXPECT_EQ(ws.capacity(), bytes);
  auto* q = ws.take<unsigned char>(16, "again");
  EXPECT_EQ(q, p);
  EXPECT_EQ(q[0], 0);  // the old contents are gone
  q[0] = 2;
  EXPECT_EQ(Buffer::alloc_count(), allocs);
}

TEST(Buffer, LargeBuffersAreReservedNotTouched) {
  const size_t bytes = size_t{512} << 20;
  const int64_t before = resident_bytes();
  Buffer b(bytes);
  // Reserving 512 MiB commits (almost) nothing: pages come when first written.
  EXPECT_LT(resident_bytes() - before, int64_t{32} << 20);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u);
  auto* p = static_cast<unsigned char*>(b.data());
  EXPECT_EQ(p[0], 0);
  EXPECT_EQ(p[bytes / 2], 0);
  EXPECT_EQ(p[bytes - 1], 0);
  const size_t touched = size_t{64} << 20;
  for (size_t i = 0; i < touched; i += 4096) p[i] = 1;
  EXPECT_GE(resident_bytes() - before, static_cast<int64_t>(touched) - (int64_t{4} << 20));
  Buffer moved = std::move(b);
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_EQ(static_cast<unsigned char*>(moved.data())[touched - 4096], 1);
}

TEST(Buffer, SmallBuffersAreZeroed) {
  Buffer b(1000);
  auto* p = static_cast<unsigned char*>(b.data());
  for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(p[i], 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
}

TEST(Rng, DeterministicAndKeyed) {
  Rng a({1, 2, 3}), b({1, 2, 3}), c({1, 2, 4});
  for (int i = 0; i < 10; ++i) EXPECT_EQ(a.next_u64(), b.next_u64());
  Rng a2({1, 2, 3});
  EXPECT_NE(a2.next_u64(), c.next_u64());
  Rng s(7);
  s.next_u64();
  auto st = s.state();
  uint64_t x = s.next_u64();
  s.set_state(st);
  EXPECT_EQ(s.next_u64(), x);
  double sum = 0;
  Rng u(9);
  for (int i = 0; i < 10000; ++i) {
    double v = u.uniform();
    ASSERT_GE(v, 0.0);
    ASSERT_LT(v, 1.0);
    sum += v;
  }
  EXPECT_NEAR(sum / 10000, 0.5, 0.02);
}

TEST(Stats, MedianOfOddEvenAndNoValues) {
  EXPECT_EQ(median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_EQ(median({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_EQ(median({7.0}), 7.0);
  EXPECT_EQ(median({}), 0.0);
}

TEST(BF16, RoundToNearestEvenAndNaN) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(3.140625f)), 3.140625f);
  // 1 + 2^-8 is exactly halfway between two bf16 values: ties to even (1.0).
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + 1.0f / 256)), 1.0f);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(Files, AtomicWriteReplacesWhole) {
  auto dir = std::filesystem::temp_directory_path() / ("grpo_core_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string p = (dir / "f.txt").string();
  write_file_atomic(p, "first");
  write_file_atomic(p, "second");
  EXPECT_EQ(read_file(p), "second");
  for (auto& e : std::filesystem::directory_iterator(dir))
    EXPECT_EQ(e.path().filename(), "f.txt") << "temporary file left behind";
  MappedFile m(p);
  EXPECT_EQ(m.size(), 6u);
  EXPECT_THROW(MappedFile((dir / "none").string()), Error);
  std::filesystem::remove_all(dir);
}

TEST(Profiler, RecordsScopesOnlyWhenEnabled) {
  Profiler::clear();
  { GRPO_PROFILE("off_scope"); }
  Profiler::enable(true);
  { GRPO_PROFILE("on_scope"); }
  Profiler::enable(false);
  auto s = Profiler::summary();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].name, "on_scope");
  EXPECT_EQ(s[0].calls, 1u);
  auto p = (std::filesystem::temp_directory_path() / ("grpo_trace_" + std::to_string(::getpid()) + ".json")).string();
  Profiler::write_chrome_trace(p);
  EXPECT_NE(read_file(p).find("\"on_scope\""), std::string::npos);
  std::filesystem::remove(p);
}
