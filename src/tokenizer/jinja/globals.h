// Global functions visible to every template: Jinja's range/dict/namespace/joiner and transformers'
// raise_exception(message) and strftime_now(format).
#pragma once
#include <string_view>

#include "tokenizer/jinja/value.h"

namespace grpo::jinja {

const Value* find_global(std::string_view name);  // nullptr when there is no such global

// Message prefix of failures raised by the template itself through raise_exception().
inline constexpr std::string_view kRaisedPrefix = "raise_exception: ";

}  // namespace grpo::jinja
