// What a tool call is and what it gives back: the failure kinds of a call (counted by the trainer as
// tools/failures/<kind>), the parsed call (a name and its JSON arguments) and the result that becomes the
// tool turn of the conversation.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace grpo::tools {

enum class ToolFailure { None, BadJson, UnknownTool, BadArguments, Timeout, Crashed, OutputTooLong, ToolError };
inline constexpr int kToolFailureKinds = 8;

// "none", "bad_json", "unknown_tool", "bad_arguments", "timeout", "crashed", "output_too_long", "tool_error".
const char* failure_name(ToolFailure f);

struct ToolCall {
  std::string name;
  nlohmann::json arguments;  // a JSON object
};

struct ToolResult {
  std::string text;  // what goes into the tool turn (the tool's output, or the error message verl would give)
  ToolFailure failure = ToolFailure::None;
  double seconds = 0;  // wall time the call took
};

// verl's text for a call that failed: "Error when executing tool: <detail>".
ToolResult tool_error(ToolFailure failure, const std::string& detail);

}  // namespace grpo::tools
