// The variables transformers' apply_chat_template passes to a chat template, and a chat rendering entry
// point over nlohmann::ordered_json that keeps the key order of messages and tool schemas.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "tokenizer/jinja/value.h"

namespace grpo::jinja {

// messages (a list), tools (None when absent), documents (None), add_generation_prompt, and every entry of
// `extra` (a dict or None: enable_thinking, bos_token, eos_token, ...). Throws grpo::Error on input of the
// wrong shape.
Value chat_context(const Value& messages, const Value& tools, bool add_generation_prompt, const Value& extra);

// Like grpo::render_chat_template, but the inputs keep their key order (tool JSON schemas render their
// keys in the order given, as transformers does). `tools` and `extra` may be null.
std::string render_chat(const std::string& source, const nlohmann::ordered_json& messages,
                        const nlohmann::ordered_json& tools, bool add_generation_prompt,
                        const nlohmann::ordered_json& extra, const std::string& template_name = "chat_template");

}  // namespace grpo::jinja
