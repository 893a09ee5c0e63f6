// verl's GSM8K rule (gsm8k.py, strict method): see verl_rules.h.
#include "reward/verl/py_text.h"
#include "reward/verl/verl_rules.h"

namespace grpo::verl {

namespace {

bool gsm8k_number_char(char32_t c) { return (c >= '0' && c <= '9') || c == '.' || c == ','; }

// The last match of the regex "#### (\-?[0-9\.\,]+)" (findall, non-overlapping, left to right), or nullopt.
std::optional<PyStr> last_hash_answer(const PyStr& s) {
  static const PyStr kMarker = U"#### ";
  std::optional<PyStr> found;
  for (size_t i = 0; (i = s.find(kMarker, i)) != PyStr::npos;) {
    size_t j = i + kMarker.size();
    const size_t begin = j;
    if (j < s.size() && s[j] == '-' && j + 1 < s.size() && gsm8k_number_char(s[j + 1])) ++j;
    size_t k = j;
    while (k < s.size() && gsm8k_number_char(s[k])) ++k;
    if (k == j) {  // no number here: the search goes on at the next character
      ++i;
      continue;
    }
    found = s.substr(begin, k - begin);
    i = k;
  }
  return found;
}

}  // namespace

double gsm8k_score(const std::string& response, const std::string& ground_truth) {
  const auto answer = last_hash_answer(last(from_utf8(response), 300));
  if (!answer) return 0.0;
  const PyStr cleaned = replace_all(replace_all(*answer, U",", U""), U"$", U"");
  return cleaned == from_utf8(ground_truth) ? 1.0 : 0.0;
}

}  // namespace grpo::verl
