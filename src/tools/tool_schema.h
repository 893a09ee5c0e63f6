// OpenAI function schemas of tools: checking a tool config's tool_schema when it is loaded, and checking a
// call's arguments against it before the tool runs (required properties present, each given property of
// its declared JSON type or enum; others refused where additionalProperties is false).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace grpo::tools {

// Throws grpo::Error naming `where` (file and tool) and the field when the schema is not
// {"type": "function", "function": {"name": string, "parameters": {"type": "object", ...}}}.
void check_tool_schema(const nlohmann::ordered_json& schema, const std::string& where);

// "" when the arguments match the schema's parameters, else what is wrong ("missing required argument
// 'expression'"). The schema was checked by check_tool_schema.
std::string argument_error(const nlohmann::ordered_json& schema, const nlohmann::json& arguments);

}  // namespace grpo::tools
