// Tests of ops::policy_loss: against the naive reference (every KL type, entropy bonus, TIS, zero weights),
// finite differences (reference in double, kernel in float) away from clip boundaries, zero gradient for
// clipped / clamped tokens, statistics, argument errors, and the shared PyTorch GRPO case in all four
// aggregation modes (the weights w encode the mode).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "kernels/ops.h"
#include "kernels/ref/ref_head.h"
#include "kernels_head/head_test_util.h"

namespace grpo {
namespace {

using ops::KlType;
using ops::PolicyLossConfig;
using ops::PolicyLossStats;

struct Tokens {
  int64_t N;
  std::vector<float> logp, old_logp, ref_logp, adv, entropy, w, tis;
};

Tokens random_tokens(int64_t N, uint64_t seed) {
  Tokens k{N,
           test::uniform(N, seed, -3, -0.1),
           {},
           {},
           test::uniform(N, seed + 1, -2, 2),
           test::uniform(N, seed + 2, 0, 3),
           test::uniform(N, seed + 3, 0, 0.1),
           test::uniform(N, seed + 4, 0.5, 2)};
  const auto d_old = test::uniform(N, seed + 5, -0.6, 0.6), d_ref = test::uniform(N, seed + 6, -1, 1);
  for (int64_t t = 0; t < N; ++t) {
    k.old_logp.push_back(k.logp[t] - (t % 5 == 1 ? 3 * d_old[t] : d_old[t]));  // some ratios beyond c = 3
    k.ref_logp.push_back(k.logp[t] - d_ref[t]);
    if (t % 7 == 0) k.w[t] = 0.0f;  // non-response tokens
  }
  return k;
}

struct Result {
  std::vector<float> dlogp, dentropy;
  PolicyLossStats stats;
};

Result run_cpu(const Tokens& k, const PolicyLossConfig& cfg, bool with_ref = true, bool with_tis = true) {
  test::Guarded dlogp(k.N, NAN), dentropy(k.N, NAN);
  PolicyLossStats stats;
  ops::policy_loss(dlogp.data(), dentropy.data(), &stats, k.logp.data(), k.old_logp.data(),
                   with_ref ? k.ref_logp.data() : nullptr, k.adv.data(), k.entropy.data(), k.w.data(),
                   with_tis ? k.tis.data() : nullptr, k.N, cfg);
  EXPECT_TRUE(dlogp.guards_intact() && dentropy.guards_intact());
  return {dlogp.values(), dentropy.values(), stats};
}

struct RefResult {
  std::vector<double> dlogp, dentropy;
  PolicyLossStats stats;
};

RefResult run_ref(const Tokens& k, const PolicyLossConfig& cfg, bool with_ref = true, bool with_tis = true) {
  RefResult r{std::vector<double>(k.N), std::vector<double>(k.N), {}};
  const auto ref = test::to_double(k.ref_logp), tis = test::to_double(k.tis);
  ref::policy_loss<double>(r.dlogp.data(), r.dentropy.data(), &r.stats, test::to_double(k.logp).data(),
                           test::to_double(k.old_logp).data(), with_ref ? ref.data() : nullptr,
                           test::to_double(k.adv).data(), test::to_double(k.entropy).data(),
                           test::to_double(k.w).data(), with_tis ? tis.data() : nullptr, k.N, cfg);
  return r;
}

void expect_stats_near(const PolicyLossStats& a, const PolicyLossStats& b, double tol) {
  EXPECT_NEAR(a.loss, b.loss, tol * (1 + std::abs(b.loss)));
  EXPECT_NEAR(a.pg_loss, b.pg_loss, tol * (1 + std::abs(b.pg_loss)));
  EXPECT_NEAR(a.kl, b.kl, tol * (1 + std::abs(b.kl)));
  EXPECT_NEAR(a.entropy, b.entropy, tol * (1 + std::abs(b.entropy)));
  EXPECT_NEAR(a.ppo_kl, b.ppo_kl, tol * (1 + std::abs(b.ppo_kl)));
  EXPECT_EQ(a.clipped, b.clipped);
  EXPECT_EQ(a.tokens, b.tokens);
}

TEST(PolicyLoss, MatchesReferenceForEveryKlType) {
  const Tokens k = random_tokens(301, 1);
  for (KlType kl : {KlType::K1, KlType::K2, KlType::K3}) {
    PolicyLossConfig cfg;
    cfg.clip_ratio_high = 0.28f;
    cfg.kl_coef = 0.05f;
    cfg.kl_type = kl;
    cfg.entropy_coef = 0.01f;
    const Result c = run_cpu(k, cfg);
    const RefResult r = run_ref(k, cfg);
    EXPECT_LT(test::max_rel_err(c.dlogp, r.dlogp), 1e-6) << "kl type " << int(kl);
    EXPECT_LT(test::max_rel_err(c.dentropy, r.dentropy), 1e-7);
    expect_stats_near(c.stats, r.stats, 1e-6);
    EXPECT_GT(c.stats.clipped, 10);  // the data exercises the clip on both sides
    EXPECT_EQ(c.stats.tokens, 301 - 43);
  }
}

TEST(PolicyLossStats, AccumulateAcrossCalls) {
  const Tokens k = random_tokens(50, 2);
  PolicyLossConfig cfg;
  const Result once = run_cpu(k, cfg, false, false);
  PolicyLossStats twice;
  std::vector<float> dlogp(50), dentropy(50);
  for (int i = 0; i < 2; ++i)
    ops::policy_loss(dlogp.data(), dentropy.data(), &twice, k.logp.data(), k.old_logp.data(), nullptr,
                     k.adv.data(), k.entropy.data(), k.w.data(), nullptr, 50, cfg);
  EXPECT_DOUBLE_EQ(twice.loss, 2 * once.stats.loss);
  EXPECT_EQ(twice.tokens, 2 * once.stats.tokens);
  EXPECT_EQ(once.stats.kl, 0.0);  // no ref: no KL statistic
}

// Tokens whose ratio is at least `margin` (relative) away from every switching point (1 - eps_low,
// 1 + eps_high, c), so that a finite-difference step never crosses one. KL clamps are far away in this data.
Tokens smooth_tokens(const PolicyLossConfig& cfg, double margin) {
  const Tokens k = random_tokens(400, 3);
  Tokens s{0, {}, {}, {}, {}, {}, {}, {}};
  for (int64_t t = 0; t < k.N; ++t) {
    const double r = std::exp(static_cast<double>(k.logp[t]) - k.old_logp[t]);
    bool near = false;
    for (double edge : {1.0 - cfg.clip_ratio_low, 1.0 + cfg.clip_ratio_high, double(cfg.clip_ratio_c)})
      near = near || std::abs(r / edge - 1) < margin;
    if (near || k.w[t] == 0) continue;
    for (auto [dst, src] : {std::pair{&s.logp, &k.logp}, {&s.old_logp, &k.old_logp}, {&s.ref_logp, &k.ref_logp},
                            {&s.adv, &k.adv}, {&s.entropy, &k.entropy}, {&s.w, &k.w}, {&s.tis, &k.tis}})
      dst->push_back((*src)[t]);
    ++s.N;
  }
  return s;
}

PolicyLossConfig fd_config() {
  PolicyLossConfig cfg;
  cfg.kl_coef = 0.1f;
  cfg.entropy_coef = 0.02f;
  return cfg;
}

// The reference's analytic gradient against central differences of its loss, all in double.
TEST(PolicyLoss, ReferenceGradientMatchesFiniteDifferences) {
  const PolicyLossConfig cfg = fd_config();
  const Tokens k = smooth_tokens(cfg, 1e-4);
  ASSERT_GT(k.N, 200);
  auto logp = test::to_double(k.logp), ent = test::to_double(k.entropy);
  const auto old = test::to_double(k.old_logp), ref = test::to_double(k.ref_logp), adv = test::to_double(k.adv),
             w = test::to_double(k.w), tis = test::to_double(k.tis);
  std::vector<double> dlogp(k.N), dent(k.N);
  auto loss = [&]() {
    PolicyLossStats st;
    ref::policy_loss<double>(dlogp.data(), dent.data(), &st, logp.data(), old.data(), ref.data(), adv.data(),
                             ent.data(), w.data(), tis.data(), k.N, cfg);
    return st.loss;
  };
  loss();
  const std::vector<double> g_logp = dlogp, g_ent = dent;
  const double eps = 1e-6;
  for (int64_t t = 0; t < k.N; ++t) {
    for (auto [x, g] : {std::pair{&logp, &g_logp}, {&ent, &g_ent}}) {
      const double x0 = (*x)[t];
      (*x)[t] = x0 + eps;
      const double up = loss();
      (*x)[t] = x0 - eps;
      const double down = loss();
      (*x)[t] = x0;
      const double fd = (up - down) / (2 * eps);
      EXPECT_NEAR((*g)[t], fd, 1e-7 + 1e-6 * std::abs(fd)) << "token " << t;
    }
  }
}

// The kernel's gradient against central differences of its own (float) loss, step h = 1e-2: truncation
// error ~h^2 / 6 relative, plus the float rounding of each token's loss (~1e-8 absolute, / h ~ 1e-6).
TEST(PolicyLoss, KernelGradientMatchesFiniteDifferences) {
  const PolicyLossConfig cfg = fd_config();
  const Tokens k = smooth_tokens(cfg, 0.05);
  ASSERT_GT(k.N, 100);
  const Result c = run_cpu(k, cfg);
  for (int64_t t = 0; t < k.N; ++t) {
    for (bool wrt_logp : {true, false}) {
      Tokens up = k, down = k;
      float& u = wrt_logp ? up.logp[t] : up.entropy[t];
      float& d = wrt_logp ? down.logp[t] : down.entropy[t];
      u += 1e-2f;
      d -= 1e-2f;
      const double h = static_cast<double>(u) - d;
      const double fd = (run_cpu(up, cfg).stats.loss - run_cpu(down, cfg).stats.loss) / h;
      const float g = wrt_logp ? c.dlogp[t] : c.dentropy[t];
      EXPECT_NEAR(g, fd, 5e-6 + 1e-4 * std::abs(fd)) << (wrt_logp ? "logp" : "entropy") << " token " << t;
    }
  }
}

// One token, no KL or entropy: returns dlogp.
float token_grad(float d, float adv, PolicyLossStats* stats = nullptr, KlType kl = KlType::K3, float kl_coef = 0,
                 float ref_minus_logp = 0) {
  PolicyLossConfig cfg;
  cfg.kl_coef = kl_coef;
  cfg.kl_type = kl;
  const float logp = -1.0f, old = logp - d, ref = logp + ref_minus_logp, ent = 1.0f, w = 1.0f;
  float dlogp = NAN, dent = NAN;
  PolicyLossStats local;
  ops::policy_loss(&dlogp, &dent, stats ? stats : &local, &logp, &old, &ref, &adv, &ent, &w, nullptr, 1, cfg);
  return dlogp;
}

TEST(PolicyLoss, ClippedTokensGetZeroGradient) {
  PolicyLossStats s;
  EXPECT_EQ(token_grad(0.5f, 1.0f, &s), 0.0f);  // A > 0, ratio 1.65 > 1.2: clipped surrogate
  EXPECT_EQ(s.clipped, 1);
  s = {};
  EXPECT_EQ(token_grad(-0.5f, -1.0f, &s), 0.0f);  // A < 0, ratio 0.61 < 0.8: clipped surrogate
  EXPECT_EQ(s.clipped, 1);
  s = {};
  EXPECT_EQ(token_grad(2.0f, -1.0f, &s), 0.0f);  // A < 0, ratio 7.4 > c = 3: dual clip, constant -c A
  EXPECT_EQ(s.clipped, 0);                       // L2 < L1 there: not counted as clipped (verl)
  EXPECT_FLOAT_EQ(s.pg_loss, 3.0f);
  EXPECT_EQ(token_grad(-25.0f, 1.0f), 0.0f);     // log-ratio clamped at -20
  EXPECT_EQ(token_grad(0.0f, 0.0f), 0.0f);       // zero advantage
  // KL k3 with ref - logp beyond the clamp (20): kl = 10 (clamped), no gradient from it.
  EXPECT_EQ(token_grad(0.0f, 0.0f, nullptr, KlType::K3, 1.0f, 25.0f), 0.0f);
}

TEST(PolicyLoss, UnclippedSidesKeepTheirGradient) {
  // PPO clips one side only: A > 0 with a small ratio and A < 0 with ratio in (1 + eps, c) keep -A ratio.
  EXPECT_FLOAT_EQ(token_grad(-0.5f, 1.0f), -std::exp(-0.5f));
  EXPECT_FLOAT_EQ(token_grad(0.5f, -1.0f), std::exp(0.5f));
  EXPECT_FLOAT_EQ(token_grad(0.1f, 2.0f), -2.0f * std::exp(0.1f));
  // KL gradients at d = 0: k1 -> 1, k2 -> logp - ref, k3 -> 1 - exp(ref - logp).
  EXPECT_FLOAT_EQ(token_grad(0, 0, nullptr, KlType::K1, 1.0f, 0.3f), 1.0f);
  EXPECT_FLOAT_EQ(token_grad(0, 0, nullptr, KlType::K2, 1.0f, 0.3f), -0.3f);
  EXPECT_FLOAT_EQ(token_grad(0, 0, nullptr, KlType::K3, 1.0f, 0.3f), 1.0f - std::exp(0.3f));
}

TEST(PolicyLoss, ZeroWeightTokensAreSkippedEvenWithGarbage) {
  Tokens k = random_tokens(10, 4);
  k.w[3] = 0.0f;
  k.logp[3] = NAN;
  k.old_logp[3] = INFINITY;
  PolicyLossConfig cfg;
  cfg.kl_coef = 0.1f;
  cfg.entropy_coef = 0.1f;
  const Result c = run_cpu(k, cfg);
  EXPECT_EQ(c.dlogp[3], 0.0f);
  EXPECT_EQ(c.dentropy[3], 0.0f);
  EXPECT_TRUE(std::isfinite(c.stats.loss) && std::isfinite(c.stats.ppo_kl));
  EXPECT_EQ(c.stats.tokens, 10 - 3);  // tokens 0, 3 and 7
}

TEST(PolicyLoss, RejectsBadArguments) {
  const Tokens k = random_tokens(4, 5);
  std::vector<float> d(4), de(4);
  PolicyLossStats s;
  auto call = [&](const PolicyLossConfig& cfg, const float* ref, const float* ent, float* dent) {
    ops::policy_loss(d.data(), dent, &s, k.logp.data(), k.old_logp.data(), ref, k.adv.data(), ent, k.w.data(),
                     nullptr, 4, cfg);
  };
  PolicyLossConfig ok;
  EXPECT_NO_THROW(call(ok, nullptr, nullptr, nullptr));
  PolicyLossConfig c1 = ok;
  c1.clip_ratio_c = 1.0f;
  EXPECT_THROW(call(c1, nullptr, nullptr, nullptr), Error);
  PolicyLossConfig kl = ok;
  kl.kl_coef = 0.1f;
  EXPECT_THROW(call(kl, nullptr, nullptr, nullptr), Error);
  PolicyLossConfig ent = ok;
  ent.entropy_coef = 0.1f;
  EXPECT_THROW(call(ent, nullptr, k.entropy.data(), nullptr), Error);
  EXPECT_THROW(call(ent, nullptr, nullptr, de.data()), Error);
  PolicyLossConfig neg = ok;
  neg.clip_ratio_low = -0.1f;
  EXPECT_THROW(call(neg, nullptr, nullptr, nullptr), Error);
}

// The shared PyTorch GRPO case (2 prompts x 4 responses): loss in each aggregation mode and pg_clipfrac.
TEST(PolicyLoss, MatchesSharedGrpoCase) {
  for (const std::string variant : {"qwen3", "qwen3-tied", "qwen2"}) {
    SCOPED_TRACE(variant);
    const std::string dir = std::string(GRPO_SHARED_DIR) + "/reference/models/" + variant;
    auto x = test::read_safetensors(dir + "/grpo_case.safetensors");
    const auto meta = nlohmann::json::parse(std::ifstream(dir + "/grpo_case.json"));
    PolicyLossConfig cfg;
    cfg.clip_ratio_low = meta.at("clip_ratio_low");
    cfg.clip_ratio_high = meta.at("clip_ratio_high");
    cfg.clip_ratio_c = meta.at("clip_ratio_c");
    cfg.kl_coef = meta.at("kl_loss_coef");
    ASSERT_EQ(meta.at("kl_loss_type"), "low_var_kl");
    cfg.kl_type = KlType::K3;
    cfg.entropy_coef = meta.at("entropy_coeff");
    const double norm = meta.at("loss_scale_factor");

    const auto& seq_lens = x.at("seq_lens");
    const auto& mask = x.at("response_mask");
    const int64_t S = static_cast<int64_t>(seq_lens.size()), N = static_cast<int64_t>(mask.size());
    std::vector<float> adv, seq_resp(S, 0.0f);
    std::vector<int64_t> seq_of;
    for (int64_t s = 0; s < S; ++s)
      for (int64_t i = 0; i + 1 < static_cast<int64_t>(seq_lens[s]); ++i) {
        adv.push_back(static_cast<float>(x.at("advantages")[s]));
        seq_of.push_back(s);
        seq_resp[s] += static_cast<float>(mask[seq_of.size() - 1]);
      }
    ASSERT_EQ(static_cast<int64_t>(adv.size()), N);
    double total = 0;
    for (double m : mask) total += m;
    auto f32 = [&](const char* name) { return std::vector<float>(x.at(name).begin(), x.at(name).end()); };
    const auto logp = f32("token_logprobs"), old = f32("old_logprobs"), ref = f32("ref_logprobs"),
               ent = f32("entropy");
    for (const std::string mode : {"token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"}) {
      std::vector<float> w(N);
      for (int64_t t = 0; t < N; ++t) {
        const double m = mask[t];
        if (mode == "token-mean") w[t] = static_cast<float>(m / total);
        else if (mode == "seq-mean-token-sum") w[t] = static_cast<float>(m / S);
        else if (mode == "seq-mean-token-mean") w[t] = static_cast<float>(m / (S * seq_resp[seq_of[t]]));
        else w[t] = static_cast<float>(m / norm);
      }
      std::vector<float> dlogp(N), dent(N);
      PolicyLossStats stats;
      ops::policy_loss(dlogp.data(), dent.data(), &stats, logp.data(), old.data(), ref.data(), adv.data(),
                       ent.data(), w.data(), nullptr, N, cfg);
      const double want = x.at("loss." + mode)[0];
      EXPECT_NEAR(stats.loss, want, 1e-4 * std::abs(want)) << mode;  // README: relative error below 1e-4
      EXPECT_NEAR(stats.clipped / stats.tokens, x.at("pg_clipfrac")[0], 1e-6) << mode;
      EXPECT_EQ(stats.tokens, total);
    }
  }
}

}  // namespace
}  // namespace grpo
