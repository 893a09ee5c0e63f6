// The Hendrycks MATH answer normalisation that verl's math_reward.py and mathruler's math_normalize
// share (strip_string: \frac / \sqrt shorthand, units, \left, degrees, "k = " prefixes, a/b -> \frac{a}{b}).
#pragma once
#include <optional>

#include "reward/verl/py_text.h"

namespace grpo::verl {

// strip_string(s); nullopt where Python raises (an assert on "\text{ " appearing twice, a trailing \sqrt
// or \frac with nothing after it): the callers then fall back as verl's code does.
std::optional<PyStr> hendrycks_strip_string(const PyStr& s);

}  // namespace grpo::verl
