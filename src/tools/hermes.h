// The hermes tool-call format, as Qwen3's chat template writes calls and verl's "hermes" parser reads
// them: any number of `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` blocks in an assistant
// turn (Qwen3 puts a newline after the opening tag and before the closing one). Only closed blocks count;
// text around them is the turn's content.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "core/names.h"
#include "tools/tool_call.h"

namespace grpo::tools {

// Tool-call formats (verl's multi_turn.format): hermes, the only one.
enum class ToolCallFormat { Hermes };
inline constexpr auto kToolCallFormatNames = name_table<ToolCallFormat>({{ToolCallFormat::Hermes, "hermes"}});

// One <tool_call> block: the call, or why it is not one (failure BadJson or BadArguments, with verl's kind
// of error text in `error`).
struct ParsedCall {
  ToolCall call;
  ToolFailure failure = ToolFailure::None;
  std::string error;
};

bool has_tool_call(std::string_view assistant_text);
std::vector<ParsedCall> parse_tool_calls(std::string_view assistant_text);

// One call written as Qwen3's template writes an assistant's tool call ("<tool_call>\n{...}\n</tool_call>").
std::string format_tool_call(const ToolCall& call);

}  // namespace grpo::tools
