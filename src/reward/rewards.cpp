// Built-in reward functions, the weighted sum, and batch scoring (see rewards.h).
#include "reward/rewards.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "reward/external_reward.h"
#include "reward/math_answer.h"
#include "reward/python_reward.h"
#include "reward/verl/verl_reward.h"

namespace grpo {

namespace {

class MathReward : public RewardFunction {
 public:
  std::string name() const override { return "math"; }
  int64_t score(std::span<const RewardInput> batch, std::span<float> out) override {
    for (size_t i = 0; i < batch.size(); ++i) out[i] = math_reward(batch[i].response, batch[i].answer);
    return 0;
  }
};

class ExactReward : public RewardFunction {
 public:
  std::string name() const override { return "exact"; }
  int64_t score(std::span<const RewardInput> batch, std::span<float> out) override {
    for (size_t i = 0; i < batch.size(); ++i) out[i] = exact_reward(batch[i].response, batch[i].answer);
    return 0;
  }
};

class FormatReward : public RewardFunction {
 public:
  explicit FormatReward(const std::string& pattern) : pattern_(pattern) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), 0, &error, &offset, nullptr);
    if (!code_) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof message);
      fail("[reward] format pattern \"", pattern, "\" is not a valid regular expression at offset ", offset, ": ",
           reinterpret_cast<const char*>(message));
    }
    match_ = pcre2_match_data_create_from_pattern(code_, nullptr);
  }
  ~FormatReward() override {
    pcre2_match_data_free(match_);
    pcre2_code_free(code_);
  }
  FormatReward(const FormatReward&) = delete;
  FormatReward& operator=(const FormatReward&) = delete;

  std::string name() const override { return "format"; }
  int64_t score(std::span<const RewardInput> batch, std::span<float> out) override {
    int64_t failed = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      const std::string& r = batch[i].response;
      const int rc = pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(r.data()), r.size(), 0, 0, match_, nullptr);
      out[i] = rc >= 0 ? 1.0f : 0.0f;
      if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {  // a match error (e.g. a limit): the sample was not judged
        ++failed;
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(rc, message, sizeof message);
        last_failure_ = cat("pattern \"", pattern_, "\" on request \"", batch[i].id,
                            "\": ", reinterpret_cast<const char*>(message));
      }
    }
    return failed;
  }
  std::string last_failure() const override { return last_failure_; }

 private:
  std::string pattern_;
  std::string last_failure_;
  pcre2_code* code_ = nullptr;
  pcre2_match_data* match_ = nullptr;
};

}  // namespace

void RewardFunction::add_extra(const std::string& key, size_t i, size_t n, double value) {
  std::lock_guard<std::mutex> lock(extras_mutex_);
  auto it = std::find_if(extras_.begin(), extras_.end(), [&](const RewardExtra& e) { return e.key == key; });
  if (it == extras_.end()) it = extras_.insert(extras_.end(), RewardExtra{key, std::vector<float>(n, NAN)});
  it->values[i] = static_cast<float>(value);
}

float math_reward(const std::string& response, const std::string& answer) {
  const auto predicted = extract_answer(response);
  return predicted && answers_match(*predicted, answer) ? 1.0f : 0.0f;
}

float exact_reward(const std::string& response, const std::string& answer) {
  const auto boxed = last_boxed(response);
  const std::string predicted = normalize_answer(boxed ? *boxed : response);
  return !predicted.empty() && predicted == normalize_answer(answer) ? 1.0f : 0.0f;
}

std::unique_ptr<RewardFunction> make_math_reward() { return std::make_unique<MathReward>(); }
std::unique_ptr<RewardFunction> make_exact_reward() { return std::make_unique<ExactReward>(); }
std::unique_ptr<RewardFunction> make_format_reward(const std::string& pattern) {
  return std::make_unique<FormatReward>(pattern);
}

std::vector<WeightedReward> make_rewards(const std::vector<RewardFunctionConfig>& configs) {
  GRPO_CHECK(!configs.empty(), "[reward] reward.functions is empty");
  std::vector<WeightedReward> out;
  for (const auto& c : configs) {
    WeightedReward w;
    w.weight = c.weight;
    switch (c.name) {
      case RewardKind::Math:
        w.function = make_math_reward();
        break;
      case RewardKind::Exact:
        w.function = make_exact_reward();
        break;
      case RewardKind::Format:
        w.function = make_format_reward(c.pattern);
        break;
      case RewardKind::External:
        w.function = std::make_unique<ExternalReward>(c.command, c.workers, c.timeout_s);
        break;
      case RewardKind::Verl:
        w.function = make_verl_reward();
        break;
      case RewardKind::Python:
        w.function = make_python_reward({c.path, c.function, c.kwargs_json, c.batch, c.workers, c.timeout_s});
        break;
    }
    out.push_back(std::move(w));
  }
  return out;
}

RewardScores score_batch(std::span<WeightedReward> rewards, std::span<const RewardInput> batch) {
  RewardScores s;
  s.total.assign(batch.size(), 0.0f);
  for (auto& r : rewards) {
    // Unique names for metrics: a second "format" function is "format_2".
    std::string name = r.function->name();
    const auto same = std::count_if(s.names.begin(), s.names.end(), [&](const std::string& n) {
      return n == name || n.rfind(name + "_", 0) == 0;
    });
    s.names.push_back(same ? cat(name, "_", same + 1) : name);
    std::vector<float>& scores = s.per_function.emplace_back(batch.size(), 0.0f);
    s.failures.push_back(r.function->score(batch, scores));
    for (const RewardExtra& e : r.function->extras()) s.extras.push_back(e);
    for (size_t i = 0; i < batch.size(); ++i) s.total[i] += static_cast<float>(r.weight) * scores[i];
  }
  return s;
}

void check_reward_failures(std::span<WeightedReward> rewards, const std::vector<std::string>& names,
                           const std::vector<int64_t>& failures, int64_t samples, double max_fraction,
                           const std::string& when) {
  for (size_t f = 0; f < failures.size() && f < rewards.size(); ++f) {
    if (failures[f] == 0 || static_cast<double>(failures[f]) <= max_fraction * static_cast<double>(samples)) continue;
    const std::string last = rewards[f].function->last_failure();
    fail("[reward] ", names[f], ": failed on ", failures[f], " of ", samples, " samples in ", when,
         " (more than reward.max_failure_fraction = ", max_fraction, "); stopping the run",
         last.empty() ? "" : cat(". Last failure: ", last));
  }
}

}  // namespace grpo
