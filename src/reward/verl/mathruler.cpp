// mathruler's grader (hiyouga/MathRuler mathruler/grader.py and math_normalize.py), which verl's geo3k
// rule calls: grade_answer and extract_boxed_content (see verl_rules.h).
//
// Two parts of it rest on Python libraries and are written here as the subset that geometry answers
// need: pylatexenc's latex_to_text (\frac{a}{b} -> a/b, \sqrt{x} -> sqrt(x), \pi, \cdot, \times, \infty,
// \cup, text macros and groups unwrapped, other macros dropped), and sympy's "simplify(a - b) == 0",
// decided here by evaluating a - b (numbers, + - * / ^, parentheses, implicit products, sqrt, pi, up to
// two one-letter variables) at fixed sample points: equal when every value is 0 within 1e-9 relative to
// the terms. Residual differences with sympy: expressions it simplifies symbolically that this evaluator
// cannot parse (functions other than sqrt, factorials, complex numbers) grade as unequal here, and
// floating-point sums that differ from the other side by rounding only (0.1 + 0.2 against 0.3) grade
// as equal here where sympy's exact Float arithmetic keeps the rounding difference.
#include <cmath>
#include <map>
#include <set>

#include "reward/verl/hendrycks_math.h"
#include "reward/verl/verl_rules.h"

namespace grpo::verl {

namespace {

bool ascii_digit(char32_t c) { return c >= '0' && c <= '9'; }

// `^\\text\{(?P<text>.+?)\}$`: the content when s is \text{...} as a whole ('$' also before a final
// newline; '.' crosses no newline).
std::optional<PyStr> enclosing_text(const PyStr& s) {
  static const PyStr kOpen = U"\\text{";
  if (!starts_with(s, kOpen)) return std::nullopt;
  for (size_t close = kOpen.size() + 1; close < s.size(); ++close) {
    if (s[close - 1] == '\n') return std::nullopt;
    const bool at_end = close + 1 == s.size() || (close + 2 == s.size() && s.back() == '\n');
    if (s[close] == '}' && at_end) return s.substr(kOpen.size(), close - kOpen.size());
  }
  return std::nullopt;
}

// math_normalize.normalize_answer (prm800k): strip, unwrap \text{...}, strip_string (the unwrapped text
// when strip_string raises).
PyStr mathd_normalize(const PyStr& answer) {
  PyStr s = strip(answer);
  if (const auto t = enclosing_text(s)) s = strip(*t);
  const auto stripped = hendrycks_strip_string(s);
  return stripped ? *stripped : s;
}

// A Python float written as str(int(x)) for an integral x (x finite).
PyStr int_text(double x) {
  if (x == 0) return U"0";
  char buf[400];
  std::snprintf(buf, sizeof buf, "%.0f", x);
  return from_utf8(buf);
}

bool is_int_value(double x) { return std::isfinite(x) && std::fabs(x - std::nearbyint(x)) <= 1e-7; }

// re.sub(r"(\d)(,)(\d\d\d)($|\D)", r"\1\3\4") until nothing changes.
PyStr strip_properly_formatted_commas(PyStr s) {
  for (;;) {
    PyStr out;
    size_t i = 0;
    while (i < s.size()) {
      const bool hit = i + 4 < s.size() && py_isdecimal(s[i]) && s[i + 1] == ',' && py_isdecimal(s[i + 2]) &&
                       py_isdecimal(s[i + 3]) && py_isdecimal(s[i + 4]) &&
                       (i + 5 == s.size() || !py_isdecimal(s[i + 5]));
      if (!hit) {
        out += s[i++];
        continue;
      }
      out += s[i];
      out.append(s, i + 2, 3);
      if (i + 5 < s.size()) out += s[i + 5];
      i += 6;
    }
    if (out == s) return out;
    s = out;
  }
}

std::optional<double> str_int_value(const PyStr& x) {  // _str_is_int's float, when it is an integer
  const auto v = py_float(strip_properly_formatted_commas(x));
  if (!v || !is_int_value(*v)) return std::nullopt;
  return v;
}

// A subset of pylatexenc's LatexNodes2Text().latex_to_text (see the file comment).
PyStr latex_to_text(const PyStr& s, size_t& i, bool stop_at_brace);

PyStr latex_arg(const PyStr& s, size_t& i) {  // one argument: a {group} or a single character
  while (i < s.size() && py_isspace(s[i])) ++i;
  if (i >= s.size()) return U"";
  if (s[i] == '{') {
    ++i;
    PyStr inner = latex_to_text(s, i, true);
    if (i < s.size() && s[i] == '}') ++i;
    return inner;
  }
  if (s[i] == '\\') return latex_to_text(s, i, true);
  return PyStr(1, s[i++]);
}

PyStr latex_to_text(const PyStr& s, size_t& i, bool stop_at_brace) {
  PyStr out;
  while (i < s.size()) {
    const char32_t c = s[i];
    if (c == '}' && stop_at_brace) return out;
    if (c == '{') {
      ++i;
      out += latex_to_text(s, i, true);
      if (i < s.size() && s[i] == '}') ++i;
      continue;
    }
    if (c != '\\') {
      out += c;
      ++i;
      continue;
    }
    ++i;
    if (i < s.size() && !py_isalpha(s[i])) {  // \{ \} \% \$ \, \; \! and the like
      const char32_t sym = s[i++];
      if (sym == '{' || sym == '}' || sym == '%' || sym == '$' || sym == '&' || sym == '#' || sym == '_') out += sym;
      else if (sym == ',' || sym == ';' || sym == ' ' || sym == ':') out += U' ';
      continue;
    }
    PyStr name;
    while (i < s.size() && py_isalpha(s[i])) name += s[i++];
    if (name == U"frac" || name == U"dfrac" || name == U"tfrac") {
      const PyStr num = latex_arg(s, i), den = latex_arg(s, i);
      out += num + U"/" + den;
    } else if (name == U"sqrt") {
      while (i < s.size() && py_isspace(s[i])) ++i;
      if (i < s.size() && s[i] == '[') {  // the optional root index is dropped
        const size_t close = s.find(U']', i);
        i = close == PyStr::npos ? s.size() : close + 1;
      }
      out += U"\u221A(" + latex_arg(s, i) + U")";
    } else if (name == U"pi") {
      out += U"\u03C0";
    } else if (name == U"infty") {
      out += U"\u221E";
    } else if (name == U"cup") {
      out += U"\u222A";
    } else if (name == U"cdot") {
      out += U"\u00B7";
    } else if (name == U"times") {
      out += U"\u00D7";
    } else if (name == U"left" || name == U"right") {
      if (i < s.size() && s[i] == '.') ++i;
    } else if (name == U"text" || name == U"mathrm" || name == U"textbf" || name == U"mathbf" || name == U"mbox") {
      out += latex_arg(s, i);
    }  // any other macro is dropped
    // A macro name ends at the first non-letter; pylatexenc eats the spaces after it.
    while (i < s.size() && s[i] == ' ') ++i;
  }
  return out;
}

PyStr parse_latex(PyStr expr) {
  expr = replace_all(expr, U"\\tfrac", U"\\frac");
  expr = replace_all(expr, U"\\dfrac", U"\\frac");
  expr = replace_all(expr, U"\\frac", U" \\frac");
  size_t i = 0;
  expr = latex_to_text(expr, i, false);
  expr = replace_all(expr, U"\u221A", U"sqrt");
  expr = replace_all(expr, U"\u03C0", U"pi");
  expr = replace_all(expr, U"\u221E", U"inf");
  expr = replace_all(expr, U"\u222A", U"U");
  expr = replace_all(expr, U"\u00B7", U"*");
  expr = replace_all(expr, U"\u00D7", U"*");
  return strip(expr);
}

// re.sub(rf"{unit}(es)?(s)? *(\^[0-9]+)?", "", s)
PyStr remove_unit(const PyStr& s, const PyStr& unit) {
  PyStr out;
  size_t pos = 0;
  for (size_t i = 0; (i = s.find(unit, i)) != PyStr::npos;) {
    size_t j = i + unit.size();
    if (s.compare(j, 2, U"es") == 0) j += 2;
    if (j < s.size() && s[j] == 's') ++j;
    while (j < s.size() && s[j] == ' ') ++j;
    if (j + 1 < s.size() && s[j] == '^' && ascii_digit(s[j + 1])) {
      ++j;
      while (j < s.size() && ascii_digit(s[j])) ++j;
    }
    out.append(s, pos, i - pos);
    pos = i = j;
  }
  out.append(s, pos, PyStr::npos);
  return out;
}

// re.sub(pattern, "", s) for `\^ *\\circ` and `,\\! *`.
PyStr remove_pattern(const PyStr& s, const PyStr& head, const PyStr& tail) {
  PyStr out;
  size_t pos = 0;
  for (size_t i = 0; (i = s.find(head, i)) != PyStr::npos;) {
    size_t j = i + head.size();
    while (j < s.size() && s[j] == ' ') ++j;
    if (s.compare(j, tail.size(), tail) != 0) {
      ++i;
      continue;
    }
    out.append(s, pos, i - pos);
    pos = i = j + tail.size();
  }
  out.append(s, pos, PyStr::npos);
  return out;
}

PyStr normalize(PyStr expr) {
  if (const auto t = enclosing_text(expr)) expr = *t;
  expr = replace_all(expr, U"\\%", U"%");
  expr = replace_all(expr, U"\\$", U"$");
  expr = replace_all(expr, U"$", U"");
  expr = replace_all(expr, U"%", U"");
  expr = replace_all(expr, U" or ", U" , ");
  expr = replace_all(expr, U" and ", U" , ");
  expr = replace_all(expr, U"million", U"*10^6");
  expr = replace_all(expr, U"billion", U"*10^9");
  expr = replace_all(expr, U"trillion", U"*10^12");
  for (const char32_t* unit : {U"degree", U"cm", U"centimeter", U"meter", U"mile", U"second", U"minute", U"hour",
                               U"day", U"week", U"month", U"year", U"foot", U"feet", U"inch", U"yard"})
    expr = remove_unit(expr, unit);
  expr = remove_pattern(expr, U"^", U"\\circ");
  if (!expr.empty() && expr.front() == '{' && expr.back() == '}') expr = expr.substr(1, expr.size() - 2);
  expr = remove_pattern(expr, U",\\!", U"");
  if (const auto v = py_float(expr); v && is_int_value(*v)) expr = int_text(std::nearbyint(*v));
  if (contains(expr, U"\\")) expr = parse_latex(expr);
  {  // re.sub("- *", "-"): the spaces after a minus go
    PyStr out;
    for (size_t i = 0; i < expr.size(); ++i) {
      out += expr[i];
      if (expr[i] == '-')
        while (i + 1 < expr.size() && expr[i + 1] == ' ') ++i;
    }
    expr = out;
  }
  {  // ([0-9]) +([0-9]) -> \1+\2, non-overlapping
    PyStr out;
    size_t i = 0;
    while (i < expr.size()) {
      size_t j = i + 1;
      while (j < expr.size() && expr[j] == ' ') ++j;
      if (ascii_digit(expr[i]) && j > i + 1 && j < expr.size() && ascii_digit(expr[j])) {
        out += expr[i];
        out += U'+';
        out += expr[j];
        i = j + 1;
      } else {
        out += expr[i++];
      }
    }
    expr = out;
  }
  expr = replace_all(expr, U" ", U"");
  expr = replace_all(expr, U"{", U"");
  expr = replace_all(expr, U"}", U"");
  expr = lower(expr);
  if (str_int_value(expr)) {
    const auto v = py_float(replace_all(expr, U",", U""));
    if (v && std::isfinite(*v)) expr = int_text(std::trunc(*v));
  }
  return expr;
}

// Evaluates the difference expression sympy would parse (see the file comment); nullopt when it cannot.
class Evaluator {
 public:
  Evaluator(const PyStr& text, const std::map<char32_t, double>& variables) : s_(text), variables_(variables) {}
  std::optional<double> run() {
    const auto v = sum();
    if (!v || pos_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  std::optional<double> sum() {
    auto v = product();
    while (v && pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) {
      const char32_t op = s_[pos_++];
      const auto r = product();
      if (!r) return std::nullopt;
      v = op == '+' ? *v + *r : *v - *r;
    }
    return v;
  }
  bool starts_factor() const {
    if (pos_ >= s_.size()) return false;
    const char32_t c = s_[pos_];
    return c == '(' || c == '.' || ascii_digit(c) || py_isalpha(c);
  }
  std::optional<double> product() {
    auto v = unary();
    while (v) {
      if (pos_ < s_.size() && (s_[pos_] == '*' || s_[pos_] == '/') && !(s_[pos_] == '*' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '*')) {
        const char32_t op = s_[pos_++];
        const auto r = unary();
        if (!r) return std::nullopt;
        if (op == '/' && *r == 0) return std::nullopt;
        v = op == '*' ? *v * *r : *v / *r;
      } else if (starts_factor()) {  // implicit multiplication
        const auto r = unary();
        if (!r) return std::nullopt;
        v = *v * *r;
      } else {
        break;
      }
    }
    return v;
  }
  std::optional<double> unary() {
    if (pos_ < s_.size() && (s_[pos_] == '-' || s_[pos_] == '+')) {
      const bool neg = s_[pos_++] == '-';
      const auto v = unary();
      if (!v) return std::nullopt;
      return neg ? -*v : *v;
    }
    return power();
  }
  std::optional<double> power() {
    const auto base = atom();
    if (!base) return std::nullopt;
    if (s_.compare(pos_, 2, U"**") == 0 || (pos_ < s_.size() && s_[pos_] == '^')) {
      pos_ += s_[pos_] == '^' ? 1 : 2;
      const auto e = unary();
      if (!e) return std::nullopt;
      const double v = std::pow(*base, *e);
      if (!std::isfinite(v)) return std::nullopt;
      return v;
    }
    return base;
  }
  std::optional<double> atom() {
    if (pos_ >= s_.size()) return std::nullopt;
    const char32_t c = s_[pos_];
    if (c == '(') {
      ++pos_;
      const auto v = sum();
      if (!v || pos_ >= s_.size() || s_[pos_] != ')') return std::nullopt;
      ++pos_;
      return v;
    }
    if (ascii_digit(c) || c == '.') {
      const size_t b = pos_;
      while (pos_ < s_.size() && (ascii_digit(s_[pos_]) || s_[pos_] == '.')) ++pos_;
      const auto v = py_float(s_.substr(b, pos_ - b));
      if (!v) return std::nullopt;
      return v;
    }
    if (s_.compare(pos_, 4, U"sqrt") == 0) {
      pos_ += 4;
      const auto v = power();  // sqrt(x), and sqrt x by implicit application
      if (!v || *v < 0) return std::nullopt;
      return std::sqrt(*v);
    }
    if (s_.compare(pos_, 2, U"pi") == 0) {
      pos_ += 2;
      return M_PI;
    }
    if (py_isalpha(c)) {
      ++pos_;
      if (c == 'E') return M_E;
      if (c == 'I') return std::nullopt;  // the imaginary unit: beyond this evaluator
      const auto it = variables_.find(c);  // a variable: its value at this sample point
      if (it == variables_.end()) return std::nullopt;
      return it->second;
    }
    return std::nullopt;
  }

  const PyStr& s_;
  const std::map<char32_t, double>& variables_;
  size_t pos_ = 0;
};

bool should_allow_eval(const PyStr& expr) {
  std::set<char32_t> letters;
  for (char32_t c : replace_all(replace_all(expr, U"sqrt", U""), U"frac", U""))
    if (py_isalpha(c)) letters.insert(c);
  if (letters.size() > 2) return false;
  if (contains(expr, U"^{") || contains(expr, U"^(")) return false;
  for (size_t i = 0; i < expr.size(); ++i) {
    if (expr[i] != '^') continue;
    size_t j = i + 1;
    while (j < expr.size() && ascii_digit(expr[j])) ++j;
    if (j - i - 1 >= 2 || (j > i + 1 && j < expr.size() && expr[j] == '^')) return false;
  }
  return true;
}

bool equal_under_evaluation(const PyStr& truth, const PyStr& given) {
  const PyStr expr = U"(" + truth + U")-(" + given + U")";
  if (!should_allow_eval(expr)) return false;
  const PyStr parsed = replace_all(expr, U"^", U"**");
  const PyStr a = U"(" + truth + U")", b = U"(" + given + U")";
  static const double kPoints[3][7] = {{0.5772, 1.4142, 2.7183, 0.6931, 1.7321, 3.1416, 2.2361},
                                       {1.3247, 0.9159, 1.6180, 2.5029, 0.4343, 1.2021, 3.3219},
                                       {2.0794, 0.3010, 1.0986, 0.8862, 1.9601, 2.6651, 0.7854}};
  std::set<char32_t> letters;  // each distinct letter gets its own value at each point
  for (char32_t c : expr)
    if (py_isalpha(c)) letters.insert(c);
  const PyStr pa = replace_all(a, U"^", U"**"), pb = replace_all(b, U"^", U"**");
  for (const auto& values : kPoints) {
    std::map<char32_t, double> variables;
    size_t k = 0;
    for (char32_t c : letters) {
      variables[c] = values[k % 7] + static_cast<double>(k / 7);
      ++k;
    }
    const auto d = Evaluator(parsed, variables).run();
    const auto va = Evaluator(pa, variables).run(), vb = Evaluator(pb, variables).run();
    if (!d || !va || !vb) return false;
    const double scale = std::max({1.0, std::fabs(*va), std::fabs(*vb)});
    if (std::fabs(*d) > 1e-9 * scale) return false;
  }
  return true;
}

std::vector<PyStr> split_tuple(const PyStr& input) {
  const PyStr expr = strip_properly_formatted_commas(input);
  if (expr.empty()) return {};
  auto tuple_char = [](char32_t c) { return c == '(' || c == ')' || c == '[' || c == ']'; };
  bool inner_clean = true;
  for (size_t i = 1; i + 1 < expr.size(); ++i) inner_clean = inner_clean && !tuple_char(expr[i]);
  if (expr.size() > 2 && tuple_char(expr.front()) && tuple_char(expr.back()) && inner_clean) {
    std::vector<PyStr> elems;
    for (const PyStr& e : split(expr.substr(1, expr.size() - 2), U",")) elems.push_back(strip(e));
    return elems;
  }
  return {expr};
}

// _is_frac: ^-?[0-9]+.?/0*[1-9][0-9]*.?$ ('.' any character but a newline; '$' also before a final newline).
bool is_frac(const PyStr& input) {
  PyStr s = input;
  if (!s.empty() && s.back() == '\n') s.pop_back();
  // Try each split at a '/' (the regex backtracks over the optional characters around it).
  for (size_t slash = 0; (slash = s.find(U'/', slash)) != PyStr::npos; ++slash) {
    const PyStr left = s.substr(0, slash), right = s.substr(slash + 1);
    auto left_ok = [](const PyStr& l) {  // -?[0-9]+ and at most one more character
      size_t i = !l.empty() && l[0] == '-' ? 1 : 0;
      const size_t b = i;
      while (i < l.size() && ascii_digit(l[i])) ++i;
      if (i == b) return false;
      return i == l.size() || (i + 1 == l.size() && l[i] != '\n');
    };
    auto right_ok = [&]() {
      size_t i = 0;
      while (i < right.size() && right[i] == '0') ++i;
      // 0* may give back zeros: the first digit taken by [1-9] must be 1-9
      for (size_t z = 0; z <= i; ++z) {
        size_t k = z;
        if (k >= right.size() || right[k] < '1' || right[k] > '9') continue;
        ++k;
        while (k < right.size() && ascii_digit(right[k])) ++k;
        if (k == right.size() || (k + 1 == right.size() && right[k] != '\n')) return true;
      }
      return false;
    };
    if (left_ok(left) && right_ok()) return true;
  }
  return false;
}

}  // namespace

std::string extract_boxed_content(const std::string& text) {
  const PyStr s = from_utf8(text);
  const size_t start = s.rfind(U"\\boxed{");
  if (start == PyStr::npos) return "None";
  int depth = 0;
  for (size_t i = start + 7; i < s.size(); ++i) {
    if (s[i] == '{') ++depth;
    else if (s[i] == '}') --depth;
    if (depth == -1) return to_utf8(strip(s.substr(start + 7, i - start - 7)));
  }
  return "None";
}

bool grade_answer(const std::string& given_text, const std::string& truth_text) {
  const PyStr given = from_utf8(given_text), truth = from_utf8(truth_text);
  if (mathd_normalize(truth) == mathd_normalize(given)) return true;
  const PyStr truth_n = normalize(truth), given_n = normalize(given);
  if (truth_n == given_n) return true;
  if (given_n.empty()) return false;
  const std::vector<PyStr> truth_elems = split_tuple(truth_n), given_elems = split_tuple(given_n);
  if (truth_elems.size() > 1 && (truth_n.empty() || truth_n.front() != given_n.front() || truth_n.back() != given_n.back()))
    return false;
  if (truth_elems.size() != given_elems.size()) return false;
  bool correct = false;
  for (size_t k = 0; k < truth_elems.size(); ++k) {
    const PyStr &t = truth_elems[k], &g = given_elems[k];
    if (is_frac(t) && is_frac(g))
      correct = t == g;
    else if (str_int_value(t).has_value() != str_int_value(g).has_value())
      correct = false;
    else
      correct = equal_under_evaluation(t, g);
    if (!correct) break;
  }
  return correct;
}

double geo3k_score(const std::string& response, const std::string& ground_truth) {
  const double acc = grade_answer(extract_boxed_content(response), ground_truth) ? 1.0 : 0.0;
  // re.fullmatch(r"<think>.*</think>.*\\boxed\{.*\}.*", DOTALL)
  const PyStr s = from_utf8(response);
  bool format = false;
  if (starts_with(s, U"<think>")) {
    const size_t think_end = s.find(U"</think>", 7);
    const size_t box = think_end == PyStr::npos ? PyStr::npos : s.find(U"\\boxed{", think_end + 8);
    format = box != PyStr::npos && s.find(U'}', box + 7) != PyStr::npos;
  }
  return (1.0 - 0.1) * acc + 0.1 * (format ? 1.0 : 0.0);
}

}  // namespace grpo::verl
