// Answer extraction and numeric equivalence (see math_answer.h).
#include "reward/math_answer.h"

#include <cctype>
#include <charconv>
#include <cmath>

namespace grpo {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    if (std::string_view(s).substr(i, from.size()) == from) {
      out += to;
      i += from.size();
    } else {
      out += s[i++];
    }
  }
  s = std::move(out);
}

// Length of a number token starting at s[i] (a digit), or 0: digits with optional ",ddd" groups,
// optional ".digits".
size_t number_length(std::string_view s, size_t i) {
  size_t j = i;
  while (j < s.size() && is_digit(s[j])) ++j;
  // thousands groups only after 1-3 leading digits, each exactly 3 digits
  if (j - i <= 3) {
    while (j + 3 < s.size() && s[j] == ',' && is_digit(s[j + 1]) && is_digit(s[j + 2]) && is_digit(s[j + 3]) &&
           (j + 4 >= s.size() || !is_digit(s[j + 4])))
      j += 4;
  }
  if (j + 1 < s.size() && s[j] == '.' && is_digit(s[j + 1])) {
    ++j;
    while (j < s.size() && is_digit(s[j])) ++j;
  }
  return j - i;
}

std::optional<double> parse_plain(std::string_view s) {  // [+-]digits[.digits], commas already removed
  if (s.empty()) return std::nullopt;
  const bool neg = s[0] == '-';
  if (s[0] == '-' || s[0] == '+') s.remove_prefix(1);
  if (s.empty() || !is_digit(s[0])) return std::nullopt;
  double v = 0;
  auto res = std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::fixed);
  if (res.ec != std::errc() || res.ptr != s.data() + s.size()) return std::nullopt;
  return neg ? -v : v;
}

// \frac{a}{b} (and \dfrac, \tfrac) -> (a)/(b) when a and b are plain numbers.
std::string expand_fracs(std::string s) {
  for (const char* cmd : {"\\dfrac", "\\tfrac", "\\frac"}) replace_all(s, cmd, "\\frac");
  for (size_t p = s.find("\\frac{"); p != std::string::npos; p = s.find("\\frac{")) {
    const size_t a_end = s.find('}', p + 6);
    if (a_end == std::string::npos || a_end + 1 >= s.size() || s[a_end + 1] != '{') break;
    const size_t b_end = s.find('}', a_end + 2);
    if (b_end == std::string::npos) break;
    s = s.substr(0, p) + s.substr(p + 6, a_end - p - 6) + "/" + s.substr(a_end + 2, b_end - a_end - 2) +
        s.substr(b_end + 1);
  }
  return s;
}

}  // namespace

std::optional<std::string> last_boxed(std::string_view text) {
  size_t best = std::string_view::npos, best_len = 0;
  for (std::string_view cmd : {std::string_view("\\boxed{"), std::string_view("\\fbox{")}) {
    const size_t p = text.rfind(cmd);
    if (p != std::string_view::npos && (best == std::string_view::npos || p > best)) best = p, best_len = cmd.size();
  }
  if (best == std::string_view::npos) return std::nullopt;
  int depth = 1;
  for (size_t i = best + best_len; i < text.size(); ++i) {
    if (text[i] == '{') ++depth;
    if (text[i] == '}' && --depth == 0) return std::string(text.substr(best + best_len, i - best - best_len));
  }
  return std::nullopt;
}

std::optional<std::string> last_number(std::string_view text) {
  std::optional<std::string> found;
  for (size_t i = 0; i < text.size();) {
    if (!is_digit(text[i]) || (i > 0 && (is_digit(text[i - 1]) || text[i - 1] == '.'))) {
      ++i;
      continue;
    }
    size_t start = i, len = number_length(text, i);
    size_t end = i + len;
    if (end + 1 < text.size() && text[end] == '/' && is_digit(text[end + 1])) end += 1 + number_length(text, end + 1);
    // A '-' is a sign when it does not follow a digit, a letter or a closing bracket ("5-3" is a
    // subtraction, "= -3" a negative number).
    if (start > 0 && text[start - 1] == '-') {
      const char before = start > 1 ? text[start - 2] : ' ';
      if (!std::isalnum(static_cast<unsigned char>(before)) && before != ')' && before != '}' && before != ']')
        --start;
    }
    found = std::string(text.substr(start, end - start));
    i = end;
  }
  return found;
}

std::optional<std::string> extract_answer(std::string_view response) {
  if (auto boxed = last_boxed(response)) return boxed;
  return last_number(response);
}

std::string normalize_answer(std::string_view text) {
  std::string s;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c)) && c != '$') s += c;
  for (const char* spacing : {"\\!", "\\,", "\\;", "\\left", "\\right"}) replace_all(s, spacing, "");
  while (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

std::optional<double> parse_number(std::string_view text) {
  std::string s = normalize_answer(text);
  replace_all(s, "{,}", ",");
  s = expand_fracs(s);
  if (const size_t eq = s.rfind('='); eq != std::string::npos) s = s.substr(eq + 1);  // "x=5"
  // Thousands commas: only in groups of three digits.
  std::string plain;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == ',') {
      const bool group = i > 0 && is_digit(s[i - 1]) && i + 3 < s.size() && is_digit(s[i + 1]) &&
                         is_digit(s[i + 2]) && is_digit(s[i + 3]) && (i + 4 == s.size() || !is_digit(s[i + 4]));
      if (!group) return std::nullopt;
      continue;
    }
    plain += s[i];
  }
  // Strip one pair of surrounding parentheses around a fraction: "(3/4)".
  if (plain.size() > 2 && plain.front() == '(' && plain.back() == ')') plain = plain.substr(1, plain.size() - 2);
  const size_t slash = plain.find('/');
  if (slash == std::string::npos) return parse_plain(plain);
  auto num = parse_plain(plain.substr(0, slash));
  auto den = parse_plain(plain.substr(slash + 1));
  if (!num || !den || *den == 0 || plain[slash + 1] == '-' || plain[slash + 1] == '+') return std::nullopt;
  return *num / *den;
}

bool answers_match(std::string_view predicted, std::string_view truth) {
  const auto t = parse_number(truth);
  if (!t) return normalize_answer(predicted) == normalize_answer(truth) && !normalize_answer(truth).empty();
  const auto p = parse_number(predicted);
  if (!p) return false;
  return std::abs(*p - *t) <= std::max(1e-12, 1e-9 * std::max(std::abs(*p), std::abs(*t)));
}

}  // namespace grpo
