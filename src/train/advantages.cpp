// Advantage estimators, DAPO group filtering and overlong shaping (see advantages.h).
#include "train/advantages.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"

namespace grpo::train {

AdvantageScaling parse_advantage_scaling(std::string_view name) {
  if (auto s = kAdvantageScalingNames.find(name)) return *s;
  fail("[advantages] unknown reward scaling \"", name, "\": expected ", kAdvantageScalingNames.listing());
}

std::string_view advantage_scaling_name(AdvantageScaling s) { return kAdvantageScalingNames.name(s); }

namespace {

int64_t checked_total(std::span<const float> rewards, std::span<const int64_t> group_sizes) {
  int64_t total = 0;
  for (size_t g = 0; g < group_sizes.size(); ++g) {
    GRPO_CHECK(group_sizes[g] >= 1, "[advantages] group ", g, " has size ", group_sizes[g], ", expected >= 1");
    total += group_sizes[g];
  }
  GRPO_CHECK(total == static_cast<int64_t>(rewards.size()), "[advantages] group sizes add up to ", total,
             " but there are ", rewards.size(), " rewards");
  return total;
}

// Unbiased standard deviation of x (0 for fewer than two values).
double unbiased_std(std::span<const float> x) {
  if (x.size() < 2) return 0.0;
  double mean = 0;
  for (float v : x) mean += v;
  mean /= static_cast<double>(x.size());
  double ss = 0;
  for (float v : x) ss += (v - mean) * (v - mean);
  return std::sqrt(ss / static_cast<double>(x.size() - 1));
}

}  // namespace

std::vector<float> grpo_advantages(std::span<const float> rewards, std::span<const int64_t> group_sizes,
                                   AdvantageScaling scaling, double eps) {
  checked_total(rewards, group_sizes);
  const double batch_std = unbiased_std(rewards);
  std::vector<float> adv(rewards.size());
  size_t begin = 0;
  for (int64_t size : group_sizes) {
    std::span<const float> group = rewards.subspan(begin, static_cast<size_t>(size));
    double mean = 0, std = 1;  // a group of one: mean 0, std 1
    if (size > 1) {
      for (float r : group) mean += r;
      mean /= static_cast<double>(size);
      std = unbiased_std(group);
    }
    if (scaling == AdvantageScaling::BatchStd) std = batch_std;
    for (int64_t i = 0; i < size; ++i) {
      double centred = group[static_cast<size_t>(i)] - mean;
      adv[begin + static_cast<size_t>(i)] =
          static_cast<float>(scaling == AdvantageScaling::None ? centred : centred / (std + eps));
    }
    begin += static_cast<size_t>(size);
  }
  return adv;
}

const char* const kGaeRefused =
    "algorithm.adv_estimator = gae needs a critic (a value model trained alongside the policy), which this engine "
    "does not have; use a critic-free estimator: grpo, rloo, reinforce_plus_plus, reinforce_plus_plus_baseline, "
    "remax, opo, grpo_passk or gpg";

AdvEstimator parse_adv_estimator(std::string_view name) {
  const auto e = kAdvEstimatorNames.find(name);
  GRPO_CHECK(e, "[advantages] unknown adv_estimator \"", name, "\": expected ", kAdvEstimatorNames.listing());
  GRPO_CHECK(*e != AdvEstimator::Gae, "[advantages] ", kGaeRefused);
  return *e;
}

std::string_view adv_estimator_name(AdvEstimator e) { return kAdvEstimatorNames.name(e); }

namespace {

// The responses of each group id, groups in order of first appearance (verl iterates a dict filled in
// batch order).
std::vector<std::vector<int64_t>> members_by_group(std::span<const int64_t> group) {
  std::map<int64_t, size_t> slot;
  std::vector<std::vector<int64_t>> members;
  for (size_t i = 0; i < group.size(); ++i) {
    auto [it, added] = slot.emplace(group[i], members.size());
    if (added) members.emplace_back();
    members[it->second].push_back(static_cast<int64_t>(i));
  }
  return members;
}

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

double unbiased_std_of(const std::vector<double>& v) {  // torch.std (n - 1); NaN for one value, as torch
  const double m = mean_of(v);
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

// verl_F.masked_whiten: (x - mean) / sqrt(var + 1e-8) with the masked mean (sum / (count + 1e-8)) and the
// unbiased masked variance; refuses fewer than two unmasked values as verl does.
void masked_whiten(std::vector<double>& x, std::span<const double> mask) {
  double count = 0, sum = 0;
  for (size_t i = 0; i < x.size(); ++i) count += mask[i], sum += x[i] * mask[i];
  GRPO_CHECK(count != 0, "[advantages] At least one element in the mask has to be 1 (whitening the advantages "
             "of a batch whose responses are all empty or masked)");
  GRPO_CHECK(count != 1, "[advantages] The sum of the mask is one, which can cause a division by zero (whitening "
             "the advantages of a batch with a single response token)");
  const double mean = sum / (count + 1e-8);
  double ss = 0;
  for (size_t i = 0; i < x.size(); ++i) ss += (x[i] - mean) * (x[i] - mean) * mask[i];
  const double var = ss / (count + 1e-8) * (count / (count - 1));
  const double inv = 1.0 / std::sqrt(var + 1e-8);
  for (double& v : x) v = (v - mean) * inv;
}

void check_inputs(const AdvantageOptions& opt, const AdvantageInputs& in) {
  GRPO_CHECK(in.B >= 0 && in.T >= 0, "[advantages] B = ", in.B, ", T = ", in.T, ": expected >= 0");
  const size_t BT = static_cast<size_t>(in.B * in.T);
  GRPO_CHECK(in.token_level_rewards.size() == BT && in.response_mask.size() == BT, "[advantages] ",
             "token_level_rewards has ", in.token_level_rewards.size(), " and response_mask ", in.response_mask.size(),
             " values, expected B x T = ", BT);
  GRPO_CHECK(in.group.size() == static_cast<size_t>(in.B), "[advantages] group has ", in.group.size(),
             " entries, expected B = ", in.B);
  GRPO_CHECK(opt.estimator != AdvEstimator::Remax || in.reward_baselines.size() == static_cast<size_t>(in.B),
             "[advantages] remax needs reward_baselines [B = ", in.B, "] (the greedy responses' rewards), got ",
             in.reward_baselines.size());
  GRPO_CHECK(opt.estimator != AdvEstimator::Gae, "[advantages] ", kGaeRefused);
  GRPO_CHECK(opt.estimator != AdvEstimator::ReinforcePlusPlus || (opt.gamma >= 0 && opt.gamma <= 1),
             "[advantages] reinforce_plus_plus needs algorithm.gamma in [0, 1], got ", opt.gamma);
}

// An outcome estimator's one value per response (to be broadcast over its tokens and masked), from each
// response's score (the sum of its token rewards) and response length.
std::vector<double> outcome_values(const AdvantageOptions& opt, const AdvantageInputs& in) {
  const int64_t B = in.B, T = in.T;
  std::vector<double> score(B, 0.0), length(B, 0.0);
  for (int64_t i = 0; i < B; ++i)
    for (int64_t t = 0; t < T; ++t)
      score[i] += in.token_level_rewards[i * T + t], length[i] += in.response_mask[i * T + t];
  const std::vector<std::vector<int64_t>> groups = members_by_group(in.group);
  std::vector<double> value(B, 0.0);
  auto group_scores = [&](const std::vector<int64_t>& g) {
    std::vector<double> v;
    for (int64_t i : g) v.push_back(score[i]);
    return v;
  };
  switch (opt.estimator) {
    case AdvEstimator::Grpo: {
      // TRL's scale_rewards=batch: the std of every score (verl's grpo has group std or none).
      const double batch_std = B > 1 ? unbiased_std_of(score) : 1.0;
      for (const auto& g : groups) {
        const std::vector<double> v = group_scores(g);
        const bool one = g.size() == 1;  // a group of one: mean 0, std 1
        const double mean = one ? 0.0 : mean_of(v);
        const double std = opt.scaling == AdvantageScaling::BatchStd ? batch_std : one ? 1.0 : unbiased_std_of(v);
        for (int64_t i : g)
          value[i] = opt.scaling == AdvantageScaling::None ? score[i] - mean : (score[i] - mean) / (std + opt.eps);
      }
      break;
    }
    case AdvEstimator::GrpoPassk:
      for (const auto& g : groups) {
        GRPO_CHECK(g.size() >= 2, "[advantages] Pass@k requires at least 2 samples per group. Got ", g.size(),
                   " for group p", in.group[g[0]], ".");
        const std::vector<double> v = group_scores(g);
        size_t best = 0;  // the first of the highest scores
        for (size_t k = 1; k < v.size(); ++k)
          if (v[k] > v[best]) best = k;
        double second = -INFINITY;
        for (size_t k = 0; k < v.size(); ++k)
          if (k != best) second = std::max(second, v[k]);
        double adv = v[best] - second;
        if (opt.scaling != AdvantageScaling::None) adv /= unbiased_std_of(v) + opt.eps;
        value[g[best]] = adv;
      }
      break;
    case AdvEstimator::Rloo:  // leave-one-out mean; a group of one keeps its score
      for (const auto& g : groups) {
        if (g.size() == 1) {
          value[g[0]] = score[g[0]];
          continue;
        }
        const double n = static_cast<double>(g.size()), mean = mean_of(group_scores(g));
        for (int64_t i : g) value[i] = score[i] * n / (n - 1) - mean * n / (n - 1);
      }
      break;
    case AdvEstimator::Opo:  // length-weighted group mean as the baseline
      for (const auto& g : groups) {
        double num = 0, den = 0;
        if (g.size() > 1)
          for (int64_t i : g) num += length[i] * score[i], den += length[i];
        const double baseline = den != 0 ? num / den : 0.0;
        for (int64_t i : g) value[i] = score[i] - baseline;
      }
      break;
    case AdvEstimator::Gpg: {
      int64_t nonzero = 0;
      for (double s : score) nonzero += s != 0;
      const double alpha = static_cast<double>(B) / static_cast<double>(std::max<int64_t>(nonzero, 1));
      for (const auto& g : groups) {
        const double mean = g.size() == 1 ? 0.0 : mean_of(group_scores(g));
        for (int64_t i : g) value[i] = alpha * (score[i] - mean);  // verl's f_norm is 1
      }
      break;
    }
    case AdvEstimator::ReinforcePlusPlusBaseline:  // whitened over the batch afterwards
      for (const auto& g : groups) {
        const double mean = g.size() == 1 ? 0.0 : mean_of(group_scores(g));
        for (int64_t i : g) value[i] = score[i] - mean;
      }
      break;
    case AdvEstimator::ReinforcePlusPlus:
    case AdvEstimator::Remax:
    case AdvEstimator::Gae:  // refused by check_inputs
      GRPO_CHECK(false, "[advantages] not an outcome estimator");
  }
  return value;
}

// reinforce_plus_plus: discounted returns, reset after each response's end, whitened over the batch.
void discounted_returns(const AdvantageOptions& opt, const AdvantageInputs& in, TokenAdvantages& out) {
  const int64_t B = in.B, T = in.T;
  out.returns.assign(static_cast<size_t>(B * T), 0.0);
  for (int64_t i = 0; i < B; ++i) {
    double running = 0;
    for (int64_t t = T - 1; t >= 0; --t) {
      running = in.token_level_rewards[i * T + t] + opt.gamma * running;
      out.returns[i * T + t] = running;
      running *= in.response_mask[i * T + t];
    }
  }
  out.advantages = out.returns;
  masked_whiten(out.advantages, in.response_mask);
  for (size_t k = 0; k < out.advantages.size(); ++k) out.advantages[k] *= in.response_mask[k];
}

// remax: reward-to-go minus the greedy response's reward.
void remax_advantages(const AdvantageInputs& in, TokenAdvantages& out) {
  const int64_t B = in.B, T = in.T;
  out.returns.assign(static_cast<size_t>(B * T), 0.0);
  for (int64_t i = 0; i < B; ++i) {
    double to_go = 0;
    for (int64_t t = T - 1; t >= 0; --t) {
      const auto m = in.response_mask[i * T + t];
      to_go += in.token_level_rewards[i * T + t] * m;
      out.returns[i * T + t] = to_go;
      out.advantages[i * T + t] = to_go - in.reward_baselines[i] * m;
    }
  }
}

}  // namespace

TokenAdvantages estimate_advantages(const AdvantageOptions& opt, const AdvantageInputs& in) {
  check_inputs(opt, in);
  const int64_t B = in.B, T = in.T;
  TokenAdvantages out;
  out.advantages.assign(static_cast<size_t>(B * T), 0.0);
  if (opt.estimator == AdvEstimator::ReinforcePlusPlus) {
    discounted_returns(opt, in, out);
  } else if (opt.estimator == AdvEstimator::Remax) {
    remax_advantages(in, out);
  } else {  // outcome estimators: one value per response, broadcast over its tokens and masked
    const std::vector<double> value = outcome_values(opt, in);
    for (int64_t i = 0; i < B; ++i)
      for (int64_t t = 0; t < T; ++t) out.advantages[i * T + t] = value[i] * in.response_mask[i * T + t];
    if (opt.estimator == AdvEstimator::ReinforcePlusPlusBaseline) {
      masked_whiten(out.advantages, in.response_mask);
      for (size_t k = 0; k < out.advantages.size(); ++k) out.advantages[k] *= in.response_mask[k];
    }
    out.returns = out.advantages;
  }
  return out;
}

std::vector<bool> groups_with_signal(std::span<const float> rewards, std::span<const int64_t> group_sizes) {
  checked_total(rewards, group_sizes);
  std::vector<bool> keep;
  keep.reserve(group_sizes.size());
  size_t begin = 0;
  for (int64_t size : group_sizes) {
    auto group = rewards.subspan(begin, static_cast<size_t>(size));
    auto [lo, hi] = std::minmax_element(group.begin(), group.end());
    keep.push_back(*lo != *hi);
    begin += static_cast<size_t>(size);
  }
  return keep;
}

float overlong_penalty(int64_t response_length, int64_t max_response_length, int64_t buffer_len,
                       float penalty_factor) {
  GRPO_CHECK(buffer_len >= 1 && buffer_len <= max_response_length, "[advantages] overlong buffer length ",
             buffer_len, " must be in [1, max_response_length = ", max_response_length, "]");
  const int64_t expected = max_response_length - buffer_len;
  const int64_t exceed = std::min(response_length, max_response_length) - expected;
  if (exceed <= 0) return 0.0f;
  return -static_cast<float>(exceed) / static_cast<float>(buffer_len) * penalty_factor;
}

}  // namespace grpo::train
