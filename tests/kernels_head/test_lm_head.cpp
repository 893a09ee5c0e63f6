// Tests of the fused output layer (ops::lm_head_forward / lm_head_backward): against the naive reference
// (f32 and bf16, odd sizes, chunks that do not divide T, targets < 0), finite differences of the reference
// in double, chunk-size invariance, workspace bounds independent of T (guard values), NaN propagation,
// argument errors, and the log-softmax / entropy of the shared PyTorch reference logits. The reference
// comparisons run at every ISA level this process allows (row passes, bf16 conversion and GEMM paths).
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "core/dtype.h"
#include "core/error.h"
#include "isa_util.h"
#include "kernels/backend.h"
#include "kernels/cpu/head_rows.h"
#include "kernels/ops.h"
#include "kernels/ref/ref_head.h"
#include "kernels_head/head_test_util.h"

namespace grpo {
namespace {

struct LmProblem {
  int64_t T, C, V;
  float scale;
  std::vector<float> h, W, dlogprob, dentropy;  // h [T,C], W [V,C], dlogprob/dentropy [T]
  std::vector<int32_t> target;                  // [T], some < 0
};

LmProblem make_problem(int64_t T, int64_t C, int64_t V, uint64_t seed, float scale = 0.7f) {
  LmProblem p{T, C, V, scale, test::uniform(T * C, seed, -2, 2), test::uniform(V * C, seed + 1, -1, 1),
              test::uniform(T, seed + 2, -1, 1), test::uniform(T, seed + 3, -1, 1), {}};
  Rng rng(seed + 4);
  for (int64_t t = 0; t < T; ++t) p.target.push_back(t % 4 == 3 ? -1 : static_cast<int32_t>(rng.below(V)));
  return p;
}

void round_to_bf16(std::vector<float>& v, std::vector<bf16_t>& out) {
  out.resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = bf16_to_f32(out[i] = f32_to_bf16(v[i]));
}

struct LmResult {
  std::vector<float> logprob, entropy, lse, dh, dW;
};

// Runs forward + backward with guarded outputs and workspace; dW starts from dW0 (accumulation).
LmResult run_cpu(const LmProblem& p, DType dt, int64_t chunk, const std::vector<float>& dW0,
                 bool with_dlogprob = true, bool with_dentropy = true) {
  std::vector<float> h = p.h, W = p.W;
  std::vector<bf16_t> h16, W16;
  const void *hp = h.data(), *Wp = W.data();
  if (dt == DType::BF16) {
    round_to_bf16(h, h16);
    round_to_bf16(W, W16);
    hp = h16.data();
    Wp = W16.data();
  }
  test::Guarded logprob(p.T), entropy(p.T), lse(p.T), dh(p.T * p.C, NAN), dW(dW0);
  test::Guarded ws(ops::lm_head_ws_floats(chunk, p.V, p.C), NAN);
  ops::lm_head_forward(logprob.data(), entropy.data(), lse.data(), hp, Wp, dt, p.target.data(), p.T, p.C, p.V,
                       p.scale, chunk, ws.data());
  ops::lm_head_backward(dh.data(), dW.data(), with_dlogprob ? p.dlogprob.data() : nullptr,
                        with_dentropy ? p.dentropy.data() : nullptr, hp, Wp, dt, p.target.data(), lse.data(),
                        entropy.data(), p.T, p.C, p.V, p.scale, chunk, ws.data());
  for (const test::Guarded* g : {&logprob, &entropy, &lse, &dh, &dW, &ws}) EXPECT_TRUE(g->guards_intact());
  return {logprob.values(), entropy.values(), lse.values(), dh.values(), dW.values()};
}

struct LmRef {
  std::vector<double> logprob, entropy, lse, dh, dW;
};

// The reference in double on the values the kernel sees (bf16-rounded in bf16 mode).
LmRef run_ref(const LmProblem& p, DType dt, const std::vector<float>& dW0) {
  std::vector<float> h = p.h, W = p.W;
  std::vector<bf16_t> unused;
  if (dt == DType::BF16) {
    round_to_bf16(h, unused);
    round_to_bf16(W, unused);
  }
  LmRef r{std::vector<double>(p.T), std::vector<double>(p.T), std::vector<double>(p.T),
          std::vector<double>(p.T * p.C), test::to_double(dW0)};
  const auto hd = test::to_double(h), Wd = test::to_double(W);
  ref::lm_head_forward<double>(r.logprob.data(), r.entropy.data(), r.lse.data(), hd.data(), Wd.data(),
                               p.target.data(), p.T, p.C, p.V, p.scale);
  ref::lm_head_backward<double>(r.dh.data(), r.dW.data(), test::to_double(p.dlogprob).data(),
                                test::to_double(p.dentropy).data(), hd.data(), Wd.data(), p.target.data(), p.T,
                                p.C, p.V, p.scale);
  return r;
}

class LmHeadVsRef : public ::testing::TestWithParam<std::tuple<int64_t, int64_t, int64_t, int64_t>> {};

TEST_P(LmHeadVsRef, F32) {
  const auto [T, C, V, chunk] = GetParam();
  const LmProblem p = make_problem(T, C, V, 7 * V + T);
  const auto dW0 = test::uniform(V * C, 5);
  const LmRef r = run_ref(p, DType::F32, dW0);
  for (Isa level : test::runnable_isas()) {
    SCOPED_TRACE(isa_name(level));
    test::ScopedIsa scope(level);
    const LmResult c = run_cpu(p, DType::F32, chunk, dW0);
    // fp32 GEMM and fp32 row sums against a double reference.
    EXPECT_LT(test::max_rel_err(c.logprob, r.logprob), 2e-6);
    EXPECT_LT(test::max_rel_err(c.entropy, r.entropy), 2e-6);
    EXPECT_LT(test::max_rel_err(c.lse, r.lse), 2e-6);
    EXPECT_LT(test::max_rel_err(c.dh, r.dh), 2e-6);
    EXPECT_LT(test::max_rel_err(c.dW, r.dW), 2e-6);
    for (int64_t t = 0; t < T; ++t) {
      if (p.target[t] < 0) {
        EXPECT_EQ(c.logprob[t], 0.0f);
      }
    }
  }
}

TEST_P(LmHeadVsRef, Bf16) {
  const auto [T, C, V, chunk] = GetParam();
  const LmProblem p = make_problem(T, C, V, 11 * V + T);
  const auto dW0 = test::uniform(V * C, 6);
  const LmRef r = run_ref(p, DType::BF16, dW0);
  for (Isa level : test::runnable_isas()) {
    SCOPED_TRACE(isa_name(level));
    test::ScopedIsa scope(level);
    const LmResult c = run_cpu(p, DType::BF16, chunk, dW0);
    // Forward: bf16 inputs are exact in the reference and products accumulate in fp32: as tight as f32.
    EXPECT_LT(test::max_rel_err(c.logprob, r.logprob), 2e-6);
    EXPECT_LT(test::max_rel_err(c.entropy, r.entropy), 2e-6);
    EXPECT_LT(test::max_rel_err(c.lse, r.lse), 2e-6);
    // Backward: dz is rounded to bf16 (relative error <= 2^-9 per element) before the two GEMMs.
    EXPECT_LT(test::max_rel_err(c.dh, r.dh), 5e-3);
    EXPECT_LT(test::max_rel_err(c.dW, r.dW), 5e-3);
  }
}

INSTANTIATE_TEST_SUITE_P(Head, LmHeadVsRef,
                         ::testing::Values(std::tuple<int64_t, int64_t, int64_t, int64_t>{5, 19, 37, 2},
                                           std::tuple<int64_t, int64_t, int64_t, int64_t>{7, 3, 8, 3},
                                           std::tuple<int64_t, int64_t, int64_t, int64_t>{13, 40, 1001, 4},
                                           std::tuple<int64_t, int64_t, int64_t, int64_t>{4, 16, 64, 100},
                                           // backward in passes of 46 rows x 6 vocabulary blocks (5 x 512 + 440)
                                           std::tuple<int64_t, int64_t, int64_t, int64_t>{50, 24, 3000, 8},
                                           std::tuple<int64_t, int64_t, int64_t, int64_t>{1, 5, 1, 1}));

// The reference's analytic gradient against central differences of its own forward, in double.
TEST(LmHead, ReferenceGradientMatchesFiniteDifferences) {
  const int64_t T = 4, C = 6, V = 9;
  const LmProblem p = make_problem(T, C, V, 3, 1.3f);
  auto h = test::to_double(p.h), W = test::to_double(p.W);
  const auto a = test::to_double(p.dlogprob), b = test::to_double(p.dentropy);
  auto objective = [&]() {  // sum_t a_t logprob_t + b_t entropy_t
    std::vector<double> lp(T), ent(T), lse(T);
    ref::lm_head_forward<double>(lp.data(), ent.data(), lse.data(), h.data(), W.data(), p.target.data(), T, C, V,
                                 p.scale);
    double s = 0;
    for (int64_t t = 0; t < T; ++t) s += a[t] * lp[t] + b[t] * ent[t];
    return s;
  };
  std::vector<double> dh(T * C), dW(V * C, 0.0);
  ref::lm_head_backward<double>(dh.data(), dW.data(), a.data(), b.data(), h.data(), W.data(), p.target.data(), T,
                                C, V, p.scale);
  const double eps = 1e-6;
  auto fd = [&](std::vector<double>& x, size_t i) {
    const double x0 = x[i];
    x[i] = x0 + eps;
    const double up = objective();
    x[i] = x0 - eps;
    const double down = objective();
    x[i] = x0;
    return (up - down) / (2 * eps);
  };
  std::vector<double> fd_h(h.size()), fd_W(W.size());
  for (size_t i = 0; i < h.size(); ++i) fd_h[i] = fd(h, i);
  for (size_t i = 0; i < W.size(); ++i) fd_W[i] = fd(W, i);
  EXPECT_LT(test::max_rel_err(dh, fd_h), 1e-7);
  EXPECT_LT(test::max_rel_err(dW, fd_W), 1e-7);
}

TEST(LmHead, ChunkSizeDoesNotChangeResults) {
  const LmProblem p = make_problem(23, 24, 301, 21);
  const auto dW0 = test::uniform(301 * 24, 8);
  const LmResult base = run_cpu(p, DType::F32, 23, dW0);
  // The row passes are the same per row; only the GEMMs see other row counts, and oneDNN's f32 kernels
  // block (and so sum) differently by row count: dh = dz W sums 301 products, a few ulps of drift.
  for (int64_t chunk : {1, 4, 7, 64}) {
    const LmResult c = run_cpu(p, DType::F32, chunk, dW0);
    EXPECT_LT(test::max_rel_err(c.logprob, base.logprob), 1e-6) << "chunk " << chunk;
    EXPECT_LT(test::max_rel_err(c.entropy, base.entropy), 1e-6) << "chunk " << chunk;
    EXPECT_LT(test::max_rel_err(c.dh, base.dh), 2e-6) << "chunk " << chunk;
    EXPECT_LT(test::max_rel_err(c.dW, base.dW), 2e-6) << "chunk " << chunk;
  }
}

TEST(LmHead, WorkspaceDependsOnChunkOnlyAndIsNeverOverrun) {
  const int64_t chunk = 4, C = 8, V = 37;
  const int64_t ws = ops::lm_head_ws_floats(chunk, V, C);
  // A vocabulary this small is one block: f32 logits + bf16 dz + gathered h rows and their dh + row indices,
  // each padded to 16 floats
  EXPECT_GE(ws, chunk * V + (chunk * V + 1) / 2 + 2 * chunk * C + chunk);
  EXPECT_LE(ws, chunk * V + (chunk * V + 1) / 2 + 2 * chunk * C + chunk + 5 * 16);
  // With a larger vocabulary the backward takes more rows per pass (23 here) in blocks of the vocabulary: the
  // logits still take chunk x V floats, the row buffers grow with the pass.
  const int64_t big_V = 3000, big_ws = ops::lm_head_ws_floats(chunk, big_V, C);
  EXPECT_GE(big_ws, chunk * big_V + 2 * 23 * C);
  EXPECT_LE(big_ws, chunk * big_V + (chunk * big_V + 1) / 2 + 2 * 23 * C + 23 + 5 * 16);
  // run_cpu gives the kernels exactly ws floats followed by guards, for T from below chunk to 25 x chunk.
  for (int64_t T : {3, 9, 100}) {
    for (int64_t vocab : {V, big_V}) {
      const LmProblem p = make_problem(T, C, vocab, T);
      for (DType dt : {DType::F32, DType::BF16}) run_cpu(p, dt, chunk, std::vector<float>(vocab * C, 0.0f));
    }
  }
}

TEST(LmHead, NullUpstreamGradientsAndIgnoredRows) {
  const LmProblem p = make_problem(6, 5, 11, 2);
  const auto dW0 = test::uniform(11 * 5, 9);
  const LmResult none = run_cpu(p, DType::F32, 4, dW0, false, false);
  for (float x : none.dh) EXPECT_EQ(x, 0.0f);
  EXPECT_EQ(none.dW, dW0);
  // Only dlogprob: rows with target < 0 get no gradient at all.
  const LmResult lp_only = run_cpu(p, DType::F32, 4, dW0, true, false);
  for (int64_t t = 0; t < p.T; ++t) {
    for (int64_t c = 0; c < p.C; ++c) {
      if (p.target[t] < 0) {
        EXPECT_EQ(lp_only.dh[t * p.C + c], 0.0f);
      } else {
        EXPECT_NE(lp_only.dh[t * p.C + c], 0.0f);
      }
    }
  }
}

// Rows without upstream gradient (prompt tokens) are left out of the backward chunks: dh = 0 there, and the
// active rows, gathered from non-contiguous positions, still match the reference.
TEST(LmHead, BackwardSkipsRowsWithoutGradient) {
  for (int64_t V : {45, 1100}) {  // 1100 with chunk 3: passes of 6 rows, vocabulary blocks of 512, 512, 76
    SCOPED_TRACE("V " + std::to_string(V));
    LmProblem p = make_problem(14, 9, V, 31);
    for (int64_t t : {0, 1, 2, 5, 8, 9, 13}) p.dlogprob[t] = p.dentropy[t] = 0.0f;
    const auto dW0 = test::uniform(V * 9, 10);
    for (DType dt : {DType::F32, DType::BF16}) {
      for (int64_t chunk : {1, 3, 14}) {
        const LmResult c = run_cpu(p, dt, chunk, dW0);
        const LmRef r = run_ref(p, dt, dW0);
        const double tol = dt == DType::F32 ? 2e-6 : 5e-3;  // bf16: dz rounded to bf16, see LmHeadVsRef.Bf16
        EXPECT_LT(test::max_rel_err(c.dh, r.dh), tol) << "chunk " << chunk;
        EXPECT_LT(test::max_rel_err(c.dW, r.dW), tol) << "chunk " << chunk;
        for (int64_t t : {0, 1, 2, 5, 8, 9, 13})
          for (int64_t i = 0; i < p.C; ++i) EXPECT_EQ(c.dh[t * p.C + i], 0.0f) << "row " << t;
      }
    }
  }
}

TEST(LmHead, LargeLogitsStayFinite) {
  LmProblem p = make_problem(3, 8, 50, 4, 40.0f);  // logits up to ~ +-300: exp would overflow without the max
  const LmResult c = run_cpu(p, DType::F32, 2, std::vector<float>(50 * 8, 0.0f));
  const LmRef r = run_ref(p, DType::F32, std::vector<float>(50 * 8, 0.0f));
  EXPECT_LT(test::max_rel_err(c.logprob, r.logprob), 2e-6);
  EXPECT_LT(test::max_rel_err(c.entropy, r.entropy, 1e-3), 1e-4);
  EXPECT_LT(test::max_rel_err(c.dh, r.dh), 1e-5);
}

TEST(LmHead, NaNInputPropagatesToItsRowOnly) {
  LmProblem p = make_problem(4, 6, 20, 5);
  p.h[1 * 6 + 2] = NAN;
  const LmResult c = run_cpu(p, DType::F32, 3, std::vector<float>(20 * 6, 0.0f));
  EXPECT_TRUE(std::isnan(c.lse[1]));
  EXPECT_TRUE(std::isnan(c.entropy[1]));
  for (int64_t t : {0, 2, 3}) EXPECT_TRUE(std::isfinite(c.lse[t]) && std::isfinite(c.entropy[t]));
}

TEST(LmHead, RejectsBadArguments) {
  const LmProblem p = make_problem(3, 4, 5, 6);
  std::vector<float> out(3 * 4), ws(ops::lm_head_ws_floats(2, 5, 4));
  std::vector<int32_t> bad = p.target;
  bad[1] = 5;
  auto fwd = [&](const std::vector<int32_t>& target, int64_t chunk, DType dt) {
    ops::lm_head_forward(out.data(), out.data() + 3, out.data() + 6, p.h.data(), p.W.data(), dt, target.data(),
                         3, 4, 5, 1.0f, chunk, ws.data());
  };
  EXPECT_NO_THROW(fwd(p.target, 2, DType::F32));
  try {
    fwd(bad, 2, DType::F32);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("target[1] = 5 >= V = 5"), std::string::npos) << e.what();
  }
  EXPECT_THROW(fwd(p.target, 0, DType::F32), Error);
  EXPECT_THROW(fwd(p.target, 2, DType::I64), Error);
  EXPECT_THROW(ops::lm_head_ws_floats(0, 5, 4), Error);
}

// The vector bodies of the row passes this process can run (AVX-512 and AVX2), each against the scalar one.
struct RowImpl {
  const char* name;
  float (*row_max)(const float*, int64_t);
  ops::detail::ExpSums (*sums)(const float*, int64_t, float);
  void (*grad)(float*, int64_t, float, float, float);
};

std::vector<RowImpl> vector_row_impls() {
  std::vector<RowImpl> impls;
  if (isa_available(Isa::Avx512))
    impls.push_back({"avx512", ops::detail::row_max_avx512, ops::detail::shifted_exp_sums_avx512,
                     ops::detail::write_softmax_grad_avx512});
  impls.push_back({"avx2", ops::detail::row_max_avx2, ops::detail::shifted_exp_sums_avx2,
                   ops::detail::write_softmax_grad_avx2});
  return impls;
}

// Every tail length of the 16- and 8-lane loops; the masked tail must not write past V.
TEST(LmHead, VectorRowPassesMatchScalar) {
  for (const RowImpl& impl : vector_row_impls()) {
    SCOPED_TRACE(impl.name);
    for (int64_t V = 1; V <= 70; V += 3) {
      const auto z = test::uniform(V, V, -30, 5);
      const float m = ops::detail::row_max_scalar(z.data(), V);
      EXPECT_EQ(impl.row_max(z.data(), V), m);
      const auto s = ops::detail::shifted_exp_sums_scalar(z.data(), V, m);
      const auto v = impl.sums(z.data(), V, m);
      EXPECT_NEAR(v.sum, s.sum, 1e-6 * s.sum) << "V=" << V;
      EXPECT_NEAR(v.dot, s.dot, 1e-6 * std::abs(s.dot) + 1e-30) << "V=" << V;
      std::vector<float> gs = z, gv = z;
      gv.resize(V + 16, 123.0f);
      ops::detail::write_softmax_grad_scalar(gs.data(), V, m + std::log(s.sum), 0.3f, -0.7f);
      impl.grad(gv.data(), V, m + std::log(s.sum), 0.3f, -0.7f);
      for (int64_t i = 0; i < V; ++i) EXPECT_NEAR(gv[i], gs[i], 1e-6 * std::abs(gs[i]) + 1e-30) << i;
      for (int64_t i = V; i < V + 16; ++i) EXPECT_EQ(gv[i], 123.0f);
    }
    std::vector<float> with_nan = test::uniform(37, 5, -3, 3);
    with_nan[33] = NAN;
    EXPECT_TRUE(std::isnan(impl.row_max(with_nan.data(), 37)));
  }
}

// exp over its whole range, including the denormal results below exp(-87.3) and the flush to 0 at -104.
TEST(LmHead, VectorExpIsAccurateAndSaturates) {
  for (const RowImpl& impl : vector_row_impls()) {
    SCOPED_TRACE(impl.name);
    double worst = 0;
    for (float x = -103.0f; x <= 88.0f; x += 0.0173f) {  // exp(x) = the sum of a one-element row shifted by 0
      const double want = std::exp(static_cast<double>(x));
      const float got = impl.sums(&x, 1, 0.0f).sum;
      if (want > 1.2e-38)
        worst = std::max(worst, std::abs(got - want) / want);
      else  // denormal: the result is the nearest denormal, up to one ulp of the polynomial
        EXPECT_NEAR(got, want, 1e-6 * want + 1.5e-45) << "x=" << x;
    }
    EXPECT_LT(worst, 5e-7);
    const float nan_in = NAN, far = -200.0f;
    EXPECT_TRUE(std::isnan(impl.sums(&nan_in, 1, 0.0f).sum));
    EXPECT_EQ(impl.sums(&far, 1, 0.0f).sum, 0.0f);
  }
}

// A logit of -inf (a masked token) has probability 0 and must not turn the row's sums or gradient into NaN.
TEST(LmHead, MinusInfinityLogitsContributeZero) {
  const float z[5] = {1.0f, -INFINITY, 0.5f, -200.0f, 2.0f};
  std::vector<RowImpl> impls = vector_row_impls();
  impls.push_back({"scalar", ops::detail::row_max_scalar, ops::detail::shifted_exp_sums_scalar,
                   ops::detail::write_softmax_grad_scalar});
  for (const RowImpl& impl : impls) {
    SCOPED_TRACE(impl.name);
    const ops::detail::ExpSums s = impl.sums(z, 5, 2.0f);
    EXPECT_NEAR(s.sum, std::exp(-1.0) + std::exp(-1.5) + 1.0, 1e-6);
    EXPECT_NEAR(s.dot, -std::exp(-1.0) - 1.5 * std::exp(-1.5), 1e-6);
    float g[5];
    std::copy(z, z + 5, g);
    impl.grad(g, 5, 2.0f + std::log(s.sum), 0.5f, -1.0f);
    EXPECT_EQ(g[1], 0.0f);
    EXPECT_EQ(g[3], 0.0f);
    for (float x : g) EXPECT_TRUE(std::isfinite(x));
  }
}

// The shared PyTorch logits through the kernel's softmax part: h = logits [T, V], W = identity [V, V].
TEST(LmHead, MatchesSharedReferenceLogSoftmaxAndEntropy) {
  for (const std::string variant : {"qwen3", "qwen3-tied", "qwen2"}) {
    SCOPED_TRACE(variant);
    auto tensors = test::read_safetensors(std::string(GRPO_SHARED_DIR) + "/reference/models/" + variant +
                                          "/lm_case.safetensors");
    const auto& logits = tensors.at("logits");
    const auto& ids = tensors.at("input_ids");
    const auto& seq_lens = tensors.at("seq_lens");
    const int64_t T = static_cast<int64_t>(ids.size()), V = static_cast<int64_t>(logits.size()) / T;
    ASSERT_EQ(T * V, static_cast<int64_t>(logits.size()));
    std::vector<float> h(logits.begin(), logits.end()), W(V * V, 0.0f);
    for (int64_t v = 0; v < V; ++v) W[v * V + v] = 1.0f;
    std::vector<int32_t> target(T, -1);  // next token inside the same sequence
    int64_t start = 0;
    for (double len : seq_lens) {
      for (int64_t t = start; t + 1 < start + static_cast<int64_t>(len); ++t)
        target[t] = static_cast<int32_t>(ids[t + 1]);
      start += static_cast<int64_t>(len);
    }
    ASSERT_EQ(start, T);
    std::vector<float> logprob(T), entropy(T), lse(T), ws(ops::lm_head_ws_floats(5, V, V));
    ops::lm_head_forward(logprob.data(), entropy.data(), lse.data(), h.data(), W.data(), DType::F32,
                         target.data(), T, V, V, 1.0f, 5, ws.data());
    std::vector<float> next_logprobs;
    for (int64_t t = 0; t < T; ++t)
      if (target[t] >= 0) next_logprobs.push_back(logprob[t]);
    // README tolerance for a correct float32 implementation: relative error below 1e-4.
    EXPECT_LT(test::max_rel_err(next_logprobs, tensors.at("token_logprobs")), 1e-4);
    EXPECT_LT(test::max_rel_err(entropy, tensors.at("entropy")), 1e-4);
  }
}

}  // namespace
}  // namespace grpo
