// verl's DAPO rule (math_dapo.py at verl 0.9: Minerva answer extraction, then the \boxed{} fallback of
// verify() without strict_box_verify): see verl_rules.h.
// The regular expressions of normalize_final_answer are written out as the scans they amount to, with
// Python's semantics ('.' does not cross a newline; re.sub replaces every non-overlapping match).
#include <array>

#include "reward/verl/py_text.h"
#include "reward/verl/verl_rules.h"

namespace grpo::verl {

namespace {

const std::array<std::pair<const char32_t*, const char32_t*>, 10> kSubstitutions = {{
    {U"an ", U""}, {U"a ", U""}, {U".$", U"$"}, {U"\\$", U""}, {U"\\ ", U""}, {U" ", U""}, {U"mbox", U"text"},
    {U",\\text{and}", U","}, {U"\\text{and}", U","}, {U"\\text{m}", U"\\text{}"},
}};

const std::array<const char32_t*, 41> kRemovedExpressions = {
    U"square", U"ways", U"integers", U"dollars", U"mph", U"inches", U"hours", U"km", U"units", U"\\ldots",
    U"sue", U"points", U"feet", U"minutes", U"digits", U"cents", U"degrees", U"cm", U"gm", U"pounds",
    U"meters", U"meals", U"edges", U"students", U"childrentickets", U"multiples", U"\\text{s}", U"\\text{.}",
    U"\\text{\ns}", U"\\text{}^2", U"\\text{}^3", U"\\text{\n}", U"\\text{}", U"\\mathrm{th}", U"^\\circ",
    U"^{\\circ}", U"\\;", U",\\!", U"{,}", U"\"", U"\\dots",
};

// re.sub(r"(.*?)(\$)(.*?)(\$)(.*)", "$\3$", s): on each line that holds two "$", the line becomes the
// text between its first two "$", wrapped in "$".
PyStr keep_first_dollar_pair(const PyStr& s) {
  PyStr out;
  size_t line_start = 0;
  while (line_start <= s.size()) {
    size_t line_end = s.find(U'\n', line_start);
    if (line_end == PyStr::npos) line_end = s.size();
    const PyStr line = s.substr(line_start, line_end - line_start);
    const size_t a = line.find(U'$');
    const size_t b = a == PyStr::npos ? PyStr::npos : line.find(U'$', a + 1);
    if (b != PyStr::npos)
      out += U"$" + line.substr(a + 1, b - a - 1) + U"$";
    else
      out += line;
    if (line_end == s.size()) break;
    out += U'\n';
    line_start = line_end + 1;
  }
  return out;
}

// re.sub(r"(PREFIX\{)(.*?)(\})", "\2", s), or with a greedy (.*) when `greedy`: PREFIX{ ... } becomes
// its content, the closing brace being the first (or the last) "}" on the same line.
PyStr unwrap(const PyStr& s, const PyStr& prefix, bool greedy) {
  const PyStr open = prefix + U"{";
  PyStr out;
  size_t pos = 0;
  for (size_t i = pos; (i = s.find(open, i)) != PyStr::npos;) {
    const size_t content = i + open.size();
    size_t line_end = s.find(U'\n', content);
    if (line_end == PyStr::npos) line_end = s.size();
    size_t close = PyStr::npos;
    if (greedy) {
      const size_t c = s.rfind(U'}', line_end == 0 ? 0 : line_end - 1);
      if (c != PyStr::npos && c >= content && c < line_end) close = c;
    } else {
      const size_t c = s.find(U'}', content);
      if (c != PyStr::npos && c < line_end) close = c;
    }
    if (close == PyStr::npos) {
      ++i;
      continue;
    }
    out.append(s, pos, i - pos);
    out.append(s, content, close - content);
    pos = i = close + 1;
  }
  out.append(s, pos, PyStr::npos);
  return out;
}

// re.sub(r"(frac)([^{])(.)", "frac{\2}{\3}", s) and re.sub(r"(sqrt)([^{])", "sqrt{\2}", s).
PyStr brace_shorthand(const PyStr& s, const PyStr& name, bool two_args) {
  PyStr out;
  size_t pos = 0;
  for (size_t i = 0; (i = s.find(name, i)) != PyStr::npos;) {
    const size_t a = i + name.size();
    const bool ok = a < s.size() && s[a] != '{' && (!two_args || (a + 1 < s.size() && s[a + 1] != '\n'));
    if (!ok) {
      ++i;
      continue;
    }
    out.append(s, pos, i - pos);
    out += name + U"{" + s[a] + U"}";
    if (two_args) out += PyStr(U"{") + s[a + 1] + U"}";
    pos = i = a + (two_args ? 2 : 1);
  }
  out.append(s, pos, PyStr::npos);
  return out;
}

PyStr normalize_final_answer(const PyStr& answer) {
  PyStr s = split(answer, U"=").back();
  for (const auto& [before, after] : kSubstitutions) s = replace_all(s, before, after);
  for (const char32_t* expr : kRemovedExpressions) s = replace_all(s, expr, U"");
  s = keep_first_dollar_pair(s);
  s = unwrap(s, U"\\text", false);
  s = unwrap(s, U"\\textbf", false);
  s = unwrap(s, U"\\overline", false);
  s = unwrap(s, U"\\boxed", true);
  s = brace_shorthand(s, U"frac", true);
  s = brace_shorthand(s, U"sqrt", false);
  s = replace_all(s, U"$", U"");
  const PyStr no_commas = replace_all(s, U",", U"");
  if (all_digits(no_commas)) s = no_commas;
  return strip(s);
}

bool matches_answer_word(const PyStr& s, size_t i) {
  static const PyStr kWord = U"answer";
  if (i + kWord.size() > s.size()) return false;
  for (size_t k = 0; k < kWord.size(); ++k) {
    const char32_t c = s[i + k], w = kWord[k];
    // IGNORECASE under Unicode: ASCII letters either case, and "ſ" (long s) matches s.
    if (c != w && c != w - 32 && !(w == 's' && c == 0x17F)) return false;
  }
  return true;
}

// The group of the last match of (?i)Answer\s*:\s*([^\n]+) (findall), or nullopt.
std::optional<PyStr> last_minerva_answer(const PyStr& s) {
  std::optional<PyStr> found;
  for (size_t i = 0; i < s.size();) {
    if (!matches_answer_word(s, i)) {
      ++i;
      continue;
    }
    size_t j = i + 6;
    while (j < s.size() && py_isspace(s[j])) ++j;
    if (j >= s.size() || s[j] != ':') {
      ++i;
      continue;
    }
    const size_t ws_begin = ++j;
    while (j < s.size() && py_isspace(s[j])) ++j;
    // \s* backtracks until [^\n]+ can take at least one character.
    size_t start = j;
    while (start > ws_begin && (start >= s.size() || s[start] == '\n')) --start;
    if (start >= s.size() || s[start] == '\n') {
      ++i;
      continue;
    }
    size_t end = s.find(U'\n', start);
    if (end == PyStr::npos) end = s.size();
    found = s.substr(start, end - start);
    i = end;
  }
  return found;
}

// last_boxed_only_string + remove_boxed: the text inside the last "\boxed{" up to the brace that balances it
// (a "{" or "}" before it does not count), or nullopt when there is no "\boxed{" or it is never closed.
std::optional<PyStr> last_box_content(const PyStr& s) {
  static const PyStr kBox = U"\\boxed{";
  const size_t idx = s.rfind(kBox);
  if (idx == PyStr::npos) return std::nullopt;
  int open = 0;
  for (size_t i = idx; i < s.size(); ++i) {
    if (s[i] == '{') ++open;
    if (s[i] == '}' && --open == 0) return s.substr(idx + kBox.size(), i - idx - kBox.size());
  }
  return std::nullopt;
}

}  // namespace

RuleScore dapo_score(const std::string& response, const std::string& ground_truth) {
  const PyStr s = last(from_utf8(response), 300);
  const PyStr truth = from_utf8(ground_truth);
  static const PyStr kInvalid = U"[INVALID]";
  const auto extracted = last_minerva_answer(s);
  const PyStr pred = normalize_final_answer(extracted ? *extracted : kInvalid);
  bool correct = pred == normalize_final_answer(truth);
  // verify(): whatever normalises to "[INVALID]" (no "Answer:" line, or one that reads so) falls back to the
  // box of the last 100 characters, compared with the ground truth as it is, not normalised.
  if (pred == kInvalid) {
    const auto boxed = last_box_content(last(s, 100));
    if (boxed) correct = *boxed == truth;
  }
  return RuleScore{correct ? 1.0 : -1.0, {{"acc", correct ? 1.0 : 0.0}}};
}

}  // namespace grpo::verl
