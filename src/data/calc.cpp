// Calculator-task generator (see calc.h).
#include "data/calc.h"

#include <set>

#include "core/error.h"
#include "core/files.h"

namespace grpo {

namespace {

int64_t calc_digits(Rng& rng, int n) {  // a random n-digit number
  int64_t lo = 1;
  for (int i = 1; i < n; ++i) lo *= 10;
  return rng.between(lo, lo * 10 - 1);
}

int64_t calc_operand(Rng& rng) { return calc_digits(rng, 3 + static_cast<int>(rng.below(2))); }

CalcProblem make_calc_problem(std::string expression, int64_t answer, int level) { return {std::move(expression), answer, level}; }

}  // namespace

std::vector<int> calc_levels(const std::string& difficulty) {
  if (difficulty == "mult") return {1, 2, 3};
  if (difficulty == "mixed") return {1, 2, 3, 4, 5};
  if (difficulty == "hard") return {2, 3, 4, 5};
  if (difficulty.size() == 1 && difficulty[0] >= '1' && difficulty[0] <= '0' + kCalcMaxLevel) return {difficulty[0] - '0'};
  fail("[calc] unknown difficulty \"", difficulty, "\": expected mult, mixed, hard or a level 1..", kCalcMaxLevel);
}

CalcProblem generate_calc_problem(Rng& rng, int level) {
  switch (level) {
    case 1: {
      const int64_t a = calc_digits(rng, 4), b = calc_digits(rng, 2);
      return make_calc_problem(cat(a, "*", b), a * b, level);
    }
    case 2: {
      const int64_t a = calc_digits(rng, 4), b = calc_digits(rng, 4);
      return make_calc_problem(cat(a, "*", b), a * b, level);
    }
    case 3: {
      const int64_t a = calc_digits(rng, 5), b = calc_digits(rng, 4);
      return make_calc_problem(cat(a, "*", b), a * b, level);
    }
    case 4: {
      const int64_t a = calc_operand(rng), b = calc_operand(rng), c = calc_digits(rng, 4 + static_cast<int>(rng.below(2)));
      if (rng.below(2) == 0) return make_calc_problem(cat(a, "*", b, "+", c), a * b + c, level);
      return make_calc_problem(cat(a, "*", b, "-", c), a * b - c, level);
    }
    case 5: {
      const int64_t a = calc_operand(rng), b = calc_operand(rng), c = calc_operand(rng);
      switch (rng.below(3)) {
        case 0: return make_calc_problem(cat("(", a, "+", b, ")*", c), (a + b) * c, level);
        case 1: return make_calc_problem(cat("(", a, "-", b, ")*", c), (a - b) * c, level);
        default: {
          const int64_t d = calc_operand(rng);
          return make_calc_problem(cat(a, "*", b, "-", c, "*", d), a * b - c * d, level);
        }
      }
    }
  }
  fail("[calc] level ", level, " is not in 1..", kCalcMaxLevel);
}

std::vector<CalcProblem> generate_calc(int64_t n, uint64_t seed, const std::vector<int>& levels,
                                       const std::vector<CalcProblem>& exclude) {
  GRPO_CHECK(n >= 0 && n <= kCalcMaxProblems, "[calc] number of problems must be in [0, ", kCalcMaxProblems, "], got ", n);
  GRPO_CHECK(!levels.empty(), "[calc] no levels to draw from");
  std::set<std::string> seen;
  for (const auto& p : exclude) seen.insert(p.expression);
  Rng rng({seed, 0x63616c63ull});
  std::vector<CalcProblem> out;
  out.reserve(static_cast<size_t>(n));
  int64_t misses = 0;  // repeats since the last new problem
  while (static_cast<int64_t>(out.size()) < n) {
    CalcProblem p = generate_calc_problem(rng, levels[rng.below(levels.size())]);
    if (!seen.insert(p.expression).second) {
      GRPO_CHECK(++misses < 100000, "[calc] cannot draw ", n, " distinct problems from the levels asked for (", out.size(),
                 " found); ask for fewer");
      continue;
    }
    misses = 0;
    out.push_back(std::move(p));
  }
  return out;
}

std::string calc_prompt(const CalcProblem& p) { return "Compute " + p.expression + "."; }

nlohmann::ordered_json calc_row(const CalcProblem& p, const std::string& id, const nlohmann::ordered_json& tools) {
  return {{"id", id}, {"prompt", calc_prompt(p)}, {"answer", std::to_string(p.answer)}, {"level", p.level}, {"tools", tools}};
}

nlohmann::ordered_json calc_sft_row(const CalcProblem& p, const std::string& id, const nlohmann::ordered_json& tools,
                                    bool with_tool) {
  const std::string boxed = "\\boxed{" + std::to_string(p.answer) + "}";
  if (!with_tool) {
    nlohmann::ordered_json row = calc_row(p, id, tools);
    row["response"] = boxed;
    return row;
  }
  const nlohmann::ordered_json call = {
      {"type", "function"}, {"function", {{"name", "calculator"}, {"arguments", {{"expression", p.expression}}}}}};
  const nlohmann::ordered_json messages = nlohmann::ordered_json::array(
      {{{"role", "user"}, {"content", calc_prompt(p)}},
       {{"role", "assistant"}, {"content", ""}, {"tool_calls", nlohmann::ordered_json::array({call})}},
       {{"role", "tool"}, {"content", std::to_string(p.answer)}},
       {{"role", "assistant"}, {"content", boxed}}});
  return {{"id", id}, {"messages", messages}, {"answer", std::to_string(p.answer)}, {"level", p.level}, {"tools", tools}};
}

CalcSplit write_calc_dataset(const std::string& dir, int64_t n_train, int64_t n_test, uint64_t seed,
                             const std::string& difficulty, double tool_fraction, const nlohmann::ordered_json& tools) {
  GRPO_CHECK(tool_fraction >= 0 && tool_fraction <= 1, "[calc] the fraction of tool-calling examples must be in [0, 1], got ",
             tool_fraction);
  GRPO_CHECK(tools.is_array() && !tools.empty(), "[calc] the rows need the tools' schemas (a non-empty array)");
  const auto levels = calc_levels(difficulty);
  const auto test = generate_calc(n_test, seed ^ 0x7465737400000000ull, levels);
  const auto train = generate_calc(n_train, seed, levels, test);
  make_dirs(dir);
  CalcSplit split{dir + "/train.jsonl", dir + "/test.jsonl", n_train, n_test, 0};
  auto write = [&](const std::string& path, auto&& row_of, size_t n) {
    write_file_atomic_with(path, [&](std::FILE* f) {
      for (size_t i = 0; i < n; ++i) {
        const std::string line = row_of(i).dump() + "\n";
        GRPO_CHECK(std::fwrite(line.data(), 1, line.size(), f) == line.size(), "[calc] cannot write ", path);
      }
    });
  };
  Rng tool_rng({seed, 0x746f6f6cull});
  write(split.train_path, [&](size_t i) {
    const bool with_tool = tool_rng.uniform() < tool_fraction;
    split.train_with_tool += with_tool;
    return calc_sft_row(train[i], "train-" + std::to_string(i), tools, with_tool);
  }, train.size());
  write(split.test_path, [&](size_t i) { return calc_row(test[i], "test-" + std::to_string(i), tools); }, test.size());
  return split;
}

}  // namespace grpo
