// Attribute and item access as Jinja's sandboxed environment does them (`a.b` tries the Python attribute,
// then the item; `a[b]` the item, then the attribute), slicing with Python's rules, and the methods of
// str, list and dict that templates call (split, strip, startswith, items, get, ...).
#pragma once
#include <string_view>

#include "tokenizer/jinja/value.h"

namespace grpo::jinja {

Value get_attribute(const Value& obj, const std::string& name);
Value get_item(const Value& obj, const Value& key);
// obj[start:stop:step]; an undefined bound means "omitted" (None).
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

bool has_method(const Value& obj, std::string_view name);
Value call_method(const Value& obj, std::string_view name, CallArgs& args);

// Python str.split(sep, maxsplit) / rsplit, str.strip(chars) and friends (chars empty: whitespace).
std::vector<Value> split_string(const std::string& s, const Value& sep, int64_t maxsplit, bool from_right);
std::string strip_string(const std::string& s, const Value& chars, bool left, bool right);
std::string replace_string(const std::string& s, const std::string& old, const std::string& replacement, int64_t count);
std::string title_case(const std::string& s);  // Python str.title()
std::string capitalize(const std::string& s);  // Python str.capitalize()

}  // namespace grpo::jinja
