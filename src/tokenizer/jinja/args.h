// Binds call arguments (positional + keyword) to named parameters with defaults, the way Python does,
// for the built-in filters, tests, methods and globals.
#pragma once
#include <initializer_list>
#include <string_view>
#include <vector>

#include "tokenizer/jinja/value.h"

namespace grpo::jinja {

struct Param {
  const char* name;
  Value default_value;  // used when the argument is absent
  bool required = false;
};

// Returns one value per parameter. Fails on too many positional arguments, unknown keywords, duplicates
// and missing required parameters, naming `function`.
std::vector<Value> bind_args(const CallArgs& args, std::string_view function, std::initializer_list<Param> params);

// For functions taking *args only (e.g. loop.cycle): fails if keyword arguments are given.
void expect_no_keywords(const CallArgs& args, std::string_view function);

}  // namespace grpo::jinja
