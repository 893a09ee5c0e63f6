// verl's default_compute_score as a reward function: each row is scored by the rule of its data_source
// (verl_rules.h): openai/gsm8k; lighteval/MATH, DigitalLearningGmbH/MATH-lighteval, HuggingFaceH4/MATH-500;
// math_dapo, math, math_dapo_reasoning, aime*; hiyouga/geometry3k; searchR1_nq, _triviaqa, _popqa,
// _hotpotqa, _2wikimultihopqa, _musique, _bamboogle. A row whose data_source has no rule is a failure
// (scored 0); check_verl_data_sources refuses such data at start.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "reward/rewards.h"
#include "reward/verl/verl_rules.h"

namespace grpo::verl {

// The rule's result for one response; throws grpo::Error for a data_source with no rule or a ground truth
// the rule cannot read (searchR1 needs {"target": ...}).
RuleScore default_compute_score(const std::string& data_source, const std::string& response,
                                const std::string& ground_truth);
bool has_rule(const std::string& data_source);
std::string known_data_sources();  // for error messages: the list above

// Throws grpo::Error naming the first data_source (of `sources`, with `where` saying whose) that has no
// rule, with the known ones.
void check_verl_data_sources(const std::vector<std::string>& sources, const std::string& where);

}  // namespace grpo::verl

namespace grpo {
std::unique_ptr<RewardFunction> make_verl_reward();  // name "verl"
}
