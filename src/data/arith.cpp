// Arithmetic problem generator (see arith.h): random token sequences, parsed with operator precedence
// into a tree whose post-order evaluation gives the answer and the worked steps.
#include "data/arith.h"

#include <memory>
#include <set>

#include "core/error.h"
#include "core/files.h"

namespace grpo {

namespace {

char random_op(Rng& rng, const char* ops) {
  const std::string s = ops;
  return s[rng.below(s.size())];
}

// Operands joined by operators; `open`/`close` wrap operands [open, close] in parentheses when open >= 0.
std::string join_expression(const std::vector<int64_t>& nums, const std::string& ops, int open = -1, int close = -1) {
  std::string s;
  for (size_t i = 0; i < nums.size(); ++i) {
    if (i > 0) s += ops[i - 1];
    if (static_cast<int>(i) == open) s += '(';
    s += std::to_string(nums[i]);
    if (static_cast<int>(i) == close) s += ')';
  }
  return s;
}

// Recursive-descent evaluation (expr = term {+|- term}; term = factor {* factor}; factor = number |
// (expr)) that records each operation as it is performed.
class Evaluator {
 public:
  Evaluator(const std::string& text, std::vector<ArithStep>& steps) : s_(text), steps_(steps) {}
  int64_t run() {
    int64_t v = expr();
    GRPO_CHECK(pos_ == s_.size(), "[arith] trailing text in \"", s_, "\" at ", pos_);
    return v;
  }

 private:
  int64_t expr() {
    int64_t v = term();
    while (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) {
      const char op = s_[pos_++];
      const int64_t rhs = term();
      v = record(v, op, rhs, op == '+' ? v + rhs : v - rhs);
    }
    return v;
  }
  int64_t term() {
    int64_t v = factor();
    while (pos_ < s_.size() && s_[pos_] == '*') {
      ++pos_;
      const int64_t rhs = factor();
      v = record(v, '*', rhs, v * rhs);
    }
    return v;
  }
  int64_t factor() {
    GRPO_CHECK(pos_ < s_.size(), "[arith] unexpected end of \"", s_, "\"");
    if (s_[pos_] == '(') {
      ++pos_;
      const int64_t v = expr();
      GRPO_CHECK(pos_ < s_.size() && s_[pos_] == ')', "[arith] missing ) in \"", s_, "\"");
      ++pos_;
      return v;
    }
    const size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    GRPO_CHECK(pos_ > start, "[arith] expected a number in \"", s_, "\" at ", start);
    return std::stoll(s_.substr(start, pos_ - start));
  }
  int64_t record(int64_t a, char op, int64_t b, int64_t result) {
    steps_.push_back({a, op, b, result});
    return result;
  }

  const std::string& s_;
  std::vector<ArithStep>& steps_;
  size_t pos_ = 0;
};

// A negative right operand is parenthesised: "7*(-2)=-14", "11-(-14)=25".
std::string step_text(const ArithStep& st) {
  return st.b < 0 ? cat(st.a, st.op, "(", st.b, ")=", st.result) : cat(st.a, st.op, st.b, "=", st.result);
}

std::vector<int> digits_lsb_first(int64_t v, size_t n) {
  std::vector<int> d(n, 0);
  for (size_t i = 0; i < n && v > 0; ++i, v /= 10) d[i] = static_cast<int>(v % 10);
  return d;
}

size_t digit_count(int64_t v) { return std::to_string(v).size(); }

// Column addition, units first, the carry written out: 79+99 -> "9+9=18, 7+9+1=17".
std::string column_addition(int64_t a, int64_t b) {
  const size_t n = std::max(digit_count(a), digit_count(b));
  const auto da = digits_lsb_first(a, n), db = digits_lsb_first(b, n);
  std::string s;
  int carry = 0;
  for (size_t i = 0; i < n; ++i) {
    const int sum = da[i] + db[i] + carry;
    s += cat(i ? ", " : "", da[i], "+", db[i], carry ? "+1" : "", "=", sum);
    carry = sum / 10;
  }
  return s;
}

// Column subtraction of a >= b, units first, borrows written out: 73-69 -> "13-9=4, 7-1-6=0".
std::string column_subtraction(int64_t a, int64_t b) {
  const size_t n = digit_count(a);
  const auto da = digits_lsb_first(a, n), db = digits_lsb_first(b, n);
  std::string s;
  int borrow = 0;
  for (size_t i = 0; i < n; ++i) {
    const int need = da[i] - borrow < db[i] ? 1 : 0;
    const int top = da[i] + 10 * need;
    s += cat(i ? ", " : "", top, borrow ? "-1" : "", "-", db[i], "=", top - borrow - db[i]);
    borrow = need;
  }
  return s;
}

// The digit-by-digit work of a + or - step on non-negative operands ("" for other steps); a - b with
// a < b is worked as -(b-a).
std::string column_work(const ArithStep& st) {
  if (st.a < 0 || st.b < 0) return "";
  if (st.op == '+') return column_addition(st.a, st.b);
  if (st.op != '-') return "";
  if (st.a >= st.b) return column_subtraction(st.a, st.b);
  return cat("-(", st.b, "-", st.a, "), ", column_subtraction(st.b, st.a));
}

std::string level_expression(Rng& rng, int level) {
  switch (level) {
    case 1: return join_expression({rng.between(0, 9), rng.between(0, 9)}, "+");
    case 2: return join_expression({rng.between(0, 99), rng.between(0, 99)}, std::string(1, random_op(rng, "+-")));
    case 3:
      if (rng.below(2) == 0) return join_expression({rng.between(2, 9), rng.between(2, 99)}, "*");
      return join_expression({rng.between(100, 999), rng.between(10, 99)}, std::string(1, random_op(rng, "+-")));
    case 4: {
      std::vector<int64_t> nums = {rng.between(1, 20), rng.between(1, 20), rng.between(1, 20)};
      return join_expression(nums, {random_op(rng, "+-*"), random_op(rng, "+-*")});
    }
    case 5: {
      const int count = 3 + static_cast<int>(rng.below(2));
      std::vector<int64_t> nums;
      std::string ops;
      for (int i = 0; i < count; ++i) nums.push_back(rng.between(1, 20));
      for (int i = 1; i < count; ++i) ops += random_op(rng, "+-*");
      // A parenthesised span of 2..count-1 operands (never the whole expression).
      const int len = 2 + static_cast<int>(rng.below(static_cast<uint64_t>(count - 2)));
      const int open = static_cast<int>(rng.below(static_cast<uint64_t>(count - len + 1)));
      return join_expression(nums, ops, open, open + len - 1);
    }
  }
  fail("[arith] level ", level, " is not in 1..", kArithMaxLevel);
}

}  // namespace

std::vector<int> arith_levels(const std::string& difficulty) {
  if (difficulty == "easy") return {1, 2};
  if (difficulty == "medium") return {1, 2, 3};
  if (difficulty == "hard") return {3, 4, 5};
  if (difficulty == "mixed") return {1, 2, 3, 4, 5};
  if (difficulty.size() == 1 && difficulty[0] >= '1' && difficulty[0] <= '0' + kArithMaxLevel)
    return {difficulty[0] - '0'};
  fail("[arith] unknown difficulty \"", difficulty, "\": expected easy, medium, hard, mixed or a level 1..",
       kArithMaxLevel);
}

ArithProblem generate_arith_problem(Rng& rng, int level) {
  ArithProblem p;
  p.level = level;
  p.expression = level_expression(rng, level);
  p.answer = Evaluator(p.expression, p.steps).run();
  return p;
}

std::vector<ArithProblem> generate_arith(int64_t n, uint64_t seed, const std::vector<int>& levels,
                                         const std::vector<ArithProblem>& exclude) {
  GRPO_CHECK(n >= 0 && n <= kArithMaxProblems, "[arith] number of problems must be in [0, ", kArithMaxProblems,
             "], got ", n);
  GRPO_CHECK(!levels.empty(), "[arith] no levels to draw from");
  std::set<std::string> seen;
  for (const auto& p : exclude) seen.insert(p.expression);
  Rng rng({seed, 0x61726974ull});
  std::vector<ArithProblem> out;
  out.reserve(static_cast<size_t>(n));
  int64_t misses = 0;  // draws that repeated a seen expression, since the last new one
  while (static_cast<int64_t>(out.size()) < n) {
    const int level = levels[rng.below(levels.size())];
    ArithProblem p = generate_arith_problem(rng, level);
    if (!seen.insert(p.expression).second) {
      GRPO_CHECK(++misses < 100000, "[arith] cannot draw ", n, " distinct problems from the levels asked for (",
                 out.size(), " found); ask for fewer or a harder difficulty");
      continue;
    }
    misses = 0;
    out.push_back(std::move(p));
  }
  return out;
}

std::string arith_prompt(const ArithProblem& p) { return "Compute " + p.expression + "."; }

std::string arith_response(const ArithProblem& p, ArithStyle style) {
  std::string s;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const ArithStep& st = p.steps[i];
    const std::string direct = step_text(st);
    const std::string columns = style == ArithStyle::Columns ? column_work(st) : "";
    s += (i ? ", " : "") + (columns.empty() ? direct : direct.substr(0, direct.find('=')) + ": " + columns + ", so " + direct);
  }
  return s + ". \\boxed{" + std::to_string(p.answer) + "}";
}

nlohmann::json arith_example(const ArithProblem& p, const std::string& id, ArithStyle style) {
  return {{"id", id},
          {"prompt", arith_prompt(p)},
          {"answer", std::to_string(p.answer)},
          {"response", arith_response(p, style)},
          {"level", p.level}};
}

ArithSplit write_arith_dataset(const std::string& dir, int64_t n_train, int64_t n_test, uint64_t seed,
                               const std::string& difficulty, double columns_fraction) {
  GRPO_CHECK(columns_fraction >= 0 && columns_fraction <= 1, "[arith] the fraction of column-worked responses must be in [0, 1], got ",
             columns_fraction);
  const auto levels = arith_levels(difficulty);
  const auto test = generate_arith(n_test, seed ^ 0x7465737400000000ull, levels);
  const auto train = generate_arith(n_train, seed, levels, test);
  make_dirs(dir);
  ArithSplit split{dir + "/train.jsonl", dir + "/test.jsonl", n_train, n_test};
  auto write = [&](const std::string& path, const std::vector<ArithProblem>& problems, const std::string& prefix) {
    Rng style_rng({seed, 0x7374796c65ull});
    write_file_atomic_with(path, [&](std::FILE* f) {
      for (size_t i = 0; i < problems.size(); ++i) {
        const ArithStyle style = style_rng.uniform() < columns_fraction ? ArithStyle::Columns : ArithStyle::Direct;
        const std::string line = arith_example(problems[i], prefix + std::to_string(i), style).dump() + "\n";
        GRPO_CHECK(std::fwrite(line.data(), 1, line.size(), f) == line.size(), "[arith] cannot write ", path);
      }
    });
  };
  write(split.train_path, train, "train-");
  write(split.test_path, test, "test-");
  return split;
}

}  // namespace grpo
