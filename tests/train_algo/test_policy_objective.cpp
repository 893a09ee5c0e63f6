// Tests of the policy objective (train/policy_objective.h): finite-difference gradient checks for every loss
// mode (with the KL loss and rollout importance weights on), the aggregation each mode uses, masked tokens
// that are never read, and the selection of clip_cov / kl_cov.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "core/rng.h"
#include "train/policy_objective.h"

using namespace grpo;
using namespace grpo::train;

namespace {

// Random sequences of response tokens with a few masked positions, mixed-sign advantages per sequence and
// log-ratios wide enough to reach every clip.
struct Tokens {
  std::vector<int64_t> begin{0};
  std::vector<float> logp, old_logp, adv, mask, ref, is, entropy;
  std::vector<float> pg_w, w;
};

Tokens make_tokens(uint64_t seed, int sequences, LossAggMode agg, PgLossMode mode) {
  Rng rng(seed);
  Tokens k;
  std::vector<int64_t> counts;
  for (int s = 0; s < sequences; ++s) {
    const int64_t n = 3 + static_cast<int64_t>(rng.below(12));
    const float A = static_cast<float>(rng.normal());
    int64_t in_loss = 0;
    for (int64_t t = 0; t < n; ++t) {
      const float lp = -0.05f - 2.5f * static_cast<float>(rng.uniform());
      k.logp.push_back(lp);
      k.old_logp.push_back(lp + 0.4f * static_cast<float>(rng.normal()));
      k.ref.push_back(lp + 0.3f * static_cast<float>(rng.normal()));
      k.adv.push_back(s % 5 == 4 ? A * static_cast<float>(rng.uniform()) : A);  // some token-level advantages
      const bool masked = rng.below(6) == 0;
      k.mask.push_back(masked ? 0.0f : 1.0f);
      in_loss += !masked;
      k.is.push_back(0.5f + static_cast<float>(rng.uniform()));
      k.entropy.push_back(static_cast<float>(rng.uniform()));
    }
    k.begin.push_back(k.begin.back() + n);
    counts.push_back(in_loss);
  }
  k.pg_w = sequence_loss_weights(counts, effective_loss_agg_mode(mode, agg), 16.0f);
  k.w = sequence_loss_weights(counts, agg, 16.0f);
  return k;
}

PolicyBatch batch_of(const Tokens& k, bool with_is) {
  PolicyBatch b;
  b.begin = k.begin;
  b.logp = k.logp.data();
  b.old_logp = k.old_logp.data();
  b.adv = k.adv.data();
  b.mask = k.mask.data();
  b.pg_seq_weight = k.pg_w.data();
  b.seq_weight = k.w.data();
  b.is_weight = with_is ? k.is.data() : nullptr;
  b.ref_logp = k.ref.data();
  b.entropy = k.entropy.data();
  return b;
}

double loss_of(const PolicyObjectiveConfig& c, const Tokens& k, bool with_is) {
  std::vector<float> d(k.logp.size()), de(k.logp.size());
  PolicyStats st;
  policy_objective(c, batch_of(k, with_is), d.data(), de.data(), &st);
  return st.loss;
}

PolicyObjectiveConfig config_for(PgLossMode mode) {
  PolicyObjectiveConfig c;
  c.mode = mode;
  c.clip_ratio_low = 0.2, c.clip_ratio_high = 0.28, c.clip_ratio_c = 3.0;
  c.kl_cov_ratio = 0.1, c.ppo_kl_coef = 0.1, c.clip_cov_ratio = 0.1, c.clip_cov_lb = -10, c.clip_cov_ub = 10;
  c.dro_beta = 0.5;
  c.kl_coef = 0.04;
  c.entropy_coef = 0.01;
  return c;
}

// Modes whose ratio factor is detached (verl's .detach()): their gradient is d/dh of the loss with logp and
// old_logp moved together, which keeps the ratio's value.
bool detached_ratio(PgLossMode m) { return m == PgLossMode::Cispo || m == PgLossMode::DppoTv || m == PgLossMode::DppoKl; }

const PgLossMode kAllModes[] = {PgLossMode::Vanilla, PgLossMode::Gspo,  PgLossMode::Cispo,  PgLossMode::Sapo,
                                PgLossMode::ClipCov, PgLossMode::KlCov, PgLossMode::GeoMean, PgLossMode::Gpg,
                                PgLossMode::DppoTv,  PgLossMode::DppoKl, PgLossMode::Dro};

}  // namespace

// Central differences where the loss is smooth (forward and backward differences agree; kinks of clips,
// masks and selections are skipped), against the analytic gradient. GSPO's token gradient is, by design, not
// the gradient of its value (the sequence ratio is detached): moving a whole sequence's log-probs together
// changes its value by the sum of the tokens' gradients, which is what is checked for it.
TEST(PolicyObjective, GradientsMatchFiniteDifferencesForEveryMode) {
  const double h = 1.0 / 1024;
  for (PgLossMode mode : kAllModes)
    for (LossAggMode agg : {LossAggMode::TokenMean, LossAggMode::SeqMeanTokenSum, LossAggMode::TokenSum})
      for (bool with_is : {false, true}) {
        SCOPED_TRACE(std::string(pg_loss_mode_name(mode)) + " " + std::string(loss_agg_mode_name(agg)) +
                     (with_is ? " with IS weights" : ""));
        const PolicyObjectiveConfig c = config_for(mode);
        Tokens k = make_tokens(7 + static_cast<uint64_t>(mode), 12, agg, mode);
        std::vector<float> grad(k.logp.size()), dent(k.logp.size());
        PolicyStats st;
        policy_objective(c, batch_of(k, with_is), grad.data(), dent.data(), &st);
        const double L0 = st.loss;
        const bool whole_sequences = mode == PgLossMode::Gspo;
        const size_t units = whole_sequences ? k.begin.size() - 1 : k.logp.size();
        size_t checked = 0, in_loss = 0;
        for (size_t u = 0; u < units; ++u) {
          const int64_t t0 = whole_sequences ? k.begin[u] : static_cast<int64_t>(u);
          const int64_t t1 = whole_sequences ? k.begin[u + 1] : t0 + 1;
          double analytic = 0;
          bool any = false;
          for (int64_t t = t0; t < t1; ++t) analytic += grad[t], any |= k.mask[t] != 0.0f;
          if (!any) {
            EXPECT_EQ(analytic, 0.0);
            continue;
          }
          ++in_loss;
          auto shifted = [&](double d) {
            Tokens m = k;
            for (int64_t t = t0; t < t1; ++t) {
              m.logp[t] += static_cast<float>(d);
              if (detached_ratio(mode)) m.old_logp[t] += static_cast<float>(d);
            }
            return loss_of(c, m, with_is);
          };
          const double Lp = shifted(h), Lm = shifted(-h);
          const double fwd = (Lp - L0) / h, bwd = (L0 - Lm) / h;
          if (std::abs(fwd - bwd) > 0.05 * (std::abs(fwd) + std::abs(bwd)) + 1e-6) continue;  // a kink nearby
          const double central = (Lp - Lm) / (2 * h);
          EXPECT_NEAR(analytic, central, 2e-3 * std::abs(central) + 1e-6) << "unit " << u;
          ++checked;
        }
        EXPECT_GE(checked, in_loss * 6 / 10) << "too few smooth points to check";
      }
}

TEST(PolicyObjective, MaskedTokensAreNeverRead) {
  for (PgLossMode mode : kAllModes) {
    SCOPED_TRACE(std::string(pg_loss_mode_name(mode)));
    const PolicyObjectiveConfig c = config_for(mode);
    Tokens k = make_tokens(3, 9, LossAggMode::TokenMean, mode);
    std::vector<float> g1(k.logp.size()), g2(k.logp.size()), e(k.logp.size());
    PolicyStats s1, s2;
    policy_objective(c, batch_of(k, true), g1.data(), e.data(), &s1);
    for (size_t t = 0; t < k.logp.size(); ++t)
      if (k.mask[t] == 0.0f) k.logp[t] = NAN, k.old_logp[t] = INFINITY, k.ref[t] = NAN, k.adv[t] = NAN, k.is[t] = NAN;
    policy_objective(c, batch_of(k, true), g2.data(), e.data(), &s2);
    EXPECT_EQ(s1.loss, s2.loss);
    EXPECT_EQ(s1.tokens, s2.tokens);
    for (size_t t = 0; t < g1.size(); ++t) {
      EXPECT_EQ(g1[t], g2[t]);
      if (k.mask[t] == 0.0f) {
        EXPECT_EQ(g2[t], 0.0f);
      }
    }
  }
}

TEST(PolicyObjective, ModesThatIgnoreTheAggregationSayWhichTheyUse) {
  for (LossAggMode agg : {LossAggMode::TokenMean, LossAggMode::TokenSum, LossAggMode::SeqMeanTokenSumNorm}) {
    EXPECT_EQ(effective_loss_agg_mode(PgLossMode::Gspo, agg), LossAggMode::SeqMeanTokenMean);
    EXPECT_EQ(effective_loss_agg_mode(PgLossMode::Sapo, agg), LossAggMode::SeqMeanTokenMean);
    EXPECT_EQ(effective_loss_agg_mode(PgLossMode::GeoMean, agg), LossAggMode::SequenceMean);
    EXPECT_EQ(effective_loss_agg_mode(PgLossMode::Vanilla, agg), agg);
    EXPECT_EQ(effective_loss_agg_mode(PgLossMode::Cispo, agg), agg);
  }
  for (PgLossMode m : kAllModes) EXPECT_EQ(parse_pg_loss_mode(pg_loss_mode_name(m)), m);
  EXPECT_THROW(parse_pg_loss_mode("ppo"), Error);
}

// kl_cov penalises exactly max(1, floor(n * ratio)) tokens, those of largest covariance; clip_cov cuts at most
// that many, reproducibly for a seed.
TEST(PolicyObjective, CovarianceSelections) {
  Tokens k = make_tokens(11, 10, LossAggMode::TokenMean, PgLossMode::KlCov);
  PolicyObjectiveConfig c = config_for(PgLossMode::KlCov);
  c.kl_coef = 0, c.entropy_coef = 0;
  std::vector<float> g(k.logp.size()), e(k.logp.size());
  PolicyStats st;
  policy_objective(c, batch_of(k, false), g.data(), e.data(), &st);
  // Without the selection every gradient would be -A r w; count the tokens where it differs.
  int penalised = 0;
  for (size_t s = 0; s + 1 < k.begin.size(); ++s)
    for (int64_t t = k.begin[s]; t < k.begin[s + 1]; ++t) {
      if (k.mask[t] == 0.0f) continue;
      const double plain = -k.adv[t] * std::exp(static_cast<double>(k.logp[t]) - k.old_logp[t]) * k.pg_w[s];
      penalised += std::abs(g[t] - plain) > 1e-6 * std::abs(plain) + 1e-9;
    }
  EXPECT_EQ(penalised, std::max(1, static_cast<int>(st.tokens * c.kl_cov_ratio)));

  c = config_for(PgLossMode::ClipCov);
  PolicyStats a, b;
  policy_objective(c, batch_of(k, false), g.data(), e.data(), &a);
  policy_objective(c, batch_of(k, false), g.data(), e.data(), &b);
  EXPECT_EQ(a.loss, b.loss);
  EXPECT_GE(a.clipfrac, 1.0);
  EXPECT_LE(a.clipfrac, std::max(1.0, std::floor(a.tokens * c.clip_cov_ratio)));
}
