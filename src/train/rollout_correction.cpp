// Rollout importance weights and rejection (see rollout_correction.h).
#include "train/rollout_correction.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/error.h"

namespace grpo::train {

RolloutIsLevel parse_rollout_is_level(std::string_view name) {
  if (auto level = kRolloutIsNames.find(name)) return *level;
  fail("[rollout_correction] unknown rollout_is \"", name, "\": expected token, sequence or null");
}

void rollout_is_weights(float* w, const float* old_logp, const float* rollout_logp, const float* mask, int64_t n,
                        RolloutIsLevel level, double threshold) {
  GRPO_CHECK(threshold > 0, "[rollout_correction] rollout_is_threshold must be > 0, got ", threshold);
  double seq_log_ratio = 0;
  if (level == RolloutIsLevel::Sequence)
    for (int64_t t = 0; t < n; ++t)
      if (mask[t] != 0.0f) seq_log_ratio += static_cast<double>(old_logp[t]) - rollout_logp[t];
  for (int64_t t = 0; t < n; ++t) {
    if (level == RolloutIsLevel::Off || mask[t] == 0.0f) {
      w[t] = level == RolloutIsLevel::Off ? 1.0f : 0.0f;
      continue;
    }
    const double lr = level == RolloutIsLevel::Token ? static_cast<double>(old_logp[t]) - rollout_logp[t] : seq_log_ratio;
    w[t] = static_cast<float>(std::min(std::exp(std::clamp(lr, -20.0, 20.0)), threshold));
  }
}

namespace {

std::vector<std::string> split_list(std::string_view s) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= s.size()) {
    size_t end = s.find(',', begin);
    if (end == std::string_view::npos) end = s.size();
    std::string part(s.substr(begin, end - begin));
    part.erase(0, part.find_first_not_of(" \t"));
    part.erase(part.find_last_not_of(" \t") + 1);
    if (!part.empty()) out.push_back(part);
    begin = end + 1;
  }
  return out;
}

double positive_number(const std::string& text, const std::string& option) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  GRPO_CHECK(end && *end == '\0' && !text.empty() && std::isfinite(v) && v > 0, "[rollout_correction] rollout_rs_threshold \"",
             text, "\" for option ", option, ": expected a positive number");
  return v;
}

}  // namespace

std::vector<RejectionCriterion> parse_rollout_rs(std::string_view options, std::string_view thresholds) {
  const std::vector<std::string> names = split_list(options);
  if (names.empty()) return {};
  std::vector<std::string> specs = split_list(thresholds);
  GRPO_CHECK(!specs.empty(), "[rollout_correction] rollout_rs = ", options, " needs rollout_rs_threshold");
  GRPO_CHECK(specs.size() == 1 || specs.size() == names.size(), "[rollout_correction] rollout_rs_threshold has ",
             specs.size(), " values for ", names.size(), " rollout_rs options: give one for all or one per option");
  std::vector<RejectionCriterion> out;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    const std::string& spec = specs.size() == 1 ? specs[0] : specs[i];
    RejectionCriterion c;
    c.name = name;
    std::string stat;
    if (name.rfind("token_", 0) == 0) c.level = RejectionCriterion::Level::Token, stat = name.substr(6);
    else if (name.rfind("seq_sum_", 0) == 0) c.level = RejectionCriterion::Level::SeqSum, stat = name.substr(8);
    else if (name.rfind("seq_mean_", 0) == 0) c.level = RejectionCriterion::Level::SeqMean, stat = name.substr(9);
    else if (name.rfind("seq_max_", 0) == 0) c.level = RejectionCriterion::Level::SeqMax, stat = name.substr(8);
    GRPO_CHECK((stat == "k1" && c.level != RejectionCriterion::Level::SeqMax) || stat == "k2" || stat == "k3",
               "[rollout_correction] unknown rollout_rs option \"", name, "\": expected token_k1|k2|k3, "
               "seq_sum_k1|k2|k3, seq_mean_k1|k2|k3 or seq_max_k2|k3");
    c.k = stat[1] - '0';
    const size_t us = spec.find('_');
    if (c.k == 1) {  // ratio bounds, compared in log space
      const double upper = positive_number(us == std::string::npos ? spec : spec.substr(us + 1), name);
      const double lower = us == std::string::npos ? 1.0 / upper : positive_number(spec.substr(0, us), name);
      c.lower = std::log(lower), c.upper = std::log(upper);
    } else {
      GRPO_CHECK(us == std::string::npos, "[rollout_correction] rollout_rs_threshold for ", name,
                 " takes one upper bound, not \"", spec, "\"");
      c.upper = positive_number(spec, name);
    }
    out.push_back(c);
  }
  return out;
}

void rollout_rejection_mask(float* keep, const float* old_logp, const float* rollout_logp, const float* mask,
                            int64_t n, const std::vector<RejectionCriterion>& criteria) {
  for (int64_t t = 0; t < n; ++t) keep[t] = mask[t] != 0.0f ? 1.0f : 0.0f;
  auto stat = [&](int64_t t, int k) {
    const double r = std::clamp(static_cast<double>(old_logp[t]) - rollout_logp[t], -20.0, 20.0);
    return k == 1 ? -r : k == 2 ? 0.5 * r * r : std::exp(r) - 1.0 - r;
  };
  for (const RejectionCriterion& c : criteria) {
    if (c.level == RejectionCriterion::Level::Token) {
      for (int64_t t = 0; t < n; ++t) {
        if (mask[t] == 0.0f) continue;
        const double s = stat(t, c.k);
        if (s < c.lower || s > c.upper) keep[t] = 0.0f;
      }
      continue;
    }
    double sum = 0, count = 0, mx = -INFINITY;
    for (int64_t t = 0; t < n; ++t) {
      if (mask[t] == 0.0f) continue;
      const double s = stat(t, c.k);
      sum += s, count += 1, mx = std::max(mx, s);
    }
    if (count == 0) continue;
    const double v = c.level == RejectionCriterion::Level::SeqSum ? sum
                     : c.level == RejectionCriterion::Level::SeqMean ? sum / (count + 1e-8) : mx;
    if (v < c.lower || v > c.upper)
      for (int64_t t = 0; t < n; ++t) keep[t] = 0.0f;
  }
}

}  // namespace grpo::train
