// Tool sets from verl's tool config YAML or from built-in names (see tool_set.h, docs/tools.md).
// A tool config entry is {class_name, config, tool_schema}; class_name picks our implementation:
//   grpo.tools.Calculator   the built-in calculator (tool_schema optional: the built-in one)
//   grpo.tools.CommandTool  config.command: a shell command (command_tool.h)
//   grpo.tools.PythonTool   config.path + config.function (default: the tool's name), config.workers
// verl's config.type (native) is accepted and ignored.
#include "tools/tool_set.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "core/error.h"
#include "tools/calculator.h"
#include "tools/command_tool.h"
#include "tools/python_tool.h"
#include "tools/tool_schema.h"

namespace grpo::tools {

namespace {

constexpr const char* kCalculatorClass = "grpo.tools.Calculator";
constexpr const char* kCommandClass = "grpo.tools.CommandTool";
constexpr const char* kPythonClass = "grpo.tools.PythonTool";
constexpr int64_t kDefaultPythonWorkers = 2;

// A YAML value as JSON with the mapping's key order kept: plain scalars that read as integers, numbers,
// booleans or null become those, quoted ones stay text.
nlohmann::ordered_json yaml_value(const YAML::Node& node) {
  if (node.IsMap()) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    for (const auto& item : node) j[item.first.Scalar()] = yaml_value(item.second);
    return j;
  }
  if (node.IsSequence()) {
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    for (const auto& item : node) j.push_back(yaml_value(item));
    return j;
  }
  if (!node.IsScalar()) return nullptr;
  const std::string& s = node.Scalar();
  if (node.Tag() == "!") return s;
  const auto parsed = nlohmann::ordered_json::parse(s, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_number()) return parsed;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (s == "null" || s == "~" || s == "Null" || s == "NULL") return nullptr;
  return s;
}

std::string string_field(const nlohmann::ordered_json& config, const char* key, const std::string& where,
                         const std::string& fallback, bool required) {
  if (!config.contains(key)) {
    GRPO_CHECK(!required, where, ": config.", key, " is missing");
    return fallback;
  }
  GRPO_CHECK(config[key].is_string() && !config[key].get<std::string>().empty(), where, ": config.", key,
             " must be a non-empty string");
  return config[key].get<std::string>();
}

void only_keys(const nlohmann::ordered_json& config, std::initializer_list<const char*> keys, const std::string& where,
               const std::string& class_name) {
  for (const auto& [key, value] : config.items()) {
    bool known = key == "type";  // verl's `type: native`
    for (const char* k : keys) known = known || key == k;
    std::string allowed = "type";
    for (const char* k : keys) allowed += cat(", ", k);
    GRPO_CHECK(known, where, ": config.", key, " is not a setting of ", class_name, " (it takes ", allowed, ")");
  }
}

ToolEntry entry_of(const nlohmann::ordered_json& item, const std::string& where) {
  GRPO_CHECK(item.is_object(), where, ": expected a mapping {class_name, config, tool_schema}");
  GRPO_CHECK(item.contains("class_name") && item["class_name"].is_string(), where, ": class_name is missing (one of ",
             kCalculatorClass, ", ", kCommandClass, ", ", kPythonClass, ")");
  for (const auto& [key, value] : item.items())
    GRPO_CHECK(key == "class_name" || key == "config" || key == "tool_schema", where, ": unknown key \"", key,
               "\" (a tool has class_name, config and tool_schema)");
  ToolEntry e;
  e.class_name = item["class_name"].get<std::string>();
  const nlohmann::ordered_json config = item.contains("config") && !item["config"].is_null()
                                            ? item["config"]
                                            : nlohmann::ordered_json::object();
  GRPO_CHECK(config.is_object(), where, ": config must be a mapping");
  if (e.class_name == kCalculatorClass) {
    only_keys(config, {}, where, e.class_name);
    e.schema = item.contains("tool_schema") ? item["tool_schema"] : calculator_schema();
  } else {
    GRPO_CHECK(e.class_name == kCommandClass || e.class_name == kPythonClass, where, ": class_name \"", e.class_name,
               "\" is not one of ours: ", kCalculatorClass, " (built-in), ", kCommandClass, " (config.command), ",
               kPythonClass, " (config.path, config.function); a verl BaseTool class is Python code: write its "
               "execute() as a function for ", kPythonClass, " (docs/tools.md)");
    GRPO_CHECK(item.contains("tool_schema"), where, ": tool_schema is missing (an OpenAI function schema)");
    e.schema = item["tool_schema"];
  }
  check_tool_schema(e.schema, where);
  e.name = e.schema["function"]["name"].get<std::string>();
  const std::string named = cat(where, " (", e.name, ")");
  if (e.class_name == kCalculatorClass) {
    e.tool = make_calculator();
  } else if (e.class_name == kCommandClass) {
    only_keys(config, {"command"}, named, e.class_name);
    e.tool = make_command_tool(e.name, string_field(config, "command", named, "", true));
  } else {
    only_keys(config, {"path", "function", "workers"}, named, e.class_name);
    int64_t workers = kDefaultPythonWorkers;
    if (config.contains("workers")) {
      GRPO_CHECK(config["workers"].is_number_integer(), named, ": config.workers must be an integer");
      workers = config["workers"].get<int64_t>();
    }
    e.tool = make_python_tool(e.name, string_field(config, "path", named, "", true),
                              string_field(config, "function", named, e.name, false), workers, named);
  }
  return e;
}

}  // namespace

std::vector<std::string> builtin_tool_names() { return {"calculator"}; }

ToolSet ToolSet::load(const std::string& path) {
  const std::string where = cat("[tools] ", path);
  std::error_code ec;
  GRPO_CHECK(std::filesystem::is_regular_file(path, ec), where,
             ": no such file (actor_rollout_ref.rollout.multi_turn.tool_config_path)");
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    fail(where, ": not valid YAML: ", e.what());
  }
  GRPO_CHECK(root.IsMap() && root["tools"] && root["tools"].IsSequence(), where,
             ": expected a mapping with a list `tools: [{class_name, config, tool_schema}, ...]`");
  ToolSet set;
  size_t index = 0;
  for (const auto& node : root["tools"]) {
    set.add(entry_of(yaml_value(node), cat(where, ": tools[", index, "]")));
    ++index;
  }
  GRPO_CHECK(!set.empty(), where, ": `tools` is empty");
  return set;
}

ToolSet ToolSet::builtin(const std::vector<std::string>& names) {
  ToolSet set;
  for (const auto& name : names) {
    GRPO_CHECK(name == "calculator", "[tools] unknown built-in tool \"", name, "\" (built-ins: calculator)");
    set.add(ToolEntry{name, kCalculatorClass, calculator_schema(), make_calculator()});
  }
  return set;
}

void ToolSet::add(ToolEntry entry) {
  GRPO_CHECK(find(entry.name) == nullptr, "[tools] two tools are named \"", entry.name, "\"");
  entries_.push_back(std::move(entry));
}

nlohmann::json ToolSet::schemas() const { return nlohmann::json::parse(template_tools().dump()); }

nlohmann::ordered_json ToolSet::template_tools() const {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& e : entries_) out.push_back(e.schema);
  return out;
}

const ToolEntry* ToolSet::find(std::string_view name) const {
  for (const auto& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

std::string ToolSet::names() const {
  std::string s;
  for (const auto& e : entries_) s += (s.empty() ? "" : ", ") + e.name;
  return s;
}

}  // namespace grpo::tools
