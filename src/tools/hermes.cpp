// Hermes tool-call blocks (see hermes.h): verl's parser matches `<tool_call>(.*?)</tool_call>` and reads
// each as JSON {"name", "arguments"}; here a block that is not such a call is kept as a failed call, so that
// the model is told, in its tool turn, what was wrong.
#include "tools/hermes.h"

#include "core/error.h"
#include "tokenizer/jinja/json_io.h"

namespace grpo::tools {

namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";

std::string_view strip(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

// The bodies of the closed blocks, in order.
std::vector<std::string_view> blocks(std::string_view text) {
  std::vector<std::string_view> out;
  for (size_t at = 0;;) {
    const size_t open = text.find(kOpen, at);
    if (open == std::string_view::npos) break;
    const size_t body = open + kOpen.size();
    const size_t close = text.find(kClose, body);
    if (close == std::string_view::npos) break;
    out.push_back(text.substr(body, close - body));
    at = close + kClose.size();
  }
  return out;
}

std::string shorten(std::string_view s, size_t n = 200) {
  return s.size() <= n ? std::string(s) : std::string(s.substr(0, n)) + "...";
}

ParsedCall parse_block(std::string_view body) {
  ParsedCall p;
  const std::string_view json_text = strip(body);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::parse_error& e) {
    p.failure = ToolFailure::BadJson;
    p.error = cat("the tool call is not valid JSON (", e.what(), "): ", shorten(json_text));
    return p;
  }
  if (!j.is_object()) {
    p.failure = ToolFailure::BadJson;
    p.error = cat("the tool call must be a JSON object {\"name\": ..., \"arguments\": {...}}, got: ", shorten(json_text));
    return p;
  }
  if (!j.contains("name") || !j["name"].is_string() || j["name"].get<std::string>().empty()) {
    p.failure = ToolFailure::BadJson;
    p.error = cat("the tool call has no \"name\" string: ", shorten(json_text));
    return p;
  }
  p.call.name = j["name"].get<std::string>();
  if (!j.contains("arguments")) {
    p.failure = ToolFailure::BadArguments;
    p.error = cat(p.call.name, ": the tool call has no \"arguments\" object");
    return p;
  }
  p.call.arguments = j["arguments"];
  if (!p.call.arguments.is_object()) {
    p.failure = ToolFailure::BadArguments;
    p.error = cat(p.call.name, ": \"arguments\" must be a JSON object, got ", shorten(p.call.arguments.dump()));
  }
  return p;
}

}  // namespace

bool has_tool_call(std::string_view assistant_text) {
  const size_t open = assistant_text.find(kOpen);
  return open != std::string_view::npos && assistant_text.find(kClose, open + kOpen.size()) != std::string_view::npos;
}

std::vector<ParsedCall> parse_tool_calls(std::string_view assistant_text) {
  std::vector<ParsedCall> out;
  for (const std::string_view body : blocks(assistant_text)) out.push_back(parse_block(body));
  return out;
}

std::string format_tool_call(const ToolCall& call) {
  // Qwen3's template: {"name": "<name>", "arguments": <arguments|tojson>}, tojson as transformers' is.
  return cat("<tool_call>\n{\"name\": \"", call.name, "\", \"arguments\": ", jinja::to_json(jinja::from_json(call.arguments)),
             "}\n</tool_call>");
}

}  // namespace grpo::tools
