// The variables transformers' apply_chat_template passes to a chat template.
#pragma once
#include "tokenizer/jinja/value.h"

namespace grpo::jinja {

// messages (a list), tools (None when absent), documents (None), add_generation_prompt, and every entry of
// `extra` (a dict or None: enable_thinking, bos_token, eos_token, ...). Throws grpo::Error on input of the
// wrong shape.
Value chat_context(const Value& messages, const Value& tools, bool add_generation_prompt, const Value& extra);

}  // namespace grpo::jinja
