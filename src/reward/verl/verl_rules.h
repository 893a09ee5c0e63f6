// verl's built-in scoring rules (verl/utils/reward_score/ at verl-project/verl 1dda039), one file per rule
// family, written from their behaviour: each returns exactly the number verl's function returns for
// the same response and ground truth, quirks included. The dispatcher (verl_reward.h) picks the rule by
// data_source.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace grpo::verl {

// A rule's result: verl's `score`, and the other numeric keys of the dict some rules return (math_dapo's
// `acc`, as 0 or 1), which become metrics.
struct RuleScore {
  double score = 0;
  std::vector<std::pair<std::string, double>> extra;
};

// gsm8k.py: the last "#### <number>" within the last 300 characters, commas and $ removed, compared as a
// string with the ground truth: 1.0 when equal, 0.0 (format_score) when not, 0 when there is none.
double gsm8k_score(const std::string& response, const std::string& ground_truth);

// math_reward.py (lighteval/MATH, MATH-lighteval, MATH-500): the last \boxed{...} (or "\boxed " form or
// \fbox), compared with the ground truth after the Hendrycks MATH string normalisation (is_equiv).
double math_score(const std::string& response, const std::string& ground_truth);

// math_dapo.py (math_dapo, math, math_dapo_reasoning, aime*): the last "Answer: ..." line within the last
// 300 characters, normalised (Minerva), compared with the normalised ground truth; where there is no such
// line, the content of the last \boxed{} within the last 100 of those characters, compared with the ground
// truth as it is. Score +1 or -1, acc 1 or 0.
RuleScore dapo_score(const std::string& response, const std::string& ground_truth);

// geo3k.py (hiyouga/geometry3k): 0.9 x mathruler's grade_answer on the last \boxed{} content + 0.1 x the
// "<think>...</think>...\boxed{...}" format.
double geo3k_score(const std::string& response, const std::string& ground_truth);
// mathruler.grader.grade_answer and extract_boxed_content (mathruler.cpp).
bool grade_answer(const std::string& given, const std::string& ground_truth);
std::string extract_boxed_content(const std::string& text);

// search_r1_like_qa_em.py (searchR1_*): exact match of the last <answer>...</answer> with any of the
// targets after SQuAD normalisation: 1, or 0.25 when the response has more than 10 <answer> or
// </answer> tags, 0 otherwise. `targets` is ground_truth["target"] (one string or several).
double search_r1_score(const std::string& response, const std::vector<std::string>& targets);

}  // namespace grpo::verl
