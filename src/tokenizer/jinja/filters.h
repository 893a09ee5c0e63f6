// The built-in filters (`x | name(args)`) and tests (`x is name args`) of Jinja2 3.1 that chat templates
// use, with transformers' `tojson` (no ASCII escaping, key order kept).
#pragma once
#include <string_view>

#include "tokenizer/jinja/value.h"

namespace grpo::jinja {

using FilterFn = Value (*)(const Value& input, CallArgs& args);
using TestFn = bool (*)(const Value& input, CallArgs& args);

FilterFn find_filter(std::string_view name);  // nullptr when unknown
TestFn find_test(std::string_view name);      // nullptr when unknown

}  // namespace grpo::jinja
