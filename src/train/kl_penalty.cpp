// KL estimators (see kl_penalty.h).
#include "train/kl_penalty.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"

namespace grpo::train {

const char* const kFullKlRefused =
    "kl_penalty \"full\" needs the whole vocabulary distribution of every response token, which training never "
    "materialises (verl does not implement it either); use kl, abs, mse or low_var_kl";

KlPenaltyType parse_kl_penalty(std::string_view name) {
  const auto t = kKlPenaltyNames.find(name);
  GRPO_CHECK(t, "[kl] unknown kl_penalty \"", name, "\": expected ", kKlPenaltyNames.listing());
  GRPO_CHECK(t->estimator != KlEstimator::Full, "[kl] ", kFullKlRefused);
  return *t;
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
    case KlEstimator::Full:
      fail("[kl] ", kFullKlRefused);
  }
  if (type.straight_through) v.dlogp = d;
  return v;
}

}  // namespace grpo::train
