// Tests of ops::gemm (oneDNN) against the naive reference: all four transpose combinations, f32 and bf16
// inputs, beta 0 and 1, alpha != 1, leading dimensions larger than the rows (padding columns must stay
// untouched), guard values after C, empty sizes, the shape cache across calls, and argument errors.
// bf16 runs natively or emulated (widened to f32) as the ISA decision says; both are checked where the CPU
// allows. Also the f32 <-> bf16 conversions: every ISA's vector path against core/dtype.h bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <tuple>

#include "core/dtype.h"
#include "core/error.h"
#include "isa_util.h"
#include "kernels/backend.h"
#include "kernels/cpu/head_gemm.h"
#include "kernels/ops.h"
#include "kernels/ref/ref_head.h"
#include "kernels_head/head_test_util.h"

namespace grpo {
namespace {

using ops::Trans;

struct GemmCase {
  Trans ta, tb;
  DType dtype;
  float alpha, beta;
  int64_t M, N, K;
};

// Runs one case with padded leading dims; returns the max error relative to the largest |C| value.
double run_gemm_case(const GemmCase& c, uint64_t seed) {
  const int64_t a_rows = c.ta == Trans::N ? c.M : c.K, a_cols = c.ta == Trans::N ? c.K : c.M;
  const int64_t b_rows = c.tb == Trans::N ? c.K : c.N, b_cols = c.tb == Trans::N ? c.N : c.K;
  const int64_t lda = a_cols + 3, ldb = b_cols + 5, ldc = c.N + 7;
  std::vector<float> a = test::uniform(a_rows * lda, seed), b = test::uniform(b_rows * ldb, seed + 1);
  std::vector<bf16_t> a16(a.size()), b16(b.size());
  if (c.dtype == DType::BF16) {  // the reference sees exactly the bf16 values the kernel multiplies
    for (size_t i = 0; i < a.size(); ++i) a[i] = bf16_to_f32(a16[i] = f32_to_bf16(a[i]));
    for (size_t i = 0; i < b.size(); ++i) b[i] = bf16_to_f32(b16[i] = f32_to_bf16(b[i]));
  }
  const std::vector<float> c0 = test::uniform(c.M * ldc, seed + 2);
  test::Guarded out(c0);
  const void* A = c.dtype == DType::BF16 ? static_cast<const void*>(a16.data()) : a.data();
  const void* B = c.dtype == DType::BF16 ? static_cast<const void*>(b16.data()) : b.data();
  ops::gemm(c.ta, c.tb, c.M, c.N, c.K, c.alpha, A, lda, B, ldb, c.beta, out.data(), ldc, c.dtype);

  std::vector<double> expect = test::to_double(c0);
  ref::gemm<double>(c.ta, c.tb, c.M, c.N, c.K, c.alpha, test::to_double(a).data(), lda,
                    test::to_double(b).data(), ldb, c.beta, expect.data(), ldc);
  EXPECT_TRUE(out.guards_intact());
  for (int64_t i = 0; i < c.M; ++i)
    for (int64_t j = c.N; j < ldc; ++j) EXPECT_EQ(out[i * ldc + j], c0[i * ldc + j]) << "padding column " << j;
  return test::max_rel_err(out.values(), expect);
}

class GemmAllCombos : public ::testing::TestWithParam<std::tuple<Trans, Trans, DType, float>> {};

TEST_P(GemmAllCombos, MatchesReferenceWithPaddedLeadingDims) {
  const auto [ta, tb, dtype, beta] = GetParam();
  // bf16: native and emulated where this process can run both; f32 is oneDNN's at every level.
  for (Isa level : dtype == DType::BF16 ? test::runnable_isas() : std::vector<Isa>{isa()}) {
    test::ScopedIsa scope(level);
    for (bool native : dtype == DType::BF16 ? test::runnable_bf16_gemms(level) : std::vector<bool>{false}) {
      test::ScopedBf16Gemm path(native && dtype == DType::BF16);
      // Both a small odd shape and one large enough for oneDNN's blocked kernels and their tails.
      for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{5, 19, 37}, {130, 67, 300}}) {
        for (float alpha : {1.0f, 0.75f}) {
          // f32: fp32 accumulation of K products of values in [-1, 1]; bf16 inputs are exact in the reference.
          const double err = run_gemm_case({ta, tb, dtype, alpha, beta, M, N, K}, 17 + M);
          EXPECT_LT(err, 2e-6) << isa_name(level) << (native ? " native" : " emulated") << " M=" << M << " N=" << N
                               << " K=" << K << " alpha=" << alpha;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Head, GemmAllCombos,
                         ::testing::Combine(::testing::Values(Trans::N, Trans::T), ::testing::Values(Trans::N, Trans::T),
                                            ::testing::Values(DType::F32, DType::BF16),
                                            ::testing::Values(0.0f, 1.0f)));

// Batched: the attention layouts of the plain path ([L, H, D] rows read per head through the batch stride,
// contiguous [H, L, L] scores) and padded leading dims, every transpose combination, beta 0 and 1.
TEST(GemmBatched, MatchesReferencePerBatch) {
  for (Trans ta : {Trans::N, Trans::T})
    for (Trans tb : {Trans::N, Trans::T})
      for (float beta : {0.0f, 1.0f})
        for (auto [batch, M, N, K] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{3, 5, 19, 37}, {8, 70, 64, 33}}) {
          const int64_t a_rows = ta == Trans::N ? M : K, a_cols = ta == Trans::N ? K : M;
          const int64_t b_rows = tb == Trans::N ? K : N, b_cols = tb == Trans::N ? N : K;
          // A interleaved like q [rows, batch, cols] (stride a_cols < lda); B and C batch-major with padding.
          const int64_t lda = batch * a_cols, sa = a_cols;
          const int64_t ldb = b_cols + 3, sb = b_rows * ldb + 5;
          const int64_t ldc = N + 2, sc = M * ldc + 1;
          std::vector<float> a = test::uniform(a_rows * lda, 3), b = test::uniform(batch * sb, 4);
          const std::vector<float> c0 = test::uniform(batch * sc, 5);
          test::Guarded out(c0);
          ops::gemm_batched(ta, tb, batch, M, N, K, 0.5f, a.data(), lda, sa, b.data(), ldb, sb, beta, out.data(), ldc,
                            sc);
          std::vector<double> expect = test::to_double(c0);
          ref::gemm_batched<double>(ta, tb, batch, M, N, K, 0.5, test::to_double(a).data(), lda, sa,
                                    test::to_double(b).data(), ldb, sb, beta, expect.data(), ldc, sc);
          EXPECT_TRUE(out.guards_intact());
          EXPECT_LT(test::max_rel_err(out.values(), expect), 2e-6)
              << "batch " << batch << " M " << M << " N " << N << " K " << K << " beta " << beta;
        }
}

TEST(GemmBatched, EmptyAndBadArguments) {
  std::vector<float> c(6, 7.0f);
  ops::gemm_batched(Trans::N, Trans::N, 2, 1, 3, 0, 1.0f, nullptr, 1, 0, nullptr, 3, 0, 0.0f, c.data(), 3, 3);
  for (float v : c) EXPECT_EQ(v, 0.0f);  // K = 0: C = beta C
  ops::gemm_batched(Trans::N, Trans::N, 0, 4, 4, 4, 1.0f, nullptr, 4, 16, nullptr, 4, 16, 0.0f, nullptr, 4, 16);
  EXPECT_THROW(ops::gemm_batched(Trans::N, Trans::N, -1, 1, 1, 1, 1.0f, c.data(), 1, 1, c.data(), 1, 1, 0.0f, c.data(),
                                 1, 1),
               Error);
  EXPECT_THROW(ops::gemm_batched(Trans::N, Trans::N, 1, 2, 2, 2, 1.0f, c.data(), 1, 4, c.data(), 2, 4, 0.0f, c.data(),
                                 2, 4),
               Error);  // lda < K
  EXPECT_THROW(ops::gemm_batched(Trans::N, Trans::N, 1, 1, 1, 1, 1.0f, c.data(), 1, 1, c.data(), 1, 1, 0.5f, c.data(),
                                 1, 1),
               Error);  // beta not 0 or 1
}

TEST(Gemm, ShapeCacheRebindsPointersOnEveryCall) {
  const int64_t M = 7, N = 9, K = 11;
  for (uint64_t seed : {1, 2, 3}) {
    const auto a = test::uniform(M * K, seed), b = test::uniform(K * N, seed + 10);
    std::vector<float> c(M * N, 0.0f);
    std::vector<double> expect(M * N, 0.0);
    ops::gemm(Trans::N, Trans::N, M, N, K, 1.0f, a.data(), K, b.data(), N, 0.0f, c.data(), N, DType::F32);
    ref::gemm<double>(Trans::N, Trans::N, M, N, K, 1.0, test::to_double(a).data(), K, test::to_double(b).data(),
                      N, 0.0, expect.data(), N);
    EXPECT_LT(test::max_rel_err(c, expect), 1e-6) << "call " << seed;
  }
}

// A repeated shape reuses its primitive; more distinct shapes than the cache holds evict the oldest,
// and every result stays right (capacity lowered to 8 so that a few shapes overflow it).
TEST(Gemm, ShapeCacheReusesAndStaysBounded) {
  const int64_t N = 2, K = 3;
  const std::vector<float> a(40 * K, 0.5f), b(K * N, 2.0f);
  std::vector<float> c(40 * N);
  auto run = [&](int64_t M) {
    ops::gemm(Trans::N, Trans::N, M, N, K, 1.0f, a.data(), K, b.data(), N, 0.0f, c.data(), N, DType::F32);
    ASSERT_EQ(c[0], 3.0f) << "M=" << M;
    ASSERT_EQ(c[(M - 1) * N + 1], 3.0f) << "M=" << M;
  };
  const size_t capacity = ops::detail::gemm_cache_capacity();
  ops::detail::set_gemm_cache_capacity(8);
  run(40);
  const size_t after_first = ops::detail::gemm_cache_size();
  run(40);
  EXPECT_EQ(ops::detail::gemm_cache_size(), after_first);  // a cache hit adds nothing
  for (int64_t M = 1; M <= 20; ++M) {
    run(M);
    EXPECT_LE(ops::detail::gemm_cache_size(), 8u);
  }
  ops::detail::set_gemm_cache_capacity(capacity);
  EXPECT_THROW(ops::detail::set_gemm_cache_capacity(0), Error);
}

TEST(Gemm, BetaZeroIgnoresNaNInC) {
  const int64_t M = 3, N = 4, K = 2;
  const std::vector<float> a(M * K, 1.0f), b(K * N, 2.0f);
  std::vector<float> c(M * N, NAN);
  ops::gemm(Trans::N, Trans::N, M, N, K, 1.0f, a.data(), K, b.data(), N, 0.0f, c.data(), N, DType::F32);
  for (float v : c) EXPECT_EQ(v, 4.0f);
}

TEST(Gemm, EmptySizes) {
  std::vector<float> c = {1, 2, 3, 4, 5, 6};
  const float a = 1.0f, b = 1.0f;
  ops::gemm(Trans::N, Trans::N, 2, 3, 0, 1.0f, &a, 1, &b, 3, 1.0f, c.data(), 3, DType::F32);
  EXPECT_EQ(c, (std::vector<float>{1, 2, 3, 4, 5, 6}));  // K = 0, beta = 1: C unchanged
  ops::gemm(Trans::N, Trans::N, 0, 3, 4, 1.0f, &a, 4, &b, 3, 0.0f, c.data(), 3, DType::F32);
  EXPECT_EQ(c, (std::vector<float>{1, 2, 3, 4, 5, 6}));  // M = 0: nothing written
  ops::gemm(Trans::N, Trans::N, 2, 3, 0, 1.0f, &a, 1, &b, 3, 0.0f, c.data(), 3, DType::F32);
  EXPECT_EQ(c, std::vector<float>(6, 0.0f));  // K = 0, beta = 0: C = 0
}

TEST(Gemm, RejectsBadArguments) {
  std::vector<float> a(64, 1.0f), b(64, 1.0f), c(64, 0.0f);
  auto call = [&](int64_t lda, int64_t ldb, int64_t ldc, float beta, DType dt, Trans ta = Trans::N) {
    ops::gemm(ta, Trans::N, 4, 4, 4, 1.0f, a.data(), lda, b.data(), ldb, beta, c.data(), ldc, dt);
  };
  EXPECT_NO_THROW(call(4, 4, 4, 0.0f, DType::F32));
  EXPECT_THROW(call(3, 4, 4, 0.0f, DType::F32), Error);
  EXPECT_THROW(call(4, 3, 4, 0.0f, DType::F32), Error);
  EXPECT_THROW(call(4, 4, 3, 0.0f, DType::F32), Error);
  EXPECT_THROW(call(4, 4, 4, 0.5f, DType::F32), Error);
  EXPECT_THROW(call(4, 4, 4, 0.0f, DType::I32), Error);
  EXPECT_THROW(ops::gemm(Trans::N, Trans::N, 4, 4, 4, 1.0f, nullptr, 4, b.data(), 4, 0.0f, c.data(), 4, DType::F32),
               Error);
  try {
    call(2, 4, 4, 0.0f, DType::F32, Trans::T);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[gemm] lda=2"), std::string::npos) << e.what();
  }
}

// A failure inside the GEMM names the operation, the shapes, the dtype and the ISA: here the emulated bf16
// path cannot get memory for its f32 copy of a 2^20 x 2^20 A (4 TiB; A itself is never read).
TEST(Gemm, FailureNamesShapesDtypeAndIsa) {
  test::ScopedIsa scope(Isa::Avx2);
  const int64_t n = int64_t{1} << 20;
  const bf16_t a = 0, b = 0;
  float c = 0;
  try {
    ops::gemm(Trans::N, Trans::N, n, 1, n, 1.0f, &a, n, &b, 1, 0.0f, &c, 1, DType::BF16);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("[gemm] bf16 (emulated) 1048576x1x1048576 NN on avx2: ", 0), 0u) << what;
    EXPECT_NE(what.find("out of memory allocating"), std::string::npos) << what;
    EXPECT_NE(what.find("bf16 emulation scratch"), std::string::npos) << what;
  }
}

// ---------------------------------------------------------------- conversions

std::vector<float> from_bits(const std::vector<uint32_t>& bits) {
  std::vector<float> f(bits.size());
  std::memcpy(f.data(), bits.data(), bits.size() * 4);
  return f;
}

void expect_same_bits_as_scalar(const std::vector<float>& src) {
  std::vector<bf16_t> dst(src.size() + 8, 0xdead);
  ops::f32_to_bf16(dst.data(), src.data(), static_cast<int64_t>(src.size()));
  for (size_t i = 0; i < src.size(); ++i) {
    uint32_t u;
    std::memcpy(&u, &src[i], 4);
    ASSERT_EQ(dst[i], f32_to_bf16(src[i])) << "input bits 0x" << std::hex << u << " at " << std::dec << i;
  }
  for (size_t i = src.size(); i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xdead) << "wrote past the end";
}

TEST(Convert, KnownRoundings) {
  // ties to even, carry into the exponent, denormals kept, NaN quieted, infinities and overflow.
  const std::vector<uint32_t> in = {0x3f808000, 0x3f818000, 0x3f808001, 0x3f7fffff, 0x00000001, 0x007fffff,
                                    0x80400000, 0x7f800001, 0xffc00000, 0x7f800000, 0x7f7fffff, 0x00008000};
  const std::vector<bf16_t> want = {0x3f80, 0x3f82, 0x3f81, 0x3f80, 0x0000, 0x0080,
                                    0x8040, 0x7fc0, 0xffc0, 0x7f80, 0x7f80, 0x0000};
  std::vector<bf16_t> out(in.size());
  ops::f32_to_bf16(out.data(), from_bits(in).data(), static_cast<int64_t>(in.size()));
  EXPECT_EQ(out, want);
}

TEST(Convert, VectorPathMatchesScalarBitForBit) {
  Rng rng(99);
  std::vector<uint32_t> bits(300007);  // large: parallel path with a ragged last block
  for (auto& u : bits) {
    u = static_cast<uint32_t>(rng.next_u64());
    switch (rng.below(4)) {  // over-sample the special exponents: denormals/zero, inf/NaN, near-ties
      case 0: u &= 0x807fffffu; break;
      case 1: u |= 0x7f800000u; break;
      case 2: u = (u & 0xffff0000u) | 0x8000u | (rng.below(2) ? 1u : 0u); break;
      default: break;
    }
  }
  for (Isa level : test::runnable_isas()) {
    SCOPED_TRACE(isa_name(level));
    test::ScopedIsa scope(level);
    expect_same_bits_as_scalar(from_bits(bits));
    for (int n = 1; n <= 40; ++n)  // every tail length of the 16- and 8-lane loops
      expect_same_bits_as_scalar(from_bits({bits.begin() + n, bits.begin() + 2 * n}));
  }
}

TEST(Convert, Bf16ToF32IsExactAndRoundTrips) {
  for (Isa level : test::runnable_isas()) {
    SCOPED_TRACE(isa_name(level));
    test::ScopedIsa scope(level);
    for (int64_t n : {int64_t{65536}, int64_t{65536 + 16 * 1024 + 5}, int64_t{13}}) {  // parallel, ragged, tail
      std::vector<bf16_t> all(n);
      for (int64_t i = 0; i < n; ++i) all[i] = static_cast<bf16_t>(i * 40503u);  // every bit pattern, shuffled
      std::vector<float> f(all.size() + 8, 42.0f);
      ops::bf16_to_f32(f.data(), all.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        uint32_t u;
        std::memcpy(&u, &f[i], 4);
        ASSERT_EQ(u, uint32_t{all[i]} << 16) << "at " << i;
      }
      for (int64_t i = n; i < n + 8; ++i) ASSERT_EQ(f[i], 42.0f) << "wrote past the end";
    }
  }
  std::vector<bf16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<bf16_t>(i);
  std::vector<float> f(all.size());
  ops::bf16_to_f32(f.data(), all.data(), static_cast<int64_t>(all.size()));
  std::vector<bf16_t> back(all.size());
  ops::f32_to_bf16(back.data(), f.data(), static_cast<int64_t>(f.size()));
  for (uint32_t i = 0; i < 65536; ++i) {
    uint32_t u;
    std::memcpy(&u, &f[i], 4);
    ASSERT_EQ(u, i << 16);
    if (std::isnan(f[i]))
      ASSERT_EQ(back[i], i | 0x40) << "NaN must stay NaN (quieted)";
    else
      ASSERT_EQ(back[i], i);
  }
}

TEST(Convert, RejectsNegativeCount) {
  float f = 0;
  bf16_t h = 0;
  EXPECT_THROW(ops::f32_to_bf16(&h, &f, -1), Error);
  EXPECT_THROW(ops::bf16_to_f32(&f, &h, -1), Error);
}

}  // namespace
}  // namespace grpo
