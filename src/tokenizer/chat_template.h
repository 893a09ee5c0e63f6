// Chat templates: renders a model's own Jinja `chat_template` (from tokenizer_config.json) exactly as
// Hugging Face transformers does (sandboxed Jinja2, trim_blocks, lstrip_blocks, loop controls, tojson
// without ASCII escaping, raise_exception). Implemented by the Jinja subset in tokenizer/jinja/.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace grpo {

struct ChatTemplateInput {
  nlohmann::json messages = nlohmann::json::array();  // [{role, content, tool_calls?, reasoning_content?}]
  nlohmann::json tools;                              // null or array of tool schemas
  bool add_generation_prompt = false;
  nlohmann::json extra = nlohmann::json::object();   // e.g. {"enable_thinking": false}; bos_token, eos_token
};

// Renders `source` (the template text). Errors (syntax, unsupported feature, raise_exception) throw
// grpo::Error naming `template_name` and the template line.
std::string render_chat_template(const std::string& source, const ChatTemplateInput& input,
                                 const std::string& template_name = "chat_template");

}  // namespace grpo
