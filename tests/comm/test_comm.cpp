// The collectives of comm::world() against a serial reference. Run alone (N = 1, the local backend) and,
// registered separately in CTest, under `mpirun -np 2` and `-np 3` (the MPI backend): every rank computes
// every rank's contribution from (rank, index), so each can check its own result. Sizes are odd on
// purpose: ranges not divisible by N, buckets smaller than a shard and spanning shard boundaries, shards
// that are empty, byte pieces of size zero.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "comm/communicator.h"
#include "core/dtype.h"
#include "core/error.h"

using namespace grpo;
using comm::Partition;
using comm::Wire;

namespace {

// Rank r's value at flat index i: magnitudes from 1e-3 to 1e3, both signs, few exact in bf16.
float contribution(int r, int64_t i) {
  uint64_t x = static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(r + 1) * 0xbf58476d1ce4e5b9ull;
  x ^= x >> 31;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 29;
  const double u = static_cast<double>(x >> 11) * 0x1.0p-53;  // [0, 1)
  const double mag = std::pow(10.0, -3.0 + 6.0 * u);
  return static_cast<float>((x & 1) ? mag : -mag);
}

float on_wire(float v, Wire w) { return w == Wire::F32 ? v : bf16_to_f32(f32_to_bf16(v)); }

// What reduce_scatter must produce at index i: contributions rounded to the wire type, summed in rank order.
float reference_sum(int ranks, int64_t i, Wire w) {
  float s = on_wire(contribution(0, i), w);
  for (int r = 1; r < ranks; ++r) s += on_wire(contribution(r, i), w);
  return s;
}

class Comm : public ::testing::Test {
 protected:
  comm::Communicator& c = comm::world();
  int N = c.size(), me = c.rank();

  // Reduce-scatters [0, n) of this rank's contributions in buckets of `bucket` elements (all started before
  // any is waited for) and checks the shard, bit for bit, against the serial reference.
  void check_reduce_scatter(int64_t n, int64_t align, int64_t bucket, Wire wire) {
    SCOPED_TRACE(testing::Message() << "n " << n << " align " << align << " bucket " << bucket << " wire "
                                    << comm::wire_name(wire) << " rank " << me << "/" << N);
    const Partition part = Partition::even(n, N, align);
    std::vector<float> full(n);
    for (int64_t i = 0; i < n; ++i) full[i] = contribution(me, i);
    // Sentinels around the shard catch writes outside it.
    std::vector<float> shard(part.size(me) + 2, -7.0f);
    for (bool accumulate : {false, true}) {
      if (accumulate)
        for (int64_t i = 0; i < part.size(me); ++i) shard[1 + i] = 0.5f;
      std::vector<comm::Request> pending;
      for (int64_t lo = 0; lo < n; lo += bucket)
        pending.push_back(c.reduce_scatter(full.data(), lo, std::min(n, lo + bucket), part, shard.data() + 1, wire,
                                           accumulate));
      for (comm::Request& r : pending) c.wait(r);
      EXPECT_EQ(shard.front(), -7.0f);
      EXPECT_EQ(shard.back(), -7.0f);
      for (int64_t i = part.begin(me); i < part.end(me); ++i) {
        // One process sends nothing: its "reduction" is the exact local value whatever the wire type.
        const float sum = N == 1 ? contribution(0, i) : reference_sum(N, i, wire);
        const float expected = accumulate ? 0.5f + sum : sum;
        ASSERT_EQ(shard[1 + i - part.begin(me)], expected) << "index " << i << " accumulate " << accumulate;
      }
    }
  }
};

TEST(Partition, EvenSplitIsAlignedBalancedAndCoversTheRange) {
  for (int parts : {1, 2, 3, 7})
    for (int64_t n : {0, 1, 5, 16, 17, 1000, 1025})
      for (int64_t align : {1, 16}) {
        const Partition p = Partition::even(n, parts, align);
        ASSERT_EQ(p.parts(), parts);
        EXPECT_EQ(p.begin(0), 0);
        EXPECT_EQ(p.total(), n);
        int64_t largest = 0, smallest = n;
        for (int r = 0; r < parts; ++r) {
          EXPECT_LE(p.begin(r), p.end(r));
          EXPECT_TRUE(p.end(r) % align == 0 || p.end(r) == n) << "n " << n << " parts " << parts;
          largest = std::max(largest, p.size(r));
          smallest = std::min(smallest, p.size(r));
        }
        // Whole align-blocks differ by at most one; the last, partial block makes up the rest.
        EXPECT_LT(largest - smallest, 2 * align) << "n " << n << " parts " << parts << " align " << align;
      }
  // More ranks than align-blocks: the last shards are empty.
  const Partition p = Partition::even(20, 3, 16);
  EXPECT_EQ(p.offsets, (std::vector<int64_t>{0, 16, 20, 20}));
  EXPECT_EQ(p.piece_size(0, 10, 18), 6);
  EXPECT_EQ(p.piece_size(1, 10, 18), 2);
  EXPECT_EQ(p.piece_size(2, 10, 18), 0);
  EXPECT_EQ(p.piece_size(1, 0, 5), 0);
  EXPECT_THROW(Partition::even(-1, 2), Error);
  EXPECT_THROW(Partition::even(4, 0), Error);
}

TEST_F(Comm, ReduceScatterEqualsTheRankOrderSumF32) {
  check_reduce_scatter(10007, 1, 10007, Wire::F32);  // one bucket, shard sizes differ by one
  check_reduce_scatter(10007, 16, 37, Wire::F32);    // many buckets smaller than a shard, across boundaries
  check_reduce_scatter(5, 16, 2, Wire::F32);         // fewer elements than one align-block: empty shards
  check_reduce_scatter(1, 1, 1, Wire::F32);
}

TEST_F(Comm, ReduceScatterBf16WireSumsRoundedValuesInFp32) {
  check_reduce_scatter(10007, 16, 1000, Wire::BF16);
  check_reduce_scatter(33, 1, 4, Wire::BF16);
  // And the bf16 wire stays within its rounding bound of the exact sum: each contribution is off by at
  // most 2^-8 of itself (7 stored mantissa bits, round to nearest); the fp32 additions add ~N 2^-24.
  for (int64_t i = 0; i < (N > 1 ? 1000 : 0); ++i) {
    double exact = 0, bound = 0;
    for (int r = 0; r < N; ++r) {
      exact += contribution(r, i);
      bound += std::fabs(contribution(r, i)) * (0x1.0p-8 + N * 0x1.0p-24);
    }
    EXPECT_LE(std::fabs(reference_sum(N, i, Wire::BF16) - exact), bound) << i;
  }
}

TEST_F(Comm, AllGatherInPlaceWithUnevenAndEmptyPieces) {
  // Rank r owns 3r + 1 bytes (rank 1 of three: none, to have an empty piece too).
  std::vector<int64_t> off = {0};
  for (int r = 0; r < N; ++r) off.push_back(off.back() + (N == 3 && r == 1 ? 0 : 3 * r + 1));
  std::vector<uint8_t> data(off.back(), 0xEE);
  for (int64_t b = off[me]; b < off[me + 1]; ++b) data[b] = static_cast<uint8_t>(me * 31 + b);
  comm::Request r = c.all_gather(data.data(), off);
  c.wait(r);
  for (int q = 0; q < N; ++q)
    for (int64_t b = off[q]; b < off[q + 1]; ++b) ASSERT_EQ(data[b], static_cast<uint8_t>(q * 31 + b)) << "rank " << q;
}

TEST_F(Comm, GatherBringsEveryPieceToTheRootOnly) {
  for (int root = 0; root < N; ++root) {
    std::vector<int64_t> off = {0};
    for (int r = 0; r < N; ++r) off.push_back(off.back() + 8 * (r + root % 2));
    std::vector<uint8_t> mine(off[me + 1] - off[me]);
    for (size_t b = 0; b < mine.size(); ++b) mine[b] = static_cast<uint8_t>(me + 7 * b);
    std::vector<uint8_t> out(off.back(), 0xEE);
    comm::Request r = c.gather(mine.data(), out.data(), off, root);
    c.wait(r);
    for (int q = 0; q < N; ++q)
      for (int64_t b = off[q]; b < off[q + 1]; ++b)
        ASSERT_EQ(out[b], me == root ? static_cast<uint8_t>(q + 7 * (b - off[q])) : 0xEE) << "root " << root;
  }
}

TEST_F(Comm, BlobsSumsMaximaAndBroadcast) {
  const std::string mine(static_cast<size_t>(me * 5), static_cast<char>('a' + me));  // rank 0 sends nothing
  const std::vector<std::string> all = c.all_gather_bytes(mine);
  ASSERT_EQ(static_cast<int>(all.size()), N);
  for (int r = 0; r < N; ++r) EXPECT_EQ(all[r], std::string(static_cast<size_t>(r * 5), static_cast<char>('a' + r)));

  double x[3] = {0.1 * (me + 1), 1e16, -1e16 * (me == 0 ? 1 : 0)};
  c.all_reduce_sum(x, 3);
  double expect0 = 0;
  for (int r = 0; r < N; ++r) expect0 += 0.1 * (r + 1);
  EXPECT_EQ(x[0], expect0);  // rank order, so the same bits on every rank
  EXPECT_EQ(x[1], 1e16 * N);
  EXPECT_EQ(x[2], -1e16);
  EXPECT_EQ(c.all_reduce_max(int64_t{10} * me - 3), int64_t{10} * (N - 1) - 3);

  std::vector<int32_t> v(1000, me == N - 1 ? 42 : -1);
  c.broadcast(v.data(), static_cast<int64_t>(v.size() * sizeof(int32_t)), N - 1);
  EXPECT_EQ(std::count(v.begin(), v.end(), 42), 1000);
  c.barrier();
}

TEST_F(Comm, StatsCountTheBytesSent) {
  const int64_t n = 4096;
  const Partition part = Partition::even(n, N);
  std::vector<float> full(n, 1.0f), shard(part.size(me));
  c.reset_stats();
  comm::Request r = c.reduce_scatter(full.data(), 0, n, part, shard.data(), Wire::BF16, false);
  c.wait(r);
  const comm::CommStats s = c.stats();
  EXPECT_EQ(s.operations, 1);
  // Every element of other ranks' shards leaves this rank once, as 2 bytes; nothing leaves a lone process.
  EXPECT_EQ(s.bytes_sent, N == 1 ? 0 : 2 * (n - part.size(me)));
  EXPECT_GE(s.blocked_s, 0);
  for (float v : shard) EXPECT_EQ(v, static_cast<float>(N));
}

static double sum_of(const std::map<std::string, double>& waits) {
  double s = 0;
  for (const auto& [label, seconds] : waits) s += seconds;
  return s;
}

TEST_F(Comm, CriticalPathWaitLeavesOutTheWaitForALateRank) {
  c.forget_waits();  // start of the interval
  c.reset_stats();
  // Each rank in turn arrives 0.3 s late at a blocking collective: the others wait for it, which is its
  // extra work (imbalance), not communication; the late rank itself waits only for the transfer.
  for (int late = 0; late < N; ++late) {
    if (me == late) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    c.barrier();
  }
  const double slowest_own_wait = c.stats().blocked_s;
  const double critical = sum_of(c.take_critical_path_waits());
  EXPECT_GE(critical, 0.0);
  if (N > 1) {
    EXPECT_GT(slowest_own_wait, 0.25);  // every rank waited for the others' late arrivals
    EXPECT_LT(critical, 0.15) << "the waits for late ranks counted as communication";
  } else {
    EXPECT_EQ(critical, 0.0);
  }
  // Every rank gets the same number, and the exchange itself is not part of the next interval.
  const double again = sum_of(c.take_critical_path_waits());
  EXPECT_LT(again, 0.15);
  EXPECT_EQ(c.all_reduce_sum(again), N * again);
}

// Waits are counted under the label that was current when they happened; scopes nest and restore.
TEST_F(Comm, CriticalPathWaitsAreSplitByLabel) {
  c.forget_waits();
  std::vector<float> buf(1 << 16, 1.0f);
  const Partition part = Partition::even(static_cast<int64_t>(buf.size()), N);
  std::vector<float> shard(part.size(me));
  {
    comm::WaitLabel outer(&c, "outer");
    c.barrier();
    {
      comm::WaitLabel inner(&c, "inner");
      comm::Request r = c.reduce_scatter(buf.data(), 0, static_cast<int64_t>(buf.size()), part, shard.data(),
                                         Wire::F32, false);
      c.wait(r);
    }
    c.barrier();
  }
  c.barrier();  // unlabelled again
  EXPECT_STREQ(c.label_waits(""), "");
  const std::map<std::string, double> waits = c.take_critical_path_waits();
  if (N == 1) {
    EXPECT_TRUE(waits.empty());
    return;
  }
  // Every rank waits for every operation, so each label that had one is there.
  std::vector<std::string> labels;
  for (const auto& [label, seconds] : waits) {
    labels.push_back(label);
    EXPECT_GE(seconds, 0.0) << label;
  }
  EXPECT_EQ(labels, (std::vector<std::string>{"", "inner", "outer"}));
  // Every label's total is the same on every rank (rank 0's labels decide, and the ranks agree here).
  for (const char* label : {"outer", "inner", ""}) {
    const double s = waits.count(label) ? waits.at(label) : 0.0;
    EXPECT_EQ(c.all_reduce_sum(s), N * s) << label;
  }
}

TEST_F(Comm, BadArgumentsAreErrorsNotCollectives) {
  const Partition wrong = Partition::even(10, N + 1);
  std::vector<float> buf(10);
  EXPECT_THROW(c.reduce_scatter(buf.data(), 0, 10, wrong, buf.data(), Wire::F32, false), Error);
  const Partition part = Partition::even(10, N);
  EXPECT_THROW(c.reduce_scatter(buf.data(), 4, 11, part, buf.data(), Wire::F32, false), Error);
  EXPECT_THROW(c.all_gather(buf.data(), std::vector<int64_t>(N, 0)), Error);
  EXPECT_THROW(comm::parse_wire("fp16"), Error);
  EXPECT_EQ(comm::parse_wire("bf16"), Wire::BF16);
  EXPECT_EQ(comm::parse_wire("fp32"), Wire::F32);
}

}  // namespace
