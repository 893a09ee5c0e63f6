// The GRPO/PPO per-token objective (verl compute_policy_loss_vanilla, kl_penalty, entropy bonus) and its
// gradient w.r.t. logp and entropy, following torch autograd through every clamp, clip, max and min:
// a clamp passes the gradient where its input is inside the closed interval, maximum/minimum give it to the
// larger/smaller operand and split it in half on a tie. Tokens with weight 0 are skipped entirely (their
// inputs may be padding garbage) and get zero gradient. Serial over tokens: N is a micro-batch, the
// statistics are double sums in token order, so results never depend on the thread count.
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/profiler.h"
#include "kernels/ops.h"

namespace grpo::ops {
namespace {

struct Clamped {
  float value;
  float grad;  // d value / d input: 1 inside [lo, hi] (closed, as torch.clamp), else 0
};

Clamped clamp_with_grad(float x, float lo, float hi) {
  return {std::clamp(x, lo, hi), (x >= lo && x <= hi) ? 1.0f : 0.0f};
}

// torch.maximum / torch.minimum backward: the gradient goes to the selected operand, half each on a tie.
float select_grad(bool first_wins, bool tie, float g_first, float g_second) {
  if (tie) return 0.5f * (g_first + g_second);
  return first_wins ? g_first : g_second;
}

struct TokenTerm {
  float value, dlogp;
};

struct PgTerm {
  float value, dlogp;
  bool clipped;  // the clipped surrogate L2 exceeded L1
};

PgTerm pg_term(float logp, float old_logp, float A, const PolicyLossConfig& cfg) {
  const Clamped d = clamp_with_grad(logp - old_logp, -20.0f, 20.0f);
  const float ratio = std::exp(d.value), dratio = ratio * d.grad;
  const Clamped clipped = clamp_with_grad(ratio, 1.0f - cfg.clip_ratio_low, 1.0f + cfg.clip_ratio_high);
  const float L1 = -A * ratio, dL1 = -A * dratio;
  const float L2 = -A * clipped.value, dL2 = -A * clipped.grad * dratio;
  const float Lc = std::max(L1, L2), dLc = select_grad(L1 > L2, L1 == L2, dL1, dL2);
  PgTerm out{Lc, dLc, L2 > L1};
  if (A < 0.0f) {  // dual clip: min(Lc, -c A); the constant operand carries no gradient
    const float L3 = -cfg.clip_ratio_c * A;
    out.value = std::min(Lc, L3);
    out.dlogp = select_grad(Lc < L3, Lc == L3, dLc, 0.0f);
  }
  return out;
}

TokenTerm kl_term(float logp, float ref_logp, KlType type) {
  switch (type) {
    case KlType::K1: return {logp - ref_logp, 1.0f};
    case KlType::K2: return {0.5f * (logp - ref_logp) * (logp - ref_logp), logp - ref_logp};
    case KlType::K3: {  // low_var_kl: x = clamp(ref - logp), kl = clamp(e^x - x - 1, -10, 10)
      const Clamped x = clamp_with_grad(ref_logp - logp, -20.0f, 20.0f);
      const float ex = std::exp(x.value);
      const Clamped kl = clamp_with_grad(ex - x.value - 1.0f, -10.0f, 10.0f);
      return {kl.value, -(ex - 1.0f) * x.grad * kl.grad};  // dx/dlogp = -1
    }
  }
  fail("[policy_loss] unknown kl_type ", static_cast<int>(type));
}

void check_args(float* dlogp, float* dentropy, PolicyLossStats* stats, const float* logp, const float* old_logp,
                const float* ref_logp, const float* adv, const float* entropy, const float* w, int64_t N,
                const PolicyLossConfig& cfg) {
  GRPO_CHECK(N >= 0, "[policy_loss] N must be >= 0, got ", N);
  GRPO_CHECK(cfg.clip_ratio_low >= 0.0f && cfg.clip_ratio_high >= 0.0f,
             "[policy_loss] clip_ratio_low/high must be >= 0, got ", cfg.clip_ratio_low, " / ",
             cfg.clip_ratio_high);
  GRPO_CHECK(cfg.clip_ratio_c > 1.0f, "[policy_loss] clip_ratio_c must be > 1 (dual clip), got ",
             cfg.clip_ratio_c);
  GRPO_CHECK(stats, "[policy_loss] null stats");
  if (N == 0) return;
  GRPO_CHECK(dlogp && logp && old_logp && adv && w, "[policy_loss] null dlogp, logp, old_logp, adv or w");
  GRPO_CHECK(cfg.kl_coef == 0.0f || ref_logp, "[policy_loss] kl_coef = ", cfg.kl_coef,
             " needs ref_logp, got null");
  GRPO_CHECK(cfg.entropy_coef == 0.0f || (entropy && dentropy), "[policy_loss] entropy_coef = ",
             cfg.entropy_coef, " needs entropy and dentropy, got null");
}

}  // namespace

void policy_loss(float* dlogp, float* dentropy, PolicyLossStats* stats, const float* logp, const float* old_logp,
                 const float* ref_logp, const float* adv, const float* entropy, const float* w, const float* tis,
                 int64_t N, const PolicyLossConfig& cfg) {
  GRPO_PROFILE("policy_loss");
  check_args(dlogp, dentropy, stats, logp, old_logp, ref_logp, adv, entropy, w, N, cfg);
  for (int64_t t = 0; t < N; ++t) {
    if (w[t] == 0.0f) {
      dlogp[t] = 0.0f;
      if (dentropy) dentropy[t] = 0.0f;
      continue;
    }
    const PgTerm pg = pg_term(logp[t], old_logp[t], adv[t], cfg);
    const float tis_w = tis ? tis[t] : 1.0f;
    float loss = pg.value * tis_w, grad = pg.dlogp * tis_w;
    stats->pg_loss += static_cast<double>(w[t]) * loss;
    if (ref_logp) {
      const TokenTerm kl = kl_term(logp[t], ref_logp[t], cfg.kl_type);
      stats->kl += static_cast<double>(w[t]) * kl.value;
      loss += cfg.kl_coef * kl.value;
      grad += cfg.kl_coef * kl.dlogp;
    }
    if (entropy) {
      stats->entropy += static_cast<double>(w[t]) * entropy[t];
      loss -= cfg.entropy_coef * entropy[t];
    }
    if (dentropy) dentropy[t] = -cfg.entropy_coef * w[t];
    dlogp[t] = w[t] * grad;
    stats->loss += static_cast<double>(w[t]) * loss;
    stats->clipped += pg.clipped ? 1.0 : 0.0;
    stats->ppo_kl += -std::clamp(logp[t] - old_logp[t], -20.0f, 20.0f);
    stats->tokens += 1.0;
  }
}

}  // namespace grpo::ops
