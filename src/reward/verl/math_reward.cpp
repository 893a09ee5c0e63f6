// verl's MATH rule (math_reward.py): see verl_rules.h. Where verl's code raises inside compute_score
// (an unbalanced or malformed box), it catches the exception and scores 0.0; where strip_string raises,
// is_equiv compares the raw strings.
#include "reward/verl/hendrycks_math.h"
#include "reward/verl/verl_rules.h"

namespace grpo::verl {

namespace {

// last_boxed_only_string: "\boxed " + the text after the last "\boxed " up to a "$" when the response
// holds "\boxed " anywhere; else from the last "\boxed" (or "\fbox") to the brace that balances the
// first "{" after it. nullopt when there is none.
std::optional<PyStr> math_last_boxed(const PyStr& s) {
  size_t idx = s.rfind(U"\\boxed");
  if (contains(s, U"\\boxed ")) {
    const std::vector<PyStr> parts = split(s, U"\\boxed ");
    return U"\\boxed " + split(parts.back(), U"$")[0];
  }
  if (idx == PyStr::npos) {
    idx = s.rfind(U"\\fbox");
    if (idx == PyStr::npos) return std::nullopt;
  }
  int open = 0;
  for (size_t i = idx; i < s.size(); ++i) {
    if (s[i] == '{') ++open;
    if (s[i] == '}' && --open == 0) return s.substr(idx, i + 1 - idx);
  }
  return std::nullopt;
}

// remove_boxed; nullopt where its asserts fail.
std::optional<PyStr> math_remove_boxed(const PyStr& s) {
  if (contains(s, U"\\boxed ")) {
    if (!starts_with(s, U"\\boxed ")) return std::nullopt;
    return s.substr(7);
  }
  static const PyStr kLeft = U"\\boxed{";
  if (!starts_with(s, kLeft) || s.back() != '}') return std::nullopt;
  return s.substr(kLeft.size(), s.size() - 1 - kLeft.size());
}

bool is_equiv(const PyStr& a, const PyStr& b) {
  const auto sa = hendrycks_strip_string(a);
  const auto sb = sa ? hendrycks_strip_string(b) : std::nullopt;
  if (!sa || !sb) return a == b;
  return *sa == *sb;
}

}  // namespace

double math_score(const std::string& response, const std::string& ground_truth) {
  const PyStr s = from_utf8(response);
  const auto boxed = math_last_boxed(s);
  if (!boxed) return 0.0;
  const auto answer = math_remove_boxed(*boxed);
  if (!answer) return 0.0;
  return is_equiv(*answer, from_utf8(ground_truth)) ? 1.0 : 0.0;
}

}  // namespace grpo::verl
