// The tools of a run. Each has an OpenAI function schema (what the chat template shows the model through
// its `tools` variable) and an implementation: a built-in (calculator.h), an external command
// (command_tool.h) or a Python function on the reward worker pool (python_tool.h). They come from verl's
// tool config file (actor_rollout_ref.rollout.multi_turn.tool_config_path; YAML
// `tools: [{class_name, config, tool_schema}]`, docs/tools.md) or from built-in names.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tools/tool_call.h"

namespace grpo::tools {

// What one call may take: the runner's timeout and the most output bytes it reads before cutting the tool
// off (failure OutputTooLong).
struct ToolLimits {
  double timeout_s = 30;
  int64_t max_output_bytes = 1 << 20;
};

// An implementation. run() is called with arguments that already match the schema, from any worker thread
// (several at once); a tool's own failure is a ToolResult with its failure kind, never an exception.
class Tool {
 public:
  virtual ~Tool() = default;
  virtual ToolResult run(const nlohmann::json& arguments, const ToolLimits& limits) = 0;
};

struct ToolEntry {
  std::string name;        // tool_schema.function.name
  std::string class_name;  // as the config wrote it (built-ins: their class name)
  nlohmann::ordered_json schema;  // {"type": "function", "function": {name, description, parameters}}, key order kept
  std::shared_ptr<Tool> tool;
};

class ToolSet {
 public:
  // verl's tool config file; errors name the file, the tool's index and the field.
  static ToolSet load(const std::string& tool_config_path);
  // Built-ins by name ("calculator"); an unknown name is an error listing the built-ins.
  static ToolSet builtin(const std::vector<std::string>& names);
  // Adds a tool; a second tool of the same name is an error.
  void add(ToolEntry entry);

  nlohmann::json schemas() const;  // JSON array of the tools' function schemas
  // The same with the config's key order kept: what the chat template's `tools` takes (transformers prints
  // a schema's keys in the order the user wrote them).
  nlohmann::ordered_json template_tools() const;
  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  const std::vector<ToolEntry>& entries() const { return entries_; }
  const ToolEntry* find(std::string_view name) const;  // nullptr when there is none
  std::string names() const;                            // "calculator, search" (for error texts)

 private:
  std::vector<ToolEntry> entries_;
};

// The names of the built-in tools.
std::vector<std::string> builtin_tool_names();

}  // namespace grpo::tools
