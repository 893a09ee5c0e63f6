// The built-in arithmetic task: integer problems with verifiable answers, from very easy (single-digit
// addition) to harder (several operations, parentheses), short prompts for byte-level models, and a
// worked response for supervised warm-up, e.g.
//   {"id": "train-17", "prompt": "Compute 12+7*(3-1).", "answer": "26", "level": 5,
//    "response": "3-1=2, 7*2=14, 12+14=26. \\boxed{26}"}
// Levels: 1 a+b single digits; 2 a+b / a-b up to two digits; 3 a*b (one digit times up to two) or
// three-digit +/-; 4 three operands of + - * without parentheses; 5 three or four operands with one pair
// of parentheses.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/rng.h"

namespace grpo {

constexpr int kArithMaxLevel = 5;
constexpr int64_t kArithMaxProblems = 10000000;  // problems per split at most (a file of ~1 GB)

struct ArithStep {  // one operation, e.g. 3-1=2
  int64_t a = 0;
  char op = '+';
  int64_t b = 0, result = 0;
};

struct ArithProblem {
  std::string expression;  // e.g. "12+7*(3-1)"
  int64_t answer = 0;
  int level = 1;
  std::vector<ArithStep> steps;  // one operation a time in evaluation order
};

// How a worked response is written. Direct: each operation and its result ("79+99=178"). Columns:
// + and - on non-negative numbers are also worked digit by digit, units first, with the carries and
// borrows written out ("79+99: 9+9=18, 7+9+1=17, so 79+99=178"); slower to write, easier to get right.
enum class ArithStyle { Direct, Columns };

// Difficulty names: easy (levels 1-2), medium (1-3), hard (3-5), mixed (1-5), or one level "1".."5".
// Returns the allowed levels; an unknown name is an error listing the choices.
std::vector<int> arith_levels(const std::string& difficulty);

ArithProblem generate_arith_problem(Rng& rng, int level);

// `n` problems with levels drawn uniformly from `levels`, none of whose expressions is in `exclude`
// (and no repeats), deterministic in seed.
std::vector<ArithProblem> generate_arith(int64_t n, uint64_t seed, const std::vector<int>& levels,
                                         const std::vector<ArithProblem>& exclude = {});

std::string arith_prompt(const ArithProblem& p);    // "Compute 12+7*(3-1)."
// "3-1=2, 7*2=14, 12+14=26. \boxed{26}" (Direct) or with the column work of each + and - step.
std::string arith_response(const ArithProblem& p, ArithStyle style = ArithStyle::Direct);
nlohmann::json arith_example(const ArithProblem& p, const std::string& id, ArithStyle style = ArithStyle::Direct);

struct ArithSplit {
  std::string train_path, test_path;
  int64_t train = 0, test = 0;
};
// Writes DIR/train.jsonl and DIR/test.jsonl (atomically); test problems never appear in train. A
// `columns_fraction` of the worked responses, drawn at random, use ArithStyle::Columns.
ArithSplit write_arith_dataset(const std::string& dir, int64_t n_train, int64_t n_test, uint64_t seed,
                               const std::string& difficulty, double columns_fraction = 0);

}  // namespace grpo
