// The built-in `calculator` tool: an exact evaluator of arithmetic expressions over integers and
// decimals with + - * / ( ) and powers (^ or **, right-associative, above unary minus as in Python:
// -2^2 = -4). Values are exact fractions of integers below 10^30 in magnitude (more is an overflow error);
// a result prints as an integer, as its exact decimal when it has one ("0.125"), else rounded to 12
// decimals ("0.333333333333"). Division by zero, a non-integer or too large exponent, an expression over
// 1000 characters or nested over 100 deep, and any other character are errors, never a crash.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "tools/tool_set.h"

namespace grpo::tools {

// The value of the expression as text, or false with `error` saying what is wrong.
bool calculate(std::string_view expression, std::string* result, std::string* error);

// The calculator's function schema: calculator(expression: string).
nlohmann::ordered_json calculator_schema();
std::shared_ptr<Tool> make_calculator();

}  // namespace grpo::tools
