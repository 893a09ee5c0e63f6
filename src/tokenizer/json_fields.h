// Typed reads of optional tokenizer.json fields: a field of the wrong type is an error naming its path
// (`where`.key), never nlohmann's type_error or a silent default.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"

namespace grpo {

// `key` of object `j`: its value, or `default_value` when absent or null; not a boolean is an error.
inline bool json_bool(const nlohmann::json& j, const char* key, bool default_value, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return default_value;
  if (!j[key].is_boolean()) fail("[tokenizer] ", where, ".", key, ": expected true or false, got ", j[key].dump());
  return j[key].get<bool>();
}

// `key` of object `j`: its string, or "" when absent or null; not a string is an error.
inline std::string json_string_or_empty(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return "";
  if (!j[key].is_string()) fail("[tokenizer] ", where, ".", key, ": expected a string or null");
  return j[key].get<std::string>();
}

}  // namespace grpo
