// Hendrycks MATH normalisation (see hendrycks_math.h), step for step as the Python it mirrors.
#include "reward/verl/hendrycks_math.h"

namespace grpo::verl {

namespace {

std::optional<PyStr> fix_fracs(const PyStr& string) {
  const std::vector<PyStr> substrs = split(string, U"\\frac");
  PyStr out = substrs[0];
  for (size_t i = 1; i < substrs.size(); ++i) {
    const PyStr& sub = substrs[i];
    out += U"\\frac";
    if (sub.empty()) return std::nullopt;  // substr[0] raises IndexError
    if (sub[0] == '{') {
      out += sub;
      continue;
    }
    if (sub.size() < 2) return string;  // the assert is caught: the string comes back unchanged
    const char32_t a = sub[0], b = sub[1];
    if (b != '{') {
      out += PyStr(U"{") + a + U"}{" + b + U"}" + sub.substr(2);
    } else {
      out += PyStr(U"{") + a + U"}" + b + sub.substr(2);
    }
  }
  return out;
}

// Text that str(int(text)) gives back unchanged: -?(0|[1-9][0-9]*) in ASCII digits, not "-0".
bool canonical_int(const PyStr& s) {
  const size_t b = !s.empty() && s[0] == '-' ? 1 : 0;
  if (b == s.size()) return false;
  for (size_t i = b; i < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  if (s[b] == '0') return s.size() == b + 1 && b == 0;
  return true;
}

// "a/b" -> \frac{a}{b} when both parts are integers that int() reads and str() writes back identically
// (the assert string == "{}/{}".format(a, b)).
PyStr fix_a_slash_b(const PyStr& string) {
  const std::vector<PyStr> parts = split(string, U"/");
  if (parts.size() != 2 || !canonical_int(parts[0]) || !canonical_int(parts[1])) return string;
  return U"\\frac{" + parts[0] + U"}{" + parts[1] + U"}";
}

std::optional<PyStr> remove_right_units(const PyStr& string) {
  if (!contains(string, U"\\text{ ")) return string;
  const std::vector<PyStr> splits = split(string, U"\\text{ ");
  if (splits.size() != 2) return std::nullopt;  // assert len(splits) == 2
  return splits[0];
}

std::optional<PyStr> fix_sqrt(const PyStr& string) {
  if (!contains(string, U"\\sqrt")) return string;
  const std::vector<PyStr> splits = split(string, U"\\sqrt");
  PyStr out = splits[0];
  for (size_t i = 1; i < splits.size(); ++i) {
    const PyStr& s = splits[i];
    if (s.empty()) return std::nullopt;  // split[0] raises IndexError
    if (s[0] != '{')
      out += PyStr(U"\\sqrt{") + s[0] + U"}" + s.substr(1);
    else
      out += U"\\sqrt" + s;
  }
  return out;
}

}  // namespace

std::optional<PyStr> hendrycks_strip_string(const PyStr& input) {
  PyStr s = replace_all(input, U"\n", U"");
  s = replace_all(s, U"\\!", U"");
  s = replace_all(s, U"\\\\", U"\\");
  s = replace_all(s, U"tfrac", U"frac");
  s = replace_all(s, U"dfrac", U"frac");
  s = replace_all(s, U"\\left", U"");
  s = replace_all(s, U"\\right", U"");
  s = replace_all(s, U"^{\\circ}", U"");
  s = replace_all(s, U"^\\circ", U"");
  s = replace_all(s, U"\\$", U"");
  auto units = remove_right_units(s);
  if (!units) return std::nullopt;
  s = replace_all(*units, U"\\\\%", U"");
  s = replace_all(s, U"\\%", U"");
  s = replace_all(s, U" .", U" 0.");
  s = replace_all(s, U"{.", U"{0.");
  if (s.empty()) return s;
  if (s[0] == '.') s = U"0" + s;
  const std::vector<PyStr> eq = split(s, U"=");
  if (eq.size() == 2 && eq[0].size() <= 2) s = eq[1];
  auto sqrt_fixed = fix_sqrt(s);
  if (!sqrt_fixed) return std::nullopt;
  s = replace_all(*sqrt_fixed, U" ", U"");
  auto fracs = fix_fracs(s);
  if (!fracs) return std::nullopt;
  s = *fracs;
  if (s == U"0.5") s = U"\\frac{1}{2}";
  return fix_a_slash_b(s);
}

}  // namespace grpo::verl
