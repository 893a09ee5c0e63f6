// The calculator (see calculator.h): a recursive-descent parser over exact fractions of __int128.
#include "tools/calculator.h"

#include <cstdint>

#include "core/error.h"

namespace grpo::tools {

namespace {

using i128 = __int128;

constexpr size_t kMaxExpressionLength = 1000;
constexpr int kMaxDepth = 100;
constexpr int kDecimals = 12;  // of a result that has no exact decimal

i128 pow10(int n) {
  i128 p = 1;
  for (int i = 0; i < n; ++i) p *= 10;
  return p;
}
const i128 kLimit = pow10(30);  // |numerator| and denominator stay below it

struct CalcError {
  std::string message;
};

i128 abs128(i128 x) { return x < 0 ? -x : x; }

i128 gcd128(i128 a, i128 b) {
  a = abs128(a);
  b = abs128(b);
  while (b != 0) {
    const i128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}

std::string to_text(i128 x) {
  if (x == 0) return "0";
  const bool negative = x < 0;
  std::string s;
  for (i128 v = abs128(x); v > 0; v /= 10) s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
  return negative ? "-" + s : s;
}

// An exact fraction num/den in lowest terms, den > 0, both below kLimit.
struct Fraction {
  i128 num = 0, den = 1;
};

Fraction make_fraction(i128 num, i128 den) {
  if (den == 0) throw CalcError{"division by zero"};
  if (den < 0) {
    num = -num;
    den = -den;
  }
  const i128 g = gcd128(num, den);
  if (g > 1) {
    num /= g;
    den /= g;
  }
  if (abs128(num) >= kLimit || den >= kLimit) throw CalcError{"overflow: a value needs more than 30 digits"};
  return {num, den};
}

i128 mul(i128 a, i128 b) {
  i128 r;
  if (__builtin_mul_overflow(a, b, &r)) throw CalcError{"overflow: a value needs more than 30 digits"};
  return r;
}

Fraction add(Fraction a, Fraction b) { return make_fraction(mul(a.num, b.den) + mul(b.num, a.den), mul(a.den, b.den)); }
Fraction negate(Fraction a) { return {-a.num, a.den}; }
Fraction multiply(Fraction a, Fraction b) {
  // Cross-reduce first so that exact products whose factors share terms stay in range.
  const i128 g1 = gcd128(a.num, b.den), g2 = gcd128(b.num, a.den);
  const i128 n1 = g1 > 1 ? a.num / g1 : a.num, d2 = g1 > 1 ? b.den / g1 : b.den;
  const i128 n2 = g2 > 1 ? b.num / g2 : b.num, d1 = g2 > 1 ? a.den / g2 : a.den;
  return make_fraction(mul(n1, n2), mul(d1, d2));
}
Fraction divide(Fraction a, Fraction b) {
  if (b.num == 0) throw CalcError{"division by zero"};
  return multiply(a, make_fraction(b.den, b.num));
}

Fraction power(Fraction base, Fraction exponent) {
  if (exponent.den != 1) throw CalcError{"the exponent must be an integer"};
  i128 e = exponent.num;
  if (e < 0) {
    if (base.num == 0) throw CalcError{"division by zero (0 to a negative power)"};
    base = make_fraction(base.den, base.num);
    e = -e;
  }
  if (base.num == 0) return e == 0 ? Fraction{1, 1} : Fraction{0, 1};
  if (abs128(base.num) == 1 && base.den == 1) return {(base.num < 0 && e % 2 == 1) ? -1 : 1, 1};
  if (e > 128) throw CalcError{"overflow: a value needs more than 30 digits"};  // |base| != 1 grows past 10^30
  Fraction r{1, 1};
  for (i128 i = 0; i < e; ++i) r = multiply(r, base);
  return r;
}

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  Fraction parse() {
    skip_space();
    if (at_ == s_.size()) throw CalcError{"empty expression"};
    const Fraction v = expression(0);
    skip_space();
    if (at_ != s_.size()) unexpected();
    return v;
  }

 private:
  void skip_space() {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\t' || s_[at_] == '\n' || s_[at_] == '\r')) ++at_;
  }
  bool eat(std::string_view token) {
    skip_space();
    if (s_.substr(at_, token.size()) != token) return false;
    at_ += token.size();
    return true;
  }
  [[noreturn]] void unexpected() {
    if (at_ >= s_.size()) throw CalcError{"unexpected end of expression"};
    throw CalcError{cat("unexpected character '", s_[at_], "' at position ", at_ + 1)};
  }
  void enter(int depth) {
    if (depth > kMaxDepth) throw CalcError{cat("the expression is nested more than ", kMaxDepth, " deep")};
  }

  Fraction expression(int depth) {
    enter(depth);
    Fraction v = term(depth);
    for (;;) {
      if (eat("+")) v = add(v, term(depth));
      else if (eat("-")) v = add(v, negate(term(depth)));
      else return v;
    }
  }
  Fraction term(int depth) {
    Fraction v = unary(depth);
    for (;;) {
      if (eat("*")) v = multiply(v, unary(depth));
      else if (eat("/")) v = divide(v, unary(depth));
      else return v;
    }
  }
  Fraction unary(int depth) {
    enter(depth);
    if (eat("-")) return negate(unary(depth + 1));
    if (eat("+")) return unary(depth + 1);
    const Fraction base = primary(depth);
    if (eat("**") || eat("^")) return power(base, unary(depth + 1));
    return base;
  }
  Fraction primary(int depth) {
    if (eat("(")) {
      const Fraction v = expression(depth + 1);
      if (!eat(")")) {
        skip_space();
        if (at_ >= s_.size()) throw CalcError{"missing closing parenthesis"};
        unexpected();
      }
      return v;
    }
    skip_space();
    return number();
  }
  Fraction number() {
    const size_t start = at_;
    i128 num = 0, den = 1;
    bool digits = false, point = false;
    while (at_ < s_.size()) {
      const char c = s_[at_];
      if (c >= '0' && c <= '9') {
        num = mul(num, 10) + (c - '0');
        if (point) den = mul(den, 10);
        if (num >= kLimit || den >= kLimit) throw CalcError{"overflow: a number has more than 30 digits"};
        digits = true;
      } else if (c == '.' && !point) {
        point = true;
      } else {
        break;
      }
      ++at_;
    }
    if (!digits) {
      at_ = start;
      unexpected();
    }
    return make_fraction(num, den);
  }

  std::string_view s_;
  size_t at_ = 0;
};

std::string format_fraction(const Fraction& v) {
  const std::string sign = v.num < 0 ? "-" : "";
  const i128 n = abs128(v.num);
  i128 whole = n / v.den, rest = n % v.den;
  if (rest == 0) return cat(v.num < 0 ? "-" : "", to_text(whole));
  // Exact when the denominator is 2^a 5^b: then at most 30 digits follow the point (den < 10^30).
  i128 d = v.den;
  while (d % 2 == 0) d /= 2;
  while (d % 5 == 0) d /= 5;
  std::string digits;
  if (d == 1) {
    while (rest != 0) {
      rest *= 10;  // rest < den < 10^30: no overflow
      digits += static_cast<char>('0' + static_cast<int>(rest / v.den));
      rest %= v.den;
    }
    return cat(sign, to_text(whole), ".", digits);
  }
  // Rounded to kDecimals decimals, half up, trailing zeros dropped.
  for (int i = 0; i < kDecimals; ++i) {
    rest *= 10;
    digits += static_cast<char>('0' + static_cast<int>(rest / v.den));
    rest %= v.den;
  }
  if (rest * 2 >= v.den) {
    int i = kDecimals - 1;
    for (; i >= 0 && digits[static_cast<size_t>(i)] == '9'; --i) digits[static_cast<size_t>(i)] = '0';
    if (i >= 0) ++digits[static_cast<size_t>(i)];
    else ++whole;
  }
  while (!digits.empty() && digits.back() == '0') digits.pop_back();
  return cat(sign, to_text(whole), digits.empty() ? "" : ".", digits);
}

class Calculator : public Tool {
 public:
  ToolResult run(const nlohmann::json& arguments, const ToolLimits&) override {
    std::string result, error;
    if (!arguments.contains("expression") || !arguments["expression"].is_string())
      return tool_error(ToolFailure::BadArguments, "calculator: missing required argument 'expression'");
    if (!calculate(arguments["expression"].get<std::string>(), &result, &error))
      return tool_error(ToolFailure::ToolError, "calculator: " + error);
    return ToolResult{result, ToolFailure::None, 0.0};
  }
};

}  // namespace

bool calculate(std::string_view expression, std::string* result, std::string* error) {
  if (expression.size() > kMaxExpressionLength) {
    *error = cat("the expression is longer than ", kMaxExpressionLength, " characters");
    return false;
  }
  try {
    *result = format_fraction(Parser(expression).parse());
    return true;
  } catch (const CalcError& e) {
    *error = e.message;
    return false;
  }
}

nlohmann::ordered_json calculator_schema() {
  return nlohmann::ordered_json::parse(R"({
    "type": "function",
    "function": {
      "name": "calculator",
      "description": "Evaluate an arithmetic expression exactly: integers and decimals with + - * / ( ) and ^ for powers.",
      "parameters": {
        "type": "object",
        "properties": {
          "expression": {"type": "string", "description": "The expression, e.g. (1234 * 5678 - 90) / 3"}
        },
        "required": ["expression"]
      }
    }
  })");
}

std::shared_ptr<Tool> make_calculator() { return std::make_shared<Calculator>(); }

}  // namespace grpo::tools
