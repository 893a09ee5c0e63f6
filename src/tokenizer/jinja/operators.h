// Python semantics of Jinja's operators: arithmetic (int stays int, / gives float, // and % floor,
// ** with int overflow checked), `in`, and printf-style `str % args`.
#pragma once
#include <cstdint>

#include "tokenizer/jinja/value.h"

namespace grpo::jinja {

enum class BinaryOp : uint8_t { Add, Sub, Mul, Div, FloorDiv, Mod, Pow };

const char* binary_op_symbol(BinaryOp op);
Value binary_op(BinaryOp op, const Value& a, const Value& b);
Value negate(const Value& v);
Value unary_plus(const Value& v);
bool contains(const Value& container, const Value& item);  // `item in container`
// Python's printf-style formatting: fmt % args (args: a tuple, a dict for %(name)s, or one value).
std::string percent_format(const std::string& fmt, const Value& args);

}  // namespace grpo::jinja
