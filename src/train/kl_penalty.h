// Per-token KL estimators between the policy and a frozen reference (verl's kl_penalty): used by the KL
// loss (actor.kl_loss_type) and by the KL penalty in the reward (algorithm.kl_penalty). Each gives its
// value and its derivative w.r.t. the policy log-prob, as torch autograd does through verl's formula.
#pragma once
#include <string_view>

namespace grpo::train {

enum class KlEstimator {
  K1,   // kl | k1: logp - ref
  Abs,  // abs: |logp - ref|
  K2,   // mse | k2: (logp - ref)^2 / 2
  K3,   // low_var_kl | k3: e^x - x - 1 with x = clamp(ref - logp, -20, 20), clamped to [-10, 10]
};

struct KlPenaltyType {
  KlEstimator estimator = KlEstimator::K3;
  // The "+" forms (k1+, k3+, ...): the estimator's value with k2's gradient (verl's straight-through
  // estimator of the KL's gradient).
  bool straight_through = false;
};

// kl | k1 | abs | mse | k2 | low_var_kl | k3, each optionally with "+"; "full" (a sum over the vocabulary,
// which training never materialises, and which verl does not implement either) is refused with its reason.
KlPenaltyType parse_kl_penalty(std::string_view name);

struct KlValue {
  double value, dlogp;
};
KlValue kl_penalty(double logp, double ref_logp, KlPenaltyType type);

}  // namespace grpo::train
