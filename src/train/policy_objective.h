// The actor's objective over a set of sequences: verl's policy losses (policy_loss.loss_mode: vanilla, gspo,
// cispo, sapo, clip_cov, kl_cov, geo_mean, gpg, dppo_tv, dppo_kl, dro) with rollout importance weights, plus
// the KL loss to a frozen reference and the entropy bonus; its value, its gradient w.r.t. each token's
// log-prob (and entropy) as torch autograd gives it through verl's formulas (a clamp passes the gradient
// inside its closed interval, maximum/minimum give it to the chosen operand and half each on a tie, detached
// factors carry none), and verl's metrics.
//
// Aggregation is by weights (train/aggregation.h): a token's loss counts with mask[t] * seq_weight[s],
// weights computed over the whole mini-batch, so that micro-batches add up to the mini-batch's loss. The
// modes that ignore loss_agg_mode in verl do so here too (effective_loss_agg_mode): gspo and sapo always
// aggregate seq-mean-token-mean, geo_mean is the mean over sequences of a per-sequence loss. clip_cov and
// kl_cov pick tokens by covariance within the batch they are given (verl: the micro-batch).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/names.h"
#include "train/aggregation.h"
#include "train/kl_penalty.h"

namespace grpo::train {

enum class PgLossMode { Vanilla, Gspo, Cispo, Sapo, ClipCov, KlCov, GeoMean, Gpg, DppoTv, DppoKl, Dro };
inline constexpr auto kPgLossModeNames = name_table<PgLossMode>({{PgLossMode::Vanilla, "vanilla"},
                                                                 {PgLossMode::Gspo, "gspo"},
                                                                 {PgLossMode::Cispo, "cispo"},
                                                                 {PgLossMode::Sapo, "sapo"},
                                                                 {PgLossMode::ClipCov, "clip_cov"},
                                                                 {PgLossMode::KlCov, "kl_cov"},
                                                                 {PgLossMode::GeoMean, "geo_mean"},
                                                                 {PgLossMode::Gpg, "gpg"},
                                                                 {PgLossMode::DppoTv, "dppo_tv"},
                                                                 {PgLossMode::DppoKl, "dppo_kl"},
                                                                 {PgLossMode::Dro, "dro"}});

PgLossMode parse_pg_loss_mode(std::string_view name);  // verl's names
std::string_view pg_loss_mode_name(PgLossMode mode);

// The aggregation the mode's policy-gradient term uses given the configured one.
LossAggMode effective_loss_agg_mode(PgLossMode mode, LossAggMode requested);

struct PolicyObjectiveConfig {
  PgLossMode mode = PgLossMode::Vanilla;
  double clip_ratio_low = 0.2, clip_ratio_high = 0.2;  // dppo_*: the divergence thresholds
  double clip_ratio_c = 3.0;                           // vanilla: dual clip (> 1); dppo_*: ratio truncation
  double tau_pos = 1.0, tau_neg = 1.05;                // sapo gate temperatures
  double clip_cov_ratio = 0.0002, clip_cov_lb = 1.0, clip_cov_ub = 5.0;
  double kl_cov_ratio = 0.0002, ppo_kl_coef = 1.0;
  double dro_beta = 1.0;
  uint64_t seed = 0;  // clip_cov's random choice among its candidate tokens
  double kl_coef = 0.0;  // KL loss (0: none; the reference log-probs may then be absent)
  KlPenaltyType kl_type;
  double entropy_coef = 0.0;
};

// S sequences' response tokens, concatenated: sequence s holds tokens [begin[s], begin[s + 1]).
struct PolicyBatch {
  std::span<const int64_t> begin;  // [S + 1]
  const float* logp = nullptr;      // [N] current policy
  const float* old_logp = nullptr;  // [N] behaviour policy (detached)
  const float* adv = nullptr;       // [N]
  const float* mask = nullptr;      // [N] 0/1: tokens in the loss
  const float* pg_seq_weight = nullptr;  // [S] weight of sequence s in the policy-gradient term
  const float* seq_weight = nullptr;     // [S] in the KL and entropy terms (the configured aggregation)
  const float* is_weight = nullptr;  // [N] rollout importance weights (detached), null: none
  const float* ref_logp = nullptr;   // [N] needed when kl_coef != 0
  const float* entropy = nullptr;    // [N] needed when entropy_coef != 0
};

struct PolicyStats {
  double loss = 0, pg_loss = 0, kl = 0, entropy = 0;  // weighted sums (the aggregated terms)
  // Sums over the tokens in the loss; divided by `tokens` they are verl's actor/pg_clipfrac, pg_clipfrac_lower
  // and ppo_kl.
  double clipfrac = 0, clipfrac_lower = 0, ppo_kl = 0, tokens = 0;
};

// dlogp [N] (=, d loss / d logp), dentropy [N] (=, null when entropy_coef is 0); adds to stats. Tokens with
// mask 0 get zero gradients and are never read.
void policy_objective(const PolicyObjectiveConfig& cfg, const PolicyBatch& b, float* dlogp, float* dentropy,
                      PolicyStats* stats);

// The metrics verl reports for the mode, as (name, value) from accumulated stats.
std::vector<std::pair<std::string, double>> policy_metrics(PgLossMode mode, const PolicyStats& stats);

}  // namespace grpo::train
