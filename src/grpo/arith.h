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

struct ArithProblem {
  std::string expression;  // e.g. "12+7*(3-1)"
  int64_t answer = 0;
  int level = 1;
  std::vector<std::string> steps;  // one operation a time in evaluation order, e.g. "3-1=2"
};

// Difficulty names: easy (levels 1-2), medium (1-3), hard (3-5), mixed (1-5), or one level "1".."5".
// Returns the allowed levels; an unknown name is an error listing the choices.
std::vector<int> arith_levels(const std::string& difficulty);

ArithProblem generate_arith_problem(Rng& rng, int level);

// `n` problems with levels drawn uniformly from `levels`, none of whose expressions is in `exclude`
// (and no repeats), deterministic in seed.
std::vector<ArithProblem> generate_arith(int64_t n, uint64_t seed, const std::vector<int>& levels,
                                         const std::vector<ArithProblem>& exclude = {});

std::string arith_prompt(const ArithProblem& p);    // "Compute 12+7*(3-1)."
std::string arith_response(const ArithProblem& p);  // "3-1=2, 7*2=14, 12+14=26. \boxed{26}"
nlohmann::json arith_example(const ArithProblem& p, const std::string& id);

struct ArithSplit {
  std::string train_path, test_path;
  int64_t train = 0, test = 0;
};
// Writes DIR/train.jsonl and DIR/test.jsonl (atomically); test problems never appear in train.
ArithSplit write_arith_dataset(const std::string& dir, int64_t n_train, int64_t n_test, uint64_t seed,
                               const std::string& difficulty);

}  // namespace grpo
