// JSON at the boundary of the Jinja interpreter: nlohmann::json inputs become Values (key order kept as
// the input holds it), and `tojson` writes Values as Python's json.dumps(ensure_ascii=False) does.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "tokenizer/jinja/value.h"

namespace grpo::jinja {

Value from_json(const nlohmann::json& j);
Value from_json(const nlohmann::ordered_json& j);  // keeps object key order, as Python's json.load does

struct JsonDumpOptions {
  bool indented = false;  // json.dumps(indent=...) given (then the item separator defaults to ",")
  std::string indent;     // one level of indentation
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;  // escape non-ASCII as \uXXXX (surrogate pairs above U+FFFF)
};

// json.dumps(v, ensure_ascii=False, ...): fails for values JSON cannot hold (undefined, namespaces).
std::string to_json(const Value& v, const JsonDumpOptions& options = {});

}  // namespace grpo::jinja
