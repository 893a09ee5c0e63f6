// Failure names and verl's error text (see tool_call.h).
#include "tools/tool_call.h"

namespace grpo::tools {

const char* failure_name(ToolFailure f) {
  switch (f) {
    case ToolFailure::None: return "none";
    case ToolFailure::BadJson: return "bad_json";
    case ToolFailure::UnknownTool: return "unknown_tool";
    case ToolFailure::BadArguments: return "bad_arguments";
    case ToolFailure::Timeout: return "timeout";
    case ToolFailure::Crashed: return "crashed";
    case ToolFailure::OutputTooLong: return "output_too_long";
    case ToolFailure::ToolError: return "tool_error";
  }
  return "unknown";
}

ToolResult tool_error(ToolFailure failure, const std::string& detail) {
  return ToolResult{"Error when executing tool: " + detail, failure, 0.0};
}

}  // namespace grpo::tools
