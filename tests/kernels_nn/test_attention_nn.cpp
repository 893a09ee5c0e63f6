// Tests of the flash-style causal GQA attention: CPU (both SIMD paths) vs the double reference on packed
// batches with sequences of odd lengths (1, tile-crossing 70, 130 and 131), GQA 6:2, 3:3 and 2:1, head dims
// 24 (padded path), 64 and 128 (in-place dq path); finite-difference gradients of q, k, v; guard bytes; causality
// and sequence isolation (perturbing later tokens or other sequences leaves outputs bit-identical);
// identical results for 1 and 2 threads; bad cu_seqlens.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "kernels/ops.h"
#include "kernels/ref/ref_nn.h"
#include "nn_test_util.h"

using namespace grpo;
using namespace nn_test;

namespace {

struct AttnCase {
  std::vector<int32_t> lens;
  int64_t H, K, D;
  int64_t T() const { return std::accumulate(lens.begin(), lens.end(), int64_t{0}); }
  int64_t S() const { return static_cast<int64_t>(lens.size()); }
  std::vector<int32_t> cu() const {
    std::vector<int32_t> c{0};
    for (int32_t l : lens) c.push_back(c.back() + l);
    return c;
  }
  float scale() const { return 1.0f / std::sqrt(static_cast<float>(D)); }
};

// Everything one forward + backward call produces.
struct AttnRun {
  std::vector<float> o, lse, dq, dk, dv;
};

AttnRun run_cpu(const AttnCase& c, const std::vector<float>& q, const std::vector<float>& k,
                const std::vector<float>& v, const std::vector<float>& dout) {
  const int64_t T = c.T(), H = c.H, K = c.K, D = c.D;
  const auto cu = c.cu();
  Guarded o(T * H * D), lse(T * H), dq(T * H * D), dk(T * K * D), dv(T * K * D);
  Guarded ws(ops::attention_ws_floats(T, H, K, D));
  ops::attention_forward(o.data(), lse.data(), q.data(), k.data(), v.data(), cu.data(), c.S(), T, H, K, D,
                         c.scale(), ws.data());
  ops::attention_backward(dq.data(), dk.data(), dv.data(), dout.data(), q.data(), k.data(), v.data(), o.data(),
                          lse.data(), cu.data(), c.S(), T, H, K, D, c.scale(), ws.data());
  EXPECT_TRUE(o.guards_intact() && lse.guards_intact() && dq.guards_intact() && dk.guards_intact() &&
              dv.guards_intact() && ws.guards_intact());
  return {o.vec(), lse.vec(), dq.vec(), dk.vec(), dv.vec()};
}

struct AttnInputs {
  std::vector<float> q, k, v, dout;
  explicit AttnInputs(const AttnCase& c, uint64_t seed)
      : q(randn(c.T() * c.H * c.D, seed, 1.5f)),  // spread scores so that softmax rows are far from uniform
        k(randn(c.T() * c.K * c.D, seed + 1, 1.5f)),
        v(randn(c.T() * c.K * c.D, seed + 2)),
        dout(randn(c.T() * c.H * c.D, seed + 3)) {}
};

const std::vector<AttnCase> kCases = {
    {{5, 1, 70, 131}, 6, 2, 24},  // GQA 3 heads per kv head, padded head dim, tile-crossing sequences
    {{1}, 3, 3, 24},              // T = 1
    {{64, 65, 3}, 4, 2, 64},      // exact tile, tile + 1; head dim a multiple of 64 (dq accumulated in place)
    {{130, 7}, 2, 1, 128},        // Qwen3 head dim: two column passes per tile; all heads on one kv head
};

TEST(NnAttention, MatchesDoubleReference) {
  for (auto isa : available_isas())
    for (const AttnCase& c : kCases) {
      ForceIsa force(isa);
      SCOPED_TRACE(std::string(isa_name(isa)) + " T=" + std::to_string(c.T()) + " H=" + std::to_string(c.H) +
                   " K=" + std::to_string(c.K) + " D=" + std::to_string(c.D));
      const int64_t T = c.T(), H = c.H, K = c.K, D = c.D;
      const AttnInputs in(c, 20);
      const AttnRun got = run_cpu(c, in.q, in.k, in.v, in.dout);
      const auto cu = c.cu();
      const auto qd = to_double(in.q), kd = to_double(in.k), vd = to_double(in.v), dd = to_double(in.dout);
      std::vector<double> o(T * H * D), lse(T * H), dq(T * H * D), dk(T * K * D), dv(T * K * D);
      ref::attention_forward(o.data(), lse.data(), qd.data(), kd.data(), vd.data(), cu.data(), c.S(), H, K, D,
                             double{c.scale()});
      ref::attention_backward(dq.data(), dk.data(), dv.data(), dd.data(), qd.data(), kd.data(), vd.data(), cu.data(),
                              c.S(), T, H, K, D, double{c.scale()});
      // fp32 dot products of D terms and sums over up to 131 keys, exp2 ~2e-7: 1e-5 of the tensor's scale
      // for the forward, 3e-5 for gradients (one more reduction over keys or queries).
      EXPECT_LT(max_rel_err(got.o, o), 1e-5);
      EXPECT_LT(max_rel_err(got.lse, lse), 1e-5);
      // dq and dk vanish when every sequence has one token (a softmax over one key has zero gradient), so
      // their error is measured against max(max |ref|, 1) (inputs are O(1)): only rounding remains.
      EXPECT_LT(max_rel_err(got.dq.data(), dq.data(), T * H * D, 1.0), 3e-5);
      EXPECT_LT(max_rel_err(got.dk.data(), dk.data(), T * K * D, 1.0), 3e-5);
      EXPECT_LT(max_rel_err(got.dv, dv), 3e-5);
    }
}

TEST(NnAttention, BackwardMatchesFiniteDifferences) {
  const AttnCase c{{7, 1, 70}, 4, 2, 24};
  const int64_t T = c.T(), H = c.H, K = c.K, D = c.D;
  const AttnInputs in(c, 30);
  const AttnRun got = run_cpu(c, in.q, in.k, in.v, in.dout);
  const auto cu = c.cu();
  auto qd = to_double(in.q), kd = to_double(in.k), vd = to_double(in.v);
  const auto dd = to_double(in.dout);
  auto loss = [&] {  // sum(dout * o) with o from the double reference
    std::vector<double> o(T * H * D), lse(T * H);
    ref::attention_forward(o.data(), lse.data(), qd.data(), kd.data(), vd.data(), cu.data(), c.S(), H, K, D,
                           double{c.scale()});
    double l = 0;
    for (int64_t i = 0; i < T * H * D; ++i) l += dd[i] * o[i];
    return l;
  };
  // Float gradients vs double differences (truncation ~1e-12, rounding ~1e-9): the float error dominates.
  expect_matches_finite_differences(loss, qd, got.dq, 60, 5e-5, "attention dq");
  expect_matches_finite_differences(loss, kd, got.dk, 60, 5e-5, "attention dk");
  expect_matches_finite_differences(loss, vd, got.dv, 60, 5e-5, "attention dv");
}

// Perturbing q, k, v of token `t` of sequence 2 must leave every earlier row of that sequence and every row
// of the other sequences bit-identical (o, lse); perturbing dout of that token leaves dk, dv of later keys and
// dq of all other rows bit-identical.
TEST(NnAttention, NeverAttendsToTheFutureOrAcrossSequences) {
  for (auto isa : available_isas()) {
    ForceIsa force(isa);
    SCOPED_TRACE(isa_name(isa));
    const AttnCase c{{9, 1, 100, 20}, 4, 2, 24};
    const int64_t H = c.H, K = c.K, D = c.D;
    const auto cu = c.cu();
    const AttnInputs base(c, 40);
    const AttnRun ref_run = run_cpu(c, base.q, base.k, base.v, base.dout);
    const int64_t t = cu[2] + 40;  // inside sequence 2, in its first tile

    AttnInputs changed = base;
    for (int64_t d = 0; d < H * D; ++d) changed.q[t * H * D + d] += 3.0f;
    for (int64_t d = 0; d < K * D; ++d) {
      changed.k[t * K * D + d] -= 2.0f;
      changed.v[t * K * D + d] *= -4.0f;
    }
    const AttnRun run = run_cpu(c, changed.q, changed.k, changed.v, changed.dout);
    for (int64_t row = 0; row < c.T(); ++row) {
      if (row >= t && row < cu[3]) continue;  // rows that may legitimately see token t
      for (int64_t i = row * H * D; i < (row + 1) * H * D; ++i) ASSERT_EQ(run.o[i], ref_run.o[i]) << "row " << row;
      for (int64_t h = 0; h < H; ++h) ASSERT_EQ(run.lse[row * H + h], ref_run.lse[row * H + h]) << "row " << row;
    }

    AttnInputs grad_changed = base;
    for (int64_t d = 0; d < H * D; ++d) grad_changed.dout[t * H * D + d] += 5.0f;
    const AttnRun g = run_cpu(c, base.q, base.k, base.v, grad_changed.dout);
    for (int64_t row = 0; row < c.T(); ++row) {
      if (row != t) {
        for (int64_t i = row * H * D; i < (row + 1) * H * D; ++i) ASSERT_EQ(g.dq[i], ref_run.dq[i]) << "row " << row;
      }
      if (row > t || row < cu[2]) {  // keys after t, or in other sequences, are not read by row t
        for (int64_t i = row * K * D; i < (row + 1) * K * D; ++i) {
          ASSERT_EQ(g.dk[i], ref_run.dk[i]) << "key " << row;
          ASSERT_EQ(g.dv[i], ref_run.dv[i]) << "key " << row;
        }
      }
    }
  }
}

TEST(NnAttention, IdenticalForOneAndTwoThreads) {
  const int saved = omp_get_max_threads();
  for (const AttnCase& c : kCases) {
    const AttnInputs in(c, 50);
    omp_set_num_threads(1);
    const AttnRun one = run_cpu(c, in.q, in.k, in.v, in.dout);
    omp_set_num_threads(2);
    const AttnRun two = run_cpu(c, in.q, in.k, in.v, in.dout);
    EXPECT_EQ(one.o, two.o);
    EXPECT_EQ(one.lse, two.lse);
    EXPECT_EQ(one.dq, two.dq);
    EXPECT_EQ(one.dk, two.dk);
    EXPECT_EQ(one.dv, two.dv);
  }
  omp_set_num_threads(saved);
}

TEST(NnAttention, RejectsBadArguments) {
  const int64_t T = 4, H = 2, K = 2, D = 8;
  std::vector<float> buf(T * H * D, 0.1f), ws(ops::attention_ws_floats(T, H, K, D));
  auto forward = [&](const std::vector<int32_t>& cu, int64_t S, int64_t Hq) {
    ops::attention_forward(buf.data(), buf.data(), buf.data(), buf.data(), buf.data(), cu.data(), S, T, Hq, K, D,
                           0.3f, ws.data());
  };
  EXPECT_THROW(forward({0, 3, 2, 4}, 3, H), Error);  // decreasing
  EXPECT_THROW(forward({1, 4}, 1, H), Error);        // does not start at 0
  EXPECT_THROW(forward({0, 3}, 1, H), Error);        // does not end at T
  EXPECT_THROW(forward({0, 4}, 1, 3), Error);        // H not a multiple of K
}

}  // namespace
