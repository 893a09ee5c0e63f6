// KL estimators (see kl_penalty.h).
#include "train/kl_penalty.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"

namespace grpo::train {

KlPenaltyType parse_kl_penalty(std::string_view name) {
  KlPenaltyType t;
  std::string_view base = name;
  if (!base.empty() && base.back() == '+') {
    t.straight_through = true;
    base.remove_suffix(1);
  }
  if (base == "kl" || base == "k1") {
    t.estimator = KlEstimator::K1;
  } else if (base == "abs") {
    t.estimator = KlEstimator::Abs;
  } else if (base == "mse" || base == "k2") {
    t.estimator = KlEstimator::K2;
  } else if (base == "low_var_kl" || base == "k3") {
    t.estimator = KlEstimator::K3;
  } else if (base == "full") {
    fail("[kl] kl_penalty \"full\" needs the whole vocabulary distribution of every response token, which "
         "training never materialises (verl does not implement it either); use kl, abs, mse or low_var_kl");
  } else {
    fail("[kl] unknown kl_penalty \"", name, "\": expected kl, k1, abs, mse, k2, low_var_kl or k3 (optionally "
         "with \"+\" for the straight-through k2 gradient)");
  }
  return t;
}

KlValue kl_penalty(double logp, double ref_logp, KlPenaltyType type) {
  const double d = logp - ref_logp;
  KlValue v{0, 0};
  switch (type.estimator) {
    case KlEstimator::K1: v = {d, 1.0}; break;
    case KlEstimator::Abs: v = {std::abs(d), d > 0 ? 1.0 : d < 0 ? -1.0 : 0.0}; break;
    case KlEstimator::K2: v = {0.5 * d * d, d}; break;
    case KlEstimator::K3: {
      const double x = std::clamp(-d, -20.0, 20.0), dx = (-d >= -20.0 && -d <= 20.0) ? -1.0 : 0.0;
      const double ex = std::exp(x), raw = ex - x - 1.0;
      v = {std::clamp(raw, -10.0, 10.0), (raw >= -10.0 && raw <= 10.0) ? (ex - 1.0) * dx : 0.0};
      break;
    }
  }
  if (type.straight_through) v.dlogp = d;
  return v;
}

}  // namespace grpo::train
