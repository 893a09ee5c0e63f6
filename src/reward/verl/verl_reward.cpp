// Dispatch of verl's rules by data_source (see verl_reward.h).
#include "reward/verl/verl_reward.h"

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace grpo::verl {

namespace {

enum class Rule { Gsm8k, Math, Dapo, Geo3k, SearchR1, None };

const char* const kMathSources[] = {"lighteval/MATH", "DigitalLearningGmbH/MATH-lighteval", "HuggingFaceH4/MATH-500"};
const char* const kDapoSources[] = {"math_dapo", "math", "math_dapo_reasoning"};
const char* const kSearchSources[] = {"searchR1_nq",      "searchR1_triviaqa",        "searchR1_popqa",
                                      "searchR1_hotpotqa", "searchR1_2wikimultihopqa", "searchR1_musique",
                                      "searchR1_bamboogle"};

Rule rule_of(const std::string& s) {
  if (s == "openai/gsm8k") return Rule::Gsm8k;
  for (const char* m : kMathSources)
    if (s == m) return Rule::Math;
  for (const char* m : kDapoSources)
    if (s == m) return Rule::Dapo;
  if (s.rfind("aime", 0) == 0) return Rule::Dapo;
  if (s == "hiyouga/geometry3k") return Rule::Geo3k;
  for (const char* m : kSearchSources)
    if (s == m) return Rule::SearchR1;
  return Rule::None;
}

// ground_truth["target"]: one string or a list of them.
std::vector<std::string> search_targets(const std::string& ground_truth) {
  const auto j = nlohmann::json::parse(ground_truth, nullptr, false);
  GRPO_CHECK(j.is_object() && j.contains("target"), "[reward] verl searchR1 rule: the ground truth must be an ",
             "object with \"target\" (a string or a list of strings), got \"", ground_truth.substr(0, 80), "\"");
  const auto& t = j["target"];
  std::vector<std::string> out;
  if (t.is_string()) return {t.get<std::string>()};
  GRPO_CHECK(t.is_array(), "[reward] verl searchR1 rule: ground_truth.target must be a string or a list, got ",
             t.type_name());
  for (const auto& v : t) {
    GRPO_CHECK(v.is_string(), "[reward] verl searchR1 rule: ground_truth.target must hold strings, got ", v.type_name());
    out.push_back(v.get<std::string>());
  }
  return out;
}

}  // namespace

bool has_rule(const std::string& data_source) { return rule_of(data_source) != Rule::None; }

std::string known_data_sources() {
  std::string s = "openai/gsm8k";
  for (const char* m : kMathSources) s += cat(", ", m);
  for (const char* m : kDapoSources) s += cat(", ", m);
  s += ", aime*, hiyouga/geometry3k";
  for (const char* m : kSearchSources) s += cat(", ", m);
  return s;
}

RuleScore default_compute_score(const std::string& data_source, const std::string& response,
                                const std::string& ground_truth) {
  switch (rule_of(data_source)) {
    case Rule::Gsm8k: return {gsm8k_score(response, ground_truth), {}};
    case Rule::Math: return {math_score(response, ground_truth), {}};
    case Rule::Dapo: return dapo_score(response, ground_truth);
    case Rule::Geo3k: return {geo3k_score(response, ground_truth), {}};
    case Rule::SearchR1: return {search_r1_score(response, search_targets(ground_truth)), {}};
    case Rule::None: break;
  }
  fail("[reward] verl has no rule for data_source \"", data_source, "\"; known: ", known_data_sources(),
       " (or set reward.functions, or custom_reward_function.path for your own Python function)");
}

void check_verl_data_sources(const std::vector<std::string>& sources, const std::string& where) {
  for (const std::string& s : sources) {
    GRPO_CHECK(!s.empty(), "[reward] ", where, ": a row has no data_source, which verl's rules score by; set ",
               "reward.functions (e.g. [{name: math}]) or give every row a data_source");
    GRPO_CHECK(has_rule(s), "[reward] ", where, ": verl has no rule for data_source \"", s,
               "\"; known: ", known_data_sources(),
               ". Set reward.functions, or custom_reward_function.path for your own Python function");
  }
}

}  // namespace grpo::verl

namespace grpo {

namespace {

class VerlReward : public RewardFunction {
 public:
  std::string name() const override { return "verl"; }
  int64_t score(std::span<const RewardInput> batch, std::span<float> out) override {
    int64_t failed = 0;
    extras_.clear();
    for (size_t i = 0; i < batch.size(); ++i) {
      try {
        const verl::RuleScore r = verl::default_compute_score(batch[i].data_source, batch[i].response, batch[i].answer);
        out[i] = static_cast<float>(r.score);
        for (const auto& [key, value] : r.extra) add_extra(key, i, batch.size(), value);
      } catch (const Error& e) {
        out[i] = 0.0f;
        ++failed;
        last_failure_ = cat("request \"", batch[i].id, "\": ", e.what());
      }
    }
    return failed;
  }
  std::string last_failure() const override { return last_failure_; }

 private:
  std::string last_failure_;
};

}  // namespace

std::unique_ptr<RewardFunction> make_verl_reward() { return std::make_unique<VerlReward>(); }

}  // namespace grpo
