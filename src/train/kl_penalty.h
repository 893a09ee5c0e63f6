// Per-token KL estimators between the policy and a frozen reference (verl's kl_penalty): used by the KL
// loss (actor.kl_loss_type) and by the KL penalty in the reward (algorithm.kl_penalty). Each gives its
// value and its derivative w.r.t. the policy log-prob, as torch autograd does through verl's formula.
#pragma once
#include <string_view>

#include "core/names.h"

namespace grpo::train {

enum class KlEstimator {
  K1,   // kl | k1: logp - ref
  Abs,  // abs: |logp - ref|
  K2,   // mse | k2: (logp - ref)^2 / 2
  K3,   // low_var_kl | k3: e^x - x - 1 with x = clamp(ref - logp, -20, 20), clamped to [-10, 10]
  // full: a sum over the vocabulary, which training never materialises (verl does not implement it either):
  // a value of algorithm.kl_penalty, refused where it would be used.
  Full,
};

struct KlPenaltyType {
  KlEstimator estimator = KlEstimator::K3;
  // The "+" forms (k1+, k3+, ...): the estimator's value with k2's gradient (verl's straight-through
  // estimator of the KL's gradient).
  bool straight_through = false;
  bool operator==(const KlPenaltyType&) const = default;
};

// verl's names: kl | k1 | abs | mse | k2 | low_var_kl | k3 | full, and the "+" forms (k2's own gradient
// needs none).
inline constexpr auto kKlPenaltyNames = name_table<KlPenaltyType>({{{KlEstimator::K1, false}, "kl"},
                                                                   {{KlEstimator::K1, false}, "k1"},
                                                                   {{KlEstimator::Abs, false}, "abs"},
                                                                   {{KlEstimator::K2, false}, "mse"},
                                                                   {{KlEstimator::K2, false}, "k2"},
                                                                   {{KlEstimator::K3, false}, "low_var_kl"},
                                                                   {{KlEstimator::K3, false}, "k3"},
                                                                   {{KlEstimator::Full, false}, "full"},
                                                                   {{KlEstimator::K1, true}, "kl+"},
                                                                   {{KlEstimator::K1, true}, "k1+"},
                                                                   {{KlEstimator::Abs, true}, "abs+"},
                                                                   {{KlEstimator::K3, true}, "low_var_kl+"},
                                                                   {{KlEstimator::K3, true}, "k3+"}});
// Why full is refused.
extern const char* const kFullKlRefused;

// A name of kKlPenaltyNames; full is refused with its reason.
KlPenaltyType parse_kl_penalty(std::string_view name);

// verl's algorithm.kl_ctrl.type: the coefficient of the KL penalty in the reward stays, or follows verl's
// AdaptiveKLController.
enum class KlController { Fixed, Adaptive };
inline constexpr auto kKlControllerNames =
    name_table<KlController>({{KlController::Fixed, "fixed"}, {KlController::Adaptive, "adaptive"}});

struct KlValue {
  double value, dlogp;
};
KlValue kl_penalty(double logp, double ref_logp, KlPenaltyType type);

}  // namespace grpo::train
