// Tool schema and argument checks (see tool_schema.h).
#include "tools/tool_schema.h"

#include <cmath>

#include "core/error.h"

namespace grpo::tools {

namespace {

const char* const kJsonTypes[] = {"string", "integer", "number", "boolean", "array", "object", "null"};

bool known_type(const std::string& t) {
  for (const char* k : kJsonTypes)
    if (t == k) return true;
  return false;
}

bool has_type(const nlohmann::json& v, const std::string& type) {
  if (type == "string") return v.is_string();
  if (type == "integer") {
    if (v.is_number_integer()) return true;
    if (!v.is_number_float()) return false;
    const double d = v.get<double>();  // JSON Schema: 3.0 is an integer
    return std::isfinite(d) && d == std::floor(d);
  }
  if (type == "number") return v.is_number();
  if (type == "boolean") return v.is_boolean();
  if (type == "array") return v.is_array();
  if (type == "object") return v.is_object();
  return v.is_null();
}

// The property's allowed types: "type" as a string or a list of strings; empty when it declares none.
std::vector<std::string> types_of(const nlohmann::ordered_json& property) {
  std::vector<std::string> out;
  if (!property.is_object() || !property.contains("type")) return out;
  const auto& t = property["type"];
  if (t.is_string()) out.push_back(t.get<std::string>());
  if (t.is_array())
    for (const auto& x : t)
      if (x.is_string()) out.push_back(x.get<std::string>());
  return out;
}

std::string type_list(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " or ") + x;
  return s;
}

}  // namespace

void check_tool_schema(const nlohmann::ordered_json& schema, const std::string& where) {
  GRPO_CHECK(schema.is_object(), where, ": tool_schema must be a mapping {type: function, function: {...}}");
  GRPO_CHECK(schema.contains("type") && schema["type"] == "function", where,
             ": tool_schema.type must be \"function\" (an OpenAI function schema)");
  GRPO_CHECK(schema.contains("function") && schema["function"].is_object(), where,
             ": tool_schema.function must be a mapping {name, description, parameters}");
  const auto& f = schema["function"];
  GRPO_CHECK(f.contains("name") && f["name"].is_string() && !f["name"].get<std::string>().empty(), where,
             ": tool_schema.function.name must be a non-empty string");
  if (!f.contains("parameters")) return;  // a tool without arguments
  const auto& p = f["parameters"];
  GRPO_CHECK(p.is_object() && p.value("type", "") == "object", where,
             ": tool_schema.function.parameters must be a mapping with type: object");
  if (p.contains("properties")) {
    GRPO_CHECK(p["properties"].is_object(), where, ": tool_schema.function.parameters.properties must be a mapping");
    for (const auto& [key, prop] : p["properties"].items()) {
      GRPO_CHECK(prop.is_object(), where, ": tool_schema.function.parameters.properties.", key, " must be a mapping");
      for (const auto& t : types_of(prop))
        GRPO_CHECK(known_type(t), where, ": tool_schema.function.parameters.properties.", key, ".type: unknown type \"",
                   t, "\" (expected string, integer, number, boolean, array, object or null)");
      if (prop.contains("type"))
        GRPO_CHECK(!types_of(prop).empty(), where, ": tool_schema.function.parameters.properties.", key,
                   ".type must be a type name or a list of them");
    }
  }
  if (p.contains("required")) {
    GRPO_CHECK(p["required"].is_array(), where, ": tool_schema.function.parameters.required must be a list of names");
    for (const auto& r : p["required"]) {
      GRPO_CHECK(r.is_string(), where, ": tool_schema.function.parameters.required must be a list of names");
      GRPO_CHECK(p.contains("properties") && p["properties"].contains(r.get<std::string>()), where,
                 ": tool_schema.function.parameters.required names \"", r.get<std::string>(),
                 "\", which is not one of its properties");
    }
  }
}

std::string argument_error(const nlohmann::ordered_json& schema, const nlohmann::json& arguments) {
  const auto& f = schema["function"];
  if (!arguments.is_object()) return "the arguments must be a JSON object";
  if (!f.contains("parameters")) return "";
  const auto& p = f["parameters"];
  static const nlohmann::ordered_json kNone = nlohmann::ordered_json::object();
  const auto& props = p.contains("properties") ? p["properties"] : kNone;
  if (p.contains("required"))
    for (const auto& r : p["required"])
      if (!arguments.contains(r.get<std::string>()))
        return cat("missing required argument '", r.get<std::string>(), "'");
  const bool closed = p.contains("additionalProperties") && p["additionalProperties"] == false;
  for (const auto& [key, value] : arguments.items()) {
    if (!props.contains(key)) {
      if (closed) return cat("unexpected argument '", key, "'");
      continue;
    }
    const auto& prop = props[key];
    const auto types = types_of(prop);
    bool ok = types.empty();
    for (const auto& t : types) ok = ok || has_type(value, t);
    if (!ok) return cat("argument '", key, "' must be of type ", type_list(types), ", got ", value.dump());
    if (prop.contains("enum") && prop["enum"].is_array()) {
      bool listed = false;
      for (const auto& e : prop["enum"]) listed = listed || nlohmann::json::parse(e.dump()) == value;
      if (!listed) return cat("argument '", key, "' must be one of ", prop["enum"].dump(), ", got ", value.dump());
    }
  }
  return "";
}

}  // namespace grpo::tools
