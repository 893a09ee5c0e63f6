// Chat templates: renders a model's own Jinja `chat_template` (from tokenizer_config.json) exactly as
// Hugging Face transformers does (sandboxed Jinja2, trim_blocks, lstrip_blocks, loop controls, tojson
// without ASCII escaping, raise_exception). Implemented by the Jinja subset in tokenizer/jinja/.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace grpo {

struct ChatTemplateInput {
  // ordered_json keeps object keys in their given order, as Python dicts do (tool schemas print that way).
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();  // [{role, content, tool_calls?, ...}]
  nlohmann::ordered_json tools;  // null or array of tool schemas
  bool add_generation_prompt = false;
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();  // e.g. {"enable_thinking": false}
};

// Renders `source` (the template text). Errors (syntax, unsupported feature, raise_exception) throw
// grpo::Error naming `template_name` and the template line.
std::string render_chat_template(const std::string& source, const ChatTemplateInput& input,
                                 const std::string& template_name = "chat_template");

}  // namespace grpo
