// verl's policy losses, KL loss and entropy bonus with their gradients (see policy_objective.h). Everything is
// computed in double from the float inputs; statistics are sums in token order, so results never depend on
// the thread count.
#include "train/policy_objective.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "core/profiler.h"
#include "core/rng.h"

namespace grpo::train {

PgLossMode parse_pg_loss_mode(std::string_view name) {
  if (auto m = kPgLossModeNames.find(name)) return *m;
  fail("[policy_loss] unknown loss_mode \"", name, "\": expected ", kPgLossModeNames.listing());
}

std::string_view pg_loss_mode_name(PgLossMode mode) { return kPgLossModeNames.name(mode); }

LossAggMode effective_loss_agg_mode(PgLossMode mode, LossAggMode requested) {
  if (mode == PgLossMode::Gspo || mode == PgLossMode::Sapo) return LossAggMode::SeqMeanTokenMean;
  if (mode == PgLossMode::GeoMean) return LossAggMode::SequenceMean;
  return requested;
}

namespace {

struct Clamped {
  double value, grad;  // grad: d value / d input (1 inside the closed interval, as torch.clamp)
};
Clamped clamp_grad(double x, double lo, double hi) { return {std::clamp(x, lo, hi), (x >= lo && x <= hi) ? 1.0 : 0.0}; }

// torch.maximum / torch.minimum backward: the chosen operand's gradient, half each on a tie.
double pick_grad(bool first_wins, bool tie, double g_first, double g_second) {
  if (tie) return 0.5 * (g_first + g_second);
  return first_wins ? g_first : g_second;
}

// One token's policy-gradient loss, its derivative w.r.t. logp and its metric indicators.
struct TokenPg {
  double loss = 0, dloss = 0;
  bool clipped = false, clipped_lower = false;
  double kl_metric = 0;  // summed into ppo_kl
};

// PPO's clipped surrogate on a ratio r (derivative dr w.r.t. logp): max(-A r, -A clip(r)).
TokenPg clipped_surrogate(double A, double r, double dr, double lo, double hi) {
  const Clamped c = clamp_grad(r, 1.0 - lo, 1.0 + hi);
  const double L1 = -A * r, L2 = -A * c.value;
  TokenPg t;
  t.loss = std::max(L1, L2);
  t.dloss = pick_grad(L1 > L2, L1 == L2, -A * dr, -A * c.grad * dr);
  t.clipped = L2 > L1;
  return t;
}

TokenPg vanilla_token(const PolicyObjectiveConfig& c, double lp, double old, double A) {
  const Clamped d = clamp_grad(lp - old, -20.0, 20.0);
  const double r = std::exp(d.value);
  TokenPg t = clipped_surrogate(A, r, r * d.grad, c.clip_ratio_low, c.clip_ratio_high);
  const double L3 = -A * c.clip_ratio_c;
  t.clipped_lower = A < 0 && t.loss > L3;
  if (A < 0) {  // dual clip: min(L, -c A); the constant carries no gradient
    t.dloss = pick_grad(t.loss < L3, t.loss == L3, t.dloss, 0.0);
    t.loss = std::min(t.loss, L3);
  }
  t.kl_metric = -d.value;
  return t;
}

TokenPg cispo_token(const PolicyObjectiveConfig& c, double lp, double old, double A) {
  const double d = std::clamp(lp - old, -20.0, 20.0), r = std::exp(d);
  const double clipped = std::clamp(r, 1.0 - c.clip_ratio_low, 1.0 + c.clip_ratio_high);  // detached
  TokenPg t;
  t.loss = -clipped * A * lp;
  t.dloss = -clipped * A;
  t.clipped = r != clipped;
  t.kl_metric = -d;
  return t;
}

TokenPg sapo_token(const PolicyObjectiveConfig& c, double lp, double old, double A) {
  const Clamped d = clamp_grad(lp - old, -20.0, 20.0);
  const double r = std::exp(d.value), tau = A > 0 ? c.tau_pos : c.tau_neg;
  const double s = 1.0 / (1.0 + std::exp(-tau * (r - 1.0)));
  TokenPg t;
  t.loss = -s * (4.0 / tau) * A;
  t.dloss = -A * 4.0 * s * (1.0 - s) * r * d.grad;  // d gate / d r = 4 s (1 - s)
  t.kl_metric = -d.value;
  return t;
}

// DPPO: -A sg(min(r, c)) logp on the tokens whose probability moved less than the threshold.
TokenPg dppo_token(const PolicyObjectiveConfig& c, double lp, double old, double A, bool kl_divergence) {
  const double d = std::clamp(lp - old, -20.0, 20.0), r = std::exp(d);
  const double truncated = std::min(r, c.clip_ratio_c);
  const double p = std::exp(lp), p_old = std::exp(old);
  bool valid;
  if (kl_divergence) {
    const double bkl = p_old * (old - lp) + (1.0 - p_old) * std::log((1.0 - p_old + 1e-8) / (1.0 - p + 1e-8));
    valid = A > 0 ? (bkl <= c.clip_ratio_high || p <= p_old) : (bkl <= c.clip_ratio_low || p >= p_old);
  } else {
    valid = A > 0 ? (p - p_old <= c.clip_ratio_high) : (p - p_old >= -c.clip_ratio_low);
  }
  TokenPg t;
  const double v = valid ? 1.0 : 0.0;
  t.loss = -A * truncated * lp * v;
  t.dloss = -A * truncated * v;
  t.clipped = !valid;
  t.clipped_lower = valid && r > c.clip_ratio_c;
  t.kl_metric = -d;
  return t;
}

// Tokens in the loss, in order.
std::vector<int64_t> tokens_in_loss(const PolicyBatch& b) {
  std::vector<int64_t> idx;
  for (int64_t t = b.begin.front(); t < b.begin.back(); ++t)
    if (b.mask[t] != 0.0f) idx.push_back(t);
  return idx;
}

// (A - mean A) (logp - mean logp) of each token in the loss (means over those tokens).
std::vector<double> covariances(const PolicyBatch& b, const std::vector<int64_t>& idx, bool eps_in_mean) {
  double sa = 0, sl = 0;
  for (int64_t t : idx) sa += b.adv[t], sl += b.logp[t];
  const double n = static_cast<double>(idx.size()) + (eps_in_mean ? 1e-8 : 0.0);
  const double ma = sa / n, ml = sl / n;
  std::vector<double> cov;
  for (int64_t t : idx) cov.push_back((b.adv[t] - ma) * (b.logp[t] - ml));
  return cov;
}

// kl_cov: the max(1, floor(n * ratio)) tokens of largest covariance take the |log-ratio| penalty.
std::vector<uint8_t> kl_cov_selection(const PolicyObjectiveConfig& c, const PolicyBatch& b) {
  std::vector<uint8_t> sel(static_cast<size_t>(b.begin.back()), 0);
  const std::vector<int64_t> idx = tokens_in_loss(b);
  if (idx.empty()) return sel;
  const std::vector<double> cov = covariances(b, idx, false);
  const size_t k = std::min(idx.size(), std::max<size_t>(1, static_cast<size_t>(idx.size() * c.kl_cov_ratio)));
  std::vector<size_t> order(idx.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return cov[x] > cov[y]; });
  for (size_t j = 0; j < k; ++j) sel[idx[order[j]]] = 1;
  return sel;
}

// clip_cov: among the unclipped tokens whose covariance lies in (lb, ub), max(1, floor(n * ratio)) chosen at
// random (seeded) lose their gradient.
std::vector<uint8_t> clip_cov_selection(const PolicyObjectiveConfig& c, const PolicyBatch& b) {
  std::vector<uint8_t> sel(static_cast<size_t>(b.begin.back()), 0);
  const std::vector<int64_t> idx = tokens_in_loss(b);
  if (idx.empty()) return sel;
  const std::vector<double> cov = covariances(b, idx, true);
  std::vector<int64_t> candidates;
  for (size_t j = 0; j < idx.size(); ++j) {
    const int64_t t = idx[j];
    const double r = std::exp(static_cast<double>(b.logp[t]) - b.old_logp[t]);
    const double L1 = -b.adv[t] * r, L2 = -b.adv[t] * std::clamp(r, 1.0 - c.clip_ratio_low, 1.0 + c.clip_ratio_high);
    if (L2 > L1) continue;  // clipped by PPO already
    if (cov[j] > c.clip_cov_lb && cov[j] < c.clip_cov_ub) candidates.push_back(t);
  }
  const size_t k = std::min(candidates.size(), std::max<size_t>(1, static_cast<size_t>(idx.size() * c.clip_cov_ratio)));
  Rng rng({c.seed, static_cast<uint64_t>(b.begin.back())});
  for (size_t j = 0; j < k; ++j) {  // partial Fisher-Yates
    const size_t pick = j + static_cast<size_t>(rng.next_u64() % (candidates.size() - j));
    std::swap(candidates[j], candidates[pick]);
    sel[candidates[j]] = 1;
  }
  return sel;
}

void check_batch(const PolicyObjectiveConfig& c, const PolicyBatch& b, const float* dlogp, const float* dentropy,
                 const PolicyStats* stats) {
  GRPO_CHECK(stats, "[policy_loss] null stats");
  GRPO_CHECK(!b.begin.empty() && b.begin.front() == 0, "[policy_loss] sequence offsets must start at 0");
  for (size_t s = 1; s < b.begin.size(); ++s)
    GRPO_CHECK(b.begin[s] >= b.begin[s - 1], "[policy_loss] sequence offsets must not decrease (sequence ", s - 1, ")");
  if (b.begin.back() == 0 && b.begin.size() == 1) return;
  GRPO_CHECK(b.logp && b.old_logp && b.adv && b.mask && b.pg_seq_weight && b.seq_weight && (dlogp || b.begin.back() == 0),
             "[policy_loss] null logp, old_logp, adv, mask, sequence weights or dlogp");
  GRPO_CHECK(c.mode != PgLossMode::Vanilla || c.clip_ratio_c > 1.0,
             "[policy_loss] clip_ratio_c must be > 1 (dual clip), got ", c.clip_ratio_c);
  GRPO_CHECK(c.clip_ratio_low >= 0 && c.clip_ratio_high >= 0, "[policy_loss] clip_ratio_low/high must be >= 0, got ",
             c.clip_ratio_low, " / ", c.clip_ratio_high);
  GRPO_CHECK(c.mode != PgLossMode::ClipCov || c.clip_cov_ratio > 0, "[policy_loss] clip_cov_ratio must be > 0");
  GRPO_CHECK(c.mode != PgLossMode::KlCov || c.kl_cov_ratio > 0, "[policy_loss] kl_cov_ratio must be > 0");
  GRPO_CHECK(c.mode != PgLossMode::Sapo || (c.tau_pos > 0 && c.tau_neg > 0), "[policy_loss] tau_pos and tau_neg must be > 0");
  GRPO_CHECK(c.kl_coef == 0 || b.ref_logp, "[policy_loss] kl_coef = ", c.kl_coef, " needs reference log-probs");
  GRPO_CHECK(c.entropy_coef == 0 || (b.entropy && dentropy), "[policy_loss] entropy_coef = ", c.entropy_coef,
             " needs entropy and dentropy");
}

// One sequence's tokens [t0, t1) with n of them in the loss, its weights (pg_seq_weight, seq_weight).
struct SequenceSpan {
  int64_t t0 = 0, t1 = 0;
  double n = 0, pw = 0, w = 0;
};

// geo_mean: one loss per sequence, -mean(A) exp(mean of sign-clipped log-ratios); then the KL and entropy
// terms per token, as for the other modes.
void geo_mean_sequence(const PolicyObjectiveConfig& c, const PolicyBatch& b, const SequenceSpan& q, float* dlogp,
                       float* dentropy, PolicyStats* st) {
  const int64_t t0 = q.t0, t1 = q.t1;
  const double n = q.n, pw = q.pw, w = q.w;
  double sum_x = 0, sum_a = 0, log_is = 0;
  for (int64_t t = t0; t < t1; ++t) {
    if (b.mask[t] == 0.0f) continue;
    const double d = static_cast<double>(b.logp[t]) - b.old_logp[t], A = b.adv[t];
    const double sg = A > 0 ? 1.0 : A < 0 ? -1.0 : 0.0;
    const double dc = std::clamp(d, -c.clip_ratio_low, c.clip_ratio_high);
    sum_x += sg * std::min(sg * d, sg * dc);
    sum_a += A;
    if (b.is_weight) log_is += std::log(static_cast<double>(b.is_weight[t]) + 1e-10);
    st->ppo_kl += -d;
    st->clipfrac += (d != dc && A > 0);
    st->clipfrac_lower += (d != dc && A < 0);
    st->tokens += 1;
  }
  const double ratio = std::exp(sum_x / (n + 1e-8)), A_seq = sum_a / (n + 1e-8);
  const double is_seq = b.is_weight ? std::exp(log_is / (n + 1e-8)) : 1.0;
  st->pg_loss += pw * -A_seq * ratio * is_seq;
  st->loss += pw * -A_seq * ratio * is_seq;
  for (int64_t t = t0; t < t1; ++t) {
    if (b.mask[t] == 0.0f) continue;
    const double d = static_cast<double>(b.logp[t]) - b.old_logp[t], A = b.adv[t];
    const double sg = A > 0 ? 1.0 : A < 0 ? -1.0 : 0.0;
    const Clamped dc = clamp_grad(d, -c.clip_ratio_low, c.clip_ratio_high);
    const double a = sg * d, bb = sg * dc.value;
    const double dx = sg * pick_grad(a < bb, a == bb, sg, sg * dc.grad);
    dlogp[t] = static_cast<float>(pw * -A_seq * ratio * is_seq * dx / (n + 1e-8));
  }
  for (int64_t t = t0; t < t1; ++t) {
    if (b.mask[t] == 0.0f) continue;
    if (c.kl_coef != 0) {
      const KlValue kl = kl_penalty(b.logp[t], b.ref_logp[t], c.kl_type);
      st->kl += w * kl.value;
      st->loss += w * c.kl_coef * kl.value;
      dlogp[t] += static_cast<float>(w * c.kl_coef * kl.dlogp);
    }
    if (b.entropy) {
      st->entropy += w * b.entropy[t];
      st->loss -= w * c.entropy_coef * b.entropy[t];
    }
    if (dentropy) dentropy[t] = static_cast<float>(-w * c.entropy_coef);
  }
}

// A token's policy-gradient term under the per-token modes: log-prob lp, old log-prob old, advantage A;
// gspo's sequence mean log-ratio; the cov modes' selection of token t.
TokenPg token_pg(const PolicyObjectiveConfig& c, double lp, double old, double A, double log_ratio_mean,
                 const std::vector<uint8_t>& selected, int64_t t) {
  TokenPg pg;
  switch (c.mode) {
    case PgLossMode::Vanilla:
      pg = vanilla_token(c, lp, old, A);
      break;
    case PgLossMode::Gspo: {  // token ratio sg(s) pi / sg(pi): value s, derivative s
      const Clamped l = clamp_grad(log_ratio_mean, -INFINITY, 10.0);
      const double r = std::exp(l.value);
      pg = clipped_surrogate(A, r, r * l.grad, c.clip_ratio_low, c.clip_ratio_high);
      pg.kl_metric = old - lp;
      break;
    }
    case PgLossMode::Cispo:
      pg = cispo_token(c, lp, old, A);
      break;
    case PgLossMode::Sapo:
      pg = sapo_token(c, lp, old, A);
      break;
    case PgLossMode::ClipCov: {
      const double r = std::exp(lp - old);
      pg = clipped_surrogate(A, r, r, c.clip_ratio_low, c.clip_ratio_high);
      if (selected[t]) pg.loss = 0, pg.dloss = 0;
      pg.clipped = selected[t];
      pg.kl_metric = old - lp;
      break;
    }
    case PgLossMode::KlCov: {
      const double d = lp - old, r = std::exp(d);
      pg.loss = -A * r;
      pg.dloss = -A * r;
      if (selected[t]) {
        pg.loss += c.ppo_kl_coef * std::abs(d);
        pg.dloss += c.ppo_kl_coef * (d > 0 ? 1.0 : d < 0 ? -1.0 : 0.0);
      }
      pg.kl_metric = std::abs(d);
      break;
    }
    case PgLossMode::Gpg:
      pg.loss = -lp * A;
      pg.dloss = -A;
      break;
    case PgLossMode::DppoTv:
      pg = dppo_token(c, lp, old, A, false);
      break;
    case PgLossMode::DppoKl:
      pg = dppo_token(c, lp, old, A, true);
      break;
    case PgLossMode::Dro: {
      const double d = lp - old;
      pg.loss = -(lp * A - 0.5 * c.dro_beta * d * d);
      pg.dloss = -A + c.dro_beta * d;
      pg.kl_metric = -d;
      break;
    }
    case PgLossMode::GeoMean:
      break;  // geo_mean_sequence
  }
  return pg;
}

// The per-token modes: each token's policy-gradient term, importance weight, KL and entropy terms.
void token_sequence(const PolicyObjectiveConfig& c, const PolicyBatch& b, const SequenceSpan& q,
                    const std::vector<uint8_t>& selected, float* dlogp, float* dentropy, PolicyStats* st) {
  const int64_t t0 = q.t0, t1 = q.t1;
  const double n = q.n, pw = q.pw, w = q.w;
  double log_ratio_mean = 0;  // gspo: the sequence's mean log-ratio (detached)
  if (c.mode == PgLossMode::Gspo) {
    for (int64_t t = t0; t < t1; ++t)
      if (b.mask[t] != 0.0f) log_ratio_mean += static_cast<double>(b.logp[t]) - b.old_logp[t];
    log_ratio_mean /= std::max(n, 1.0);
  }
  for (int64_t t = t0; t < t1; ++t) {
    if (b.mask[t] == 0.0f) continue;
    const double lp = b.logp[t], old = b.old_logp[t], A = b.adv[t];
    const TokenPg pg = token_pg(c, lp, old, A, log_ratio_mean, selected, t);
    const double is = b.is_weight ? b.is_weight[t] : 1.0;
    double loss = pw * pg.loss * is, grad = pw * pg.dloss * is;
    st->pg_loss += loss;
    if (c.kl_coef != 0) {
      const KlValue kl = kl_penalty(lp, b.ref_logp[t], c.kl_type);
      st->kl += w * kl.value;
      loss += w * c.kl_coef * kl.value;
      grad += w * c.kl_coef * kl.dlogp;
    }
    if (b.entropy) {
      st->entropy += w * b.entropy[t];
      loss -= w * c.entropy_coef * b.entropy[t];
    }
    if (dentropy) dentropy[t] = static_cast<float>(-w * c.entropy_coef);
    dlogp[t] = static_cast<float>(grad);
    st->loss += loss;
    st->clipfrac += pg.clipped;
    st->clipfrac_lower += pg.clipped_lower;
    st->ppo_kl += pg.kl_metric;
    st->tokens += 1;
  }
}

}  // namespace

void policy_objective(const PolicyObjectiveConfig& c, const PolicyBatch& b, float* dlogp, float* dentropy,
                      PolicyStats* st) {
  GRPO_PROFILE("policy_loss");
  check_batch(c, b, dlogp, dentropy, st);
  const int64_t S = static_cast<int64_t>(b.begin.size()) - 1;
  std::vector<uint8_t> selected;
  if (c.mode == PgLossMode::KlCov) selected = kl_cov_selection(c, b);
  if (c.mode == PgLossMode::ClipCov) selected = clip_cov_selection(c, b);
  for (int64_t s = 0; s < S; ++s) {
    SequenceSpan q;
    q.t0 = b.begin[s];
    q.t1 = b.begin[s + 1];
    for (int64_t t = q.t0; t < q.t1; ++t) q.n += b.mask[t];
    q.pw = b.pg_seq_weight[s];
    q.w = b.seq_weight[s];
    for (int64_t t = q.t0; t < q.t1; ++t) {
      dlogp[t] = 0.0f;
      if (dentropy) dentropy[t] = 0.0f;
    }
    if (c.mode == PgLossMode::GeoMean)
      geo_mean_sequence(c, b, q, dlogp, dentropy, st);
    else
      token_sequence(c, b, q, selected, dlogp, dentropy, st);
  }
}

std::vector<std::pair<std::string, double>> policy_metrics(PgLossMode mode, const PolicyStats& s) {
  const double n = s.tokens + 1e-8;  // verl's masked_mean
  const std::pair<std::string, double> clipfrac{"actor/pg_clipfrac", s.clipfrac / n},
      lower{"actor/pg_clipfrac_lower", s.clipfrac_lower / n}, kl{"actor/ppo_kl", s.ppo_kl / n};
  switch (mode) {
    case PgLossMode::Gpg: return {};
    case PgLossMode::KlCov:
    case PgLossMode::Dro: return {kl};
    case PgLossMode::ClipCov: return {clipfrac, kl};
    default: return {clipfrac, kl, lower};
  }
}

}  // namespace grpo::train
