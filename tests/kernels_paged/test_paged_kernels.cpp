// Tests of the paged kernels (kernels/paged_ops.h) against the naive references (kernels/ref/ref_paged.h):
// KV writes in f32/bf16/int8, block copy, paged attention (decode + chunked prefill, odd sizes, GQA,
// shuffled block tables), int8/bf16 error vs f32, batch and thread-count invariance, guard bytes, and GEMV.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "core/threads.h"
#include "kernels/backend.h"
#include "kernels/cpu/lane_sums.h"
#include "kernels/paged_ops.h"
#include "kernels/ref/ref_paged.h"

using namespace grpo;
using ops::KvDType;

namespace {

constexpr float kGuard = 12345.0f;

std::vector<float> randn(int64_t n, uint64_t seed, float scale = 1.0f) {
  Rng rng(seed);
  std::vector<float> x(n);
  for (float& v : x) v = static_cast<float>(rng.normal()) * scale;
  return x;
}

// Owns the storage of a paged cache for tests.
struct TestCache {
  std::vector<uint8_t> k, v;
  std::vector<float> ks, vs;
  ops::PagedKvView view;
  TestCache(KvDType dtype, int64_t L, int64_t blocks, int64_t K, int64_t bs, int64_t D) {
    view = {nullptr, nullptr, nullptr, nullptr, dtype, L, blocks, K, bs, D};
    const int64_t elems = L * blocks * K * bs * D;
    k.assign(elems * ops::kv_dtype_size(dtype), 0);
    v.assign(elems * ops::kv_dtype_size(dtype), 0);
    view.k = k.data();
    view.v = v.data();
    if (dtype == KvDType::I8) {
      ks.assign(L * blocks * K * bs, 0.0f);
      vs.assign(L * blocks * K * bs, 0.0f);
      view.k_scale = ks.data();
      view.v_scale = vs.data();
    }
  }
};

// A batch of sequences with shuffled block tables and a mix of decode tokens and prefill chunks.
struct AttentionCase {
  int64_t L = 2, K = 2, H = 6, D = 40, bs = 5, blocks = 40;
  std::vector<int32_t> seq_lens{1, 7, 23, 5};  // tokens in cache per sequence
  std::vector<int32_t> indptr, table, seq_index, pos;
  std::vector<float> q;
  int64_t T = 0;

  explicit AttentionCase(uint64_t seed, std::vector<int32_t> lens = {1, 7, 23, 5}, int64_t nblocks = 40,
                         int64_t head_dim = 40)
      : D(head_dim), blocks(nblocks), seq_lens(std::move(lens)) {
    Rng rng(seed);
    std::vector<int32_t> perm(blocks);
    std::iota(perm.begin(), perm.end(), 0);
    for (int64_t i = blocks - 1; i > 0; --i) std::swap(perm[i], perm[rng.below(i + 1)]);
    indptr.push_back(0);
    int64_t next = 0;
    for (size_t s = 0; s < seq_lens.size(); ++s) {
      const int64_t nb = (seq_lens[s] + bs - 1) / bs;
      for (int64_t b = 0; b < nb; ++b) table.push_back(perm[next++]);
      indptr.push_back(static_cast<int32_t>(table.size()));
      // sequence 2 is a prefill chunk of its last 9 tokens, the others decode their last token
      const int32_t first = s == 2 ? seq_lens[s] - 9 : seq_lens[s] - 1;
      for (int32_t p = first; p < seq_lens[s]; ++p) {
        seq_index.push_back(static_cast<int32_t>(s));
        pos.push_back(p);
      }
    }
    T = static_cast<int64_t>(pos.size());
    q = randn(T * H * D, seed + 1);
  }
  int64_t S() const { return static_cast<int64_t>(seq_lens.size()); }
  // Slots of every cached token of every sequence, in order, and their k, v [n, K, D].
  void fill(const ops::PagedKvView& kv, int64_t layer, uint64_t seed) const {
    std::vector<int32_t> slots;
    for (size_t s = 0; s < seq_lens.size(); ++s)
      for (int32_t p = 0; p < seq_lens[s]; ++p) slots.push_back(table[indptr[s] + p / bs] * bs + p % bs);
    const int64_t n = static_cast<int64_t>(slots.size());
    auto k = randn(n * K * D, seed), v = randn(n * K * D, seed + 7);
    ops::paged_kv_write(kv, layer, k.data(), v.data(), slots.data(), n);
  }
};

}  // namespace

TEST(PagedKvWrite, ConvertsEachDtypeIntoTheRightSlot) {
  const int64_t K = 3, D = 19, bs = 4;
  for (KvDType dt : {KvDType::F32, KvDType::BF16, KvDType::I8}) {
    TestCache c(dt, 2, 6, K, bs, D);
    std::vector<int32_t> slots{5, 0, 23, 11};
    auto k = randn(4 * K * D, 1), v = randn(4 * K * D, 2);
    ops::paged_kv_write(c.view, 1, k.data(), v.data(), slots.data(), 4);
    for (int t = 0; t < 4; ++t)
      for (int64_t h = 0; h < K; ++h) {
        int8_t q[D];
        const float scale = ref::quantize_row_i8(q, &k[(t * K + h) * D], D);
        for (int64_t d = 0; d < D; ++d) {
          const float x = k[(t * K + h) * D + d];
          const float got = ref::paged_kv_value<float>(c.view, false, 1, slots[t], h, d);
          if (dt == KvDType::F32) {
            EXPECT_EQ(got, x);
          } else if (dt == KvDType::BF16) {
            EXPECT_EQ(got, bf16_to_f32(f32_to_bf16(x)));
          } else {
            EXPECT_EQ(got, q[d] * scale);
            EXPECT_LE(std::fabs(got - x), scale * 0.5f + 1e-6f);  // rounding error at most half a step
          }
        }
      }
    // layer 0 untouched
    EXPECT_EQ(ref::paged_kv_value<float>(c.view, false, 0, 5, 0, 0), 0.0f);
  }
}

TEST(PagedKvWrite, RejectsSlotOutsideTheCache) {
  TestCache c(KvDType::F32, 1, 2, 1, 4, 8);
  std::vector<float> k(8), v(8);
  int32_t slot = 8;
  EXPECT_THROW(ops::paged_kv_write(c.view, 0, k.data(), v.data(), &slot, 1), Error);
  slot = -1;
  EXPECT_THROW(ops::paged_kv_write(c.view, 0, k.data(), v.data(), &slot, 1), Error);
  slot = 0;
  EXPECT_THROW(ops::paged_kv_write(c.view, 1, k.data(), v.data(), &slot, 1), Error);
}

TEST(PagedKvCopyBlock, CopiesTheFilledPrefixOfEveryLayer) {
  for (KvDType dt : {KvDType::F32, KvDType::I8}) {
    const int64_t L = 2, K = 2, bs = 4, D = 8;
    TestCache c(dt, L, 3, K, bs, D);
    std::vector<int32_t> slots{4, 5, 6, 7};  // block 1 full
    auto k = randn(4 * K * D, 3), v = randn(4 * K * D, 4);
    for (int64_t l = 0; l < L; ++l) ops::paged_kv_write(c.view, l, k.data(), v.data(), slots.data(), 4);
    ops::paged_kv_copy_block(c.view, 1, 2, 3);
    for (int64_t l = 0; l < L; ++l)
      for (int64_t h = 0; h < K; ++h)
        for (int64_t d = 0; d < D; ++d) {
          for (int64_t o = 0; o < 3; ++o) {
            EXPECT_EQ(ref::paged_kv_value<float>(c.view, false, l, 8 + o, h, d),
                      ref::paged_kv_value<float>(c.view, false, l, 4 + o, h, d));
            EXPECT_EQ(ref::paged_kv_value<float>(c.view, true, l, 8 + o, h, d),
                      ref::paged_kv_value<float>(c.view, true, l, 4 + o, h, d));
          }
          EXPECT_EQ(ref::paged_kv_value<float>(c.view, false, l, 11, h, d), 0.0f);  // slot 3 not copied
        }
    EXPECT_THROW(ops::paged_kv_copy_block(c.view, 1, 1, 2), Error);
    EXPECT_THROW(ops::paged_kv_copy_block(c.view, 1, 2, 5), Error);
  }
}

// Head dims 40 (generic loop, masked tails), 64 and 128 (the register-resident output paths).
TEST(PagedAttention, MatchesReferenceForEveryDtypeWithGuards) {
  for (int64_t D : {40, 64, 128}) {
    for (KvDType dt : {KvDType::F32, KvDType::BF16, KvDType::I8}) {
      AttentionCase ac(11, {1, 7, 23, 5}, 40, D);
      TestCache c(dt, ac.L, ac.blocks, ac.K, ac.bs, ac.D);
      ac.fill(c.view, 1, 100);
      const int64_t n = ac.T * ac.H * ac.D;
      std::vector<float> o(n + 16, kGuard), ws(ops::paged_attention_ws_floats(ac.T, ac.H, ac.bs) + 16, kGuard);
      const float scale = 1.0f / std::sqrt(static_cast<float>(ac.D));
      ops::paged_attention(o.data(), ac.q.data(), c.view, 1, ac.indptr.data(), ac.table.data(), ac.seq_index.data(),
                           ac.pos.data(), ac.T, ac.S(), ac.H, scale, ws.data());
      std::vector<double> qd(ac.q.begin(), ac.q.end()), od(n);
      ref::paged_attention<double>(od.data(), qd.data(), c.view, 1, ac.indptr.data(), ac.table.data(),
                                   ac.seq_index.data(), ac.pos.data(), ac.T, ac.H, scale);
      double max_err = 0;
      for (int64_t i = 0; i < n; ++i) max_err = std::max(max_err, std::fabs(o[i] - od[i]));
      // fp32 online softmax vs float64 over the same dequantised values: rounding only.
      EXPECT_LT(max_err, 2e-5) << ops::kv_dtype_name(dt) << " D=" << D;
      for (int i = 0; i < 16; ++i) {
        EXPECT_EQ(o[n + i], kGuard);
        EXPECT_EQ(ws[ws.size() - 16 + i], kGuard);
      }
    }
  }
}

TEST(PagedAttention, QuantisedCacheErrorVsF32IsSmall) {
  AttentionCase ac(21);
  const float scale = 1.0f / std::sqrt(static_cast<float>(ac.D));
  const int64_t n = ac.T * ac.H * ac.D;
  std::vector<float> ws(ops::paged_attention_ws_floats(ac.T, ac.H, ac.bs));
  auto run = [&](KvDType dt) {
    TestCache c(dt, ac.L, ac.blocks, ac.K, ac.bs, ac.D);
    ac.fill(c.view, 0, 200);
    std::vector<float> o(n);
    ops::paged_attention(o.data(), ac.q.data(), c.view, 0, ac.indptr.data(), ac.table.data(), ac.seq_index.data(),
                         ac.pos.data(), ac.T, ac.S(), ac.H, scale, ws.data());
    return o;
  };
  const auto f32 = run(KvDType::F32);
  for (KvDType dt : {KvDType::BF16, KvDType::I8}) {
    const auto o = run(dt);
    double max_err = 0, sq = 0, ref_sq = 0;
    for (int64_t i = 0; i < n; ++i) {
      max_err = std::max(max_err, static_cast<double>(std::fabs(o[i] - f32[i])));
      sq += (o[i] - f32[i]) * (o[i] - f32[i]);
      ref_sq += f32[i] * f32[i];
    }
    const double nmse = sq / ref_sq;
    std::printf("[measured] %s KV vs f32: max abs err %.2e, normalised MSE %.2e\n",
                std::string(ops::kv_dtype_name(dt)).c_str(), max_err, nmse);
    // bf16: 8 mantissa bits (relative 2^-9); int8: absmax/127 steps on unit-normal data.
    EXPECT_LT(max_err, dt == KvDType::BF16 ? 1e-2 : 3e-2);
    EXPECT_LT(nmse, dt == KvDType::BF16 ? 1e-4 : 1e-3);
  }
}

TEST(PagedAttention, TokenResultIndependentOfBatchAndThreads) {
  AttentionCase ac(31, {1, 7, 23, 5, 200}, 60, 64);  // enough work for the threaded path
  TestCache c(KvDType::BF16, ac.L, ac.blocks, ac.K, ac.bs, ac.D);
  ac.fill(c.view, 0, 300);
  const float scale = 0.2f;
  const int64_t HD = ac.H * ac.D;
  std::vector<float> all(ac.T * HD), ws(ops::paged_attention_ws_floats(ac.T, ac.H, ac.bs));
  ops::paged_attention(all.data(), ac.q.data(), c.view, 0, ac.indptr.data(), ac.table.data(), ac.seq_index.data(),
                       ac.pos.data(), ac.T, ac.S(), ac.H, scale, ws.data());
  const int threads = num_threads();
  set_num_threads(1);
  for (int64_t t = 0; t < ac.T; ++t) {
    std::vector<float> one(HD);
    ops::paged_attention(one.data(), ac.q.data() + t * HD, c.view, 0, ac.indptr.data(), ac.table.data(),
                         &ac.seq_index[t], &ac.pos[t], 1, ac.S(), ac.H, scale, ws.data());
    for (int64_t i = 0; i < HD; ++i) ASSERT_EQ(one[i], all[t * HD + i]) << "token " << t;
  }
  set_num_threads(threads);
}

TEST(PagedAttention, RejectsBadPositionsAndHeads) {
  AttentionCase ac(41);
  TestCache c(KvDType::F32, ac.L, ac.blocks, ac.K, ac.bs, ac.D);
  std::vector<float> o(ac.T * ac.H * ac.D), ws(ops::paged_attention_ws_floats(ac.T, ac.H, ac.bs));
  auto pos = ac.pos;
  pos[0] = 5;  // sequence 0 has one block of 5 positions: 0..4
  EXPECT_THROW(ops::paged_attention(o.data(), ac.q.data(), c.view, 0, ac.indptr.data(), ac.table.data(),
                                    ac.seq_index.data(), pos.data(), ac.T, ac.S(), ac.H, 1.0f, ws.data()),
               Error);
  EXPECT_THROW(ops::paged_attention(o.data(), ac.q.data(), c.view, 0, ac.indptr.data(), ac.table.data(),
                                    ac.seq_index.data(), ac.pos.data(), ac.T, ac.S(), 5, 1.0f, ws.data()),
               Error);
  auto table = ac.table;
  table[0] = static_cast<int32_t>(ac.blocks);
  EXPECT_THROW(ops::paged_attention(o.data(), ac.q.data(), c.view, 0, ac.indptr.data(), table.data(),
                                    ac.seq_index.data(), ac.pos.data(), ac.T, ac.S(), ac.H, 1.0f, ws.data()),
               Error);
}

TEST(Gemv, MatchesReferenceOnOddSizesWithGuards) {
  for (DType wt : {DType::F32, DType::BF16})
    for (int64_t B : {1, 2, 3, 4, 5, 7, 9})
      for (int64_t N : {1, 2, 7, 8, 33})
        for (int64_t K : {1, 7, 8, 15, 16, 17, 31, 100}) {
          auto x = randn(B * K, 1), wf = randn(N * K, 2);
          std::vector<bf16_t> wb(N * K), scratch(ops::gemv_x_scratch_elems(B, K));
          for (int64_t i = 0; i < N * K; ++i) wb[i] = f32_to_bf16(wf[i]);
          const void* W = wt == DType::BF16 ? static_cast<const void*>(wb.data()) : wf.data();
          std::vector<float> y(B * N + 16, kGuard);
          std::vector<double> yd(B * N);
          ops::gemv(y.data(), x.data(), W, wt, B, N, K, scratch.data());
          ref::gemv<double>(yd.data(), x.data(), W, wt, B, N, K);
          for (int64_t i = 0; i < B * N; ++i)
            ASSERT_NEAR(y[i], yd[i], 1e-5 * std::sqrt(static_cast<double>(K)) * 4)
                << "B=" << B << " N=" << N << " K=" << K << " i=" << i;
          for (int i = 0; i < 16; ++i) ASSERT_EQ(y[B * N + i], kGuard);
        }
}

// Bitwise: a row's result is the same alone and in a batch (register tiles of several shapes, leftover
// rows in narrower ones; AVX2 bf16 batches over 16 rows split to f32 first) and whatever the thread count,
// for f32 and bf16 weights. K: not a multiple of 16, long rows, rows too long to split (AVX2).
TEST(Gemv, RowResultIndependentOfBatchSizeTilesAndThreads) {
  struct Shape {
    int64_t B, N, K;
  };
  for (const Shape sh : {Shape{40, 301, 333}, Shape{37, 45, 1501}, Shape{34, 8, 4100}}) {
    const int64_t B = sh.B, N = sh.N, K = sh.K;
    auto x = randn(B * K, 5), wf = randn(N * K, 6);
    std::vector<bf16_t> wb(N * K), scratch(ops::gemv_x_scratch_elems(B, K));
    for (int64_t i = 0; i < N * K; ++i) wb[i] = f32_to_bf16(wf[i]);
    for (DType wt : {DType::F32, DType::BF16}) {
      const void* W = wt == DType::BF16 ? static_cast<const void*>(wb.data()) : wf.data();
      std::vector<float> all(B * N), one(N);
      ops::gemv(all.data(), x.data(), W, wt, B, N, K, scratch.data());
      const int threads = num_threads();
      set_num_threads(1);
      for (int64_t b = 0; b < B; ++b) {
        ops::gemv(one.data(), x.data() + b * K, W, wt, 1, N, K, scratch.data());
        for (int64_t n = 0; n < N; ++n)
          ASSERT_EQ(one[n], all[b * N + n]) << dtype_name(wt) << " B=" << B << " b=" << b << " n=" << n;
      }
      set_num_threads(threads);
      for (int64_t sub : {2, 3, 4, 5, 7, 8, 9, 33}) {  // batches of other sizes, from row 1 on
        std::vector<float> part(sub * N);
        ops::gemv(part.data(), x.data() + K, W, wt, sub, N, K, scratch.data());
        for (int64_t i = 0; i < sub * N; ++i)
          ASSERT_EQ(part[i], all[N + i]) << dtype_name(wt) << " batch of " << sub << " i=" << i;
      }
    }
  }
}

TEST(Gemv, Bf16WeightsNeedTheScratch) {
  std::vector<float> x(4), y(2);
  std::vector<bf16_t> w(8);
  EXPECT_THROW(ops::gemv(y.data(), x.data(), w.data(), DType::BF16, 1, 2, 4), Error);
}

TEST(DecodeMatmul, AgreesWithReferenceOnBothSidesOfTheCrossover) {
  const int64_t N = 48, K = 64;
  for (DType wt : {DType::F32, DType::BF16})
    for (int64_t B : {int64_t{1}, ops::gemv_max_batch(wt), ops::gemv_max_batch(wt) + 1, int64_t{40}}) {
      auto x = randn(B * K, 7), wf = randn(N * K, 8);
      std::vector<bf16_t> wb(N * K), xb(ops::gemv_x_scratch_elems(B, K));
      for (int64_t i = 0; i < N * K; ++i) wb[i] = f32_to_bf16(wf[i]);
      const void* W = wt == DType::BF16 ? static_cast<const void*>(wb.data()) : wf.data();
      std::vector<float> y(B * N);
      std::vector<double> yd(B * N);
      ref::gemv<double>(yd.data(), x.data(), W, wt, B, N, K);
      for (ops::DecodeMatmul how :
           {ops::DecodeMatmul::BatchInvariant, ops::DecodeMatmul::Fastest, ops::DecodeMatmul::OneDnn}) {
        ops::decode_matmul(y.data(), x.data(), xb.data(), W, wt, B, N, K, how);
        // both sides round x to bf16 for bf16 weights, as the reference does: f32 rounding only
        const double tol = 1e-4;
        for (int64_t i = 0; i < B * N; ++i) ASSERT_NEAR(y[i], yd[i], tol) << "B=" << B << " " << decode_matmul_name(how);
      }
    }
}

// Odd lengths (tails of 1..7 lanes), temperatures, ties, very negative and -inf logits, guard values.
TEST(SoftmaxNumerators, MatchesReferenceOnOddSizesWithGuards) {
  for (int64_t n : {1, 3, 8, 9, 17, 100, 1001})
    for (float scale : {1.0f, 1.0f / 0.7f, 4.0f}) {
      auto x = randn(n, 50 + n, 3.0f);
      if (n > 4) {
        x[1] = -1e30f;      // far below the max: exactly 0
        x[2] = -INFINITY;   // a masked token
        x[n - 1] = x[3] = 9.5f;  // the max, twice: the first one is the argmax
      }
      std::vector<float> p(n + 16, kGuard);
      const ops::SoftmaxRow row = ops::softmax_numerators(p.data(), x.data(), n, scale);
      std::vector<double> pd(n);
      const double sum = ref::softmax_numerators<double>(pd.data(), x.data(), n, scale);
      const float mx = *std::max_element(x.begin(), x.end());
      EXPECT_EQ(row.max, mx);
      EXPECT_EQ(row.argmax, std::find(x.begin(), x.end(), mx) - x.begin());
      EXPECT_NEAR(row.sum, sum, 1e-6 * sum) << "n=" << n;
      for (int64_t i = 0; i < n; ++i) {
        // the exponent (x - max) * scale is rounded to f32 first: relative error up to |exponent| 2^-24 more
        const double arg = std::fabs((static_cast<double>(x[i]) - mx) * scale);
        const double tol = (2e-7 + (std::isfinite(arg) ? arg : 0) * 1.2e-7) * pd[i] + 1e-38;
        ASSERT_NEAR(p[i], pd[i], tol) << "n=" << n << " i=" << i;
      }
      if (n > 4) {
        EXPECT_EQ(p[1], 0.0f);
        EXPECT_EQ(p[2], 0.0f);
      }
      for (int i = 0; i < 16; ++i) ASSERT_EQ(p[n + i], kGuard);
    }
}

// A row's numerators do not depend on what follows it (the tail is computed in the same lanes).
TEST(SoftmaxNumerators, PrefixOfARowGivesTheSameValues) {
  const auto x = randn(37, 60);
  std::vector<float> whole(37), part(37);
  ops::softmax_numerators(whole.data(), x.data(), 37, 1.3f);
  const float mx = *std::max_element(x.begin(), x.end());
  const int64_t at = std::max_element(x.begin(), x.end()) - x.begin();
  // the first at+1+k elements hold the same maximum: the same numerators
  for (int64_t len = at + 1; len <= 37; ++len) {
    ops::SoftmaxRow row = ops::softmax_numerators(part.data(), x.data(), len, 1.3f);
    ASSERT_EQ(row.max, mx);
    for (int64_t i = 0; i < len; ++i) ASSERT_EQ(part[i], whole[i]) << "len=" << len << " i=" << i;
  }
}

TEST(SoftmaxNumerators, RejectsNanAndNonFiniteMaxima) {
  std::vector<float> p(20);
  std::vector<float> x(20, 1.0f);
  x[13] = NAN;
  try {
    ops::softmax_numerators(p.data(), x.data(), 20, 1.0f);
    FAIL() << "NaN accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("logits[13] is NaN"), std::string::npos) << e.what();
  }
  std::vector<float> inf(9, -INFINITY);
  EXPECT_THROW(ops::softmax_numerators(p.data(), inf.data(), 9, 1.0f), Error);
  inf[4] = INFINITY;
  EXPECT_THROW(ops::softmax_numerators(p.data(), inf.data(), 9, 1.0f), Error);
  EXPECT_THROW(ops::softmax_numerators(p.data(), x.data(), 0, 1.0f), Error);
  x[13] = 0;
  EXPECT_THROW(ops::softmax_numerators(p.data(), x.data(), 20, INFINITY), Error);
}

// reduce4x16 must make exactly reduce16's additions (the kernels mix them by tile shape).
GRPO_LANE_SUMS_AVX512 void lane_sums_both_ways(const float* v, float* four, float* one) {
  __m512 r[4];
  for (int i = 0; i < 4; ++i) r[i] = _mm512_loadu_ps(v + 16 * i);
  _mm_storeu_ps(four, cpu::reduce4x16(r[0], r[1], r[2], r[3]));
  for (int i = 0; i < 4; ++i) one[i] = cpu::reduce16(r[i]);
}

GRPO_LANE_SUMS_AVX2 void lane_sums_both_ways_avx2(const float* v, float* four, float* one) {
  __m256 r[4];
  for (int i = 0; i < 4; ++i) r[i] = _mm256_loadu_ps(v + 8 * i);
  _mm_storeu_ps(four, cpu::reduce4x8(r[0], r[1], r[2], r[3]));
  for (int i = 0; i < 4; ++i) one[i] = cpu::reduce8(r[i]);
}

// Lanes of mixed scales, so that a different order of additions would round differently.
std::vector<float> mixed_scales(int64_t n, uint64_t seed) {
  auto v = randn(n, seed);
  for (size_t i = 0; i < v.size(); ++i) v[i] *= std::pow(10.0f, static_cast<float>(i % 7) - 3);
  return v;
}

TEST(LaneSums, FourAtOnceEqualsOneByOneBitwiseAvx2) {
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const auto v = mixed_scales(32, seed);
    float four[4], one[4];
    lane_sums_both_ways_avx2(v.data(), four, one);
    for (int i = 0; i < 4; ++i) ASSERT_EQ(four[i], one[i]) << "seed " << seed << " vector " << i;
  }
  // and the tree is the documented one: x_i + x_{i+4}, then 0+2 and 1+3, then the last pair
  const auto v = mixed_scales(32, 7);
  const float s4[4] = {v[0] + v[4], v[1] + v[5], v[2] + v[6], v[3] + v[7]};
  float four[4], one[4];
  lane_sums_both_ways_avx2(v.data(), four, one);
  EXPECT_EQ(one[0], (s4[0] + s4[2]) + (s4[1] + s4[3]));
}

TEST(LaneSums, FourAtOnceEqualsOneByOneBitwise) {
  if (!cpu_has_avx512()) GTEST_SKIP() << "no AVX-512";
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const auto v = mixed_scales(64, seed);
    float four[4], one[4];
    lane_sums_both_ways(v.data(), four, one);
    for (int i = 0; i < 4; ++i) ASSERT_EQ(four[i], one[i]) << "seed " << seed << " vector " << i;
  }
}
