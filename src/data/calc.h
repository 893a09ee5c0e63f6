// The built-in calculator task (`grpo data calc`): problems a calculator tool pays on, beyond a small
// model's own arithmetic: four- and five-digit multiplications and mixed expressions, with integer
// answers checked as \boxed{} (the math reward, as the arithmetic task). Rows look like the arithmetic
// task's ({"id", "prompt", "answer", "level"}) and carry the tools' schemas (`tools`, what the chat template
// shows the model). Training rows also carry a supervised target: a `tool_fraction` of them, drawn at
// random, are conversations in which the assistant calls the calculator and answers from its result,
//   "messages": [{"role": "user", "content": "Compute 1234*5678."},
//                {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function":
//                    {"name": "calculator", "arguments": {"expression": "1234*5678"}}}]},
//                {"role": "tool", "content": "7006652"},
//                {"role": "assistant", "content": "\\boxed{7006652}"}]
// and the others answer directly ("response": "\\boxed{7006652}"). Held-out rows have no target.
// Levels: 1 a 4-digit times a 2-digit number; 2 4-digit times 4-digit; 3 5-digit times 4-digit;
// 4 a*b+c or a*b-c (a, b of 3-4 digits, c of 4-5); 5 (a+b)*c, (a-b)*c or a*b-c*d (3-4 digit operands).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/rng.h"

namespace grpo {

constexpr int kCalcMaxLevel = 5;
constexpr int64_t kCalcMaxProblems = 10000000;

struct CalcProblem {
  std::string expression;  // "1234*5678"
  int64_t answer = 0;
  int level = 1;
};

// Difficulty names: mult (levels 1-3), mixed (1-5), hard (2-5), or one level "1".."5".
std::vector<int> calc_levels(const std::string& difficulty);

CalcProblem generate_calc_problem(Rng& rng, int level);
// `n` distinct problems with levels drawn uniformly from `levels`, none in `exclude`; deterministic in seed.
std::vector<CalcProblem> generate_calc(int64_t n, uint64_t seed, const std::vector<int>& levels,
                                       const std::vector<CalcProblem>& exclude = {});

std::string calc_prompt(const CalcProblem& p);  // "Compute 1234*5678."
// A held-out row (no target); `tools` is the JSON array of tool schemas every row carries.
nlohmann::ordered_json calc_row(const CalcProblem& p, const std::string& id, const nlohmann::ordered_json& tools);
// A training row: the conversation with the tool call (with_tool) or the direct answer.
nlohmann::ordered_json calc_sft_row(const CalcProblem& p, const std::string& id, const nlohmann::ordered_json& tools,
                                    bool with_tool);

struct CalcSplit {
  std::string train_path, test_path;
  int64_t train = 0, test = 0, train_with_tool = 0;
};
// Writes DIR/train.jsonl and DIR/test.jsonl atomically (test problems never in train); `tools` is the
// calculator's schema array (tools::ToolSet::builtin({"calculator"}).template_tools(), from the caller).
CalcSplit write_calc_dataset(const std::string& dir, int64_t n_train, int64_t n_test, uint64_t seed,
                             const std::string& difficulty, double tool_fraction, const nlohmann::ordered_json& tools);

}  // namespace grpo
