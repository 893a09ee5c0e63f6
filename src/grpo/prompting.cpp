// Prompt and response encoding (see prompting.h).
#include "grpo/prompting.h"

#include "core/error.h"

namespace grpo {

std::string prompt_text(const Tokenizer& tok, const Example& ex, bool apply_chat_template) {
  if (!apply_chat_template) {
    GRPO_CHECK(ex.messages.is_null(),
               "chat turns (`messages`, or verl's `prompt` list) need data.apply_chat_template: true (the model's "
               "chat template)");
    return ex.prompt;
  }
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!ex.messages.is_null())
    messages = nlohmann::ordered_json::parse(ex.messages.dump());
  else
    messages.push_back({{"role", "user"}, {"content", ex.prompt}});
  return tok.apply_chat_template(messages, nullptr, /*add_generation_prompt=*/true,
                                 nlohmann::ordered_json::object({{"enable_thinking", false}}));
}

std::vector<int32_t> encode_prompt(const Tokenizer& tok, const Example& ex, bool apply_chat_template) {
  return tok.encode(prompt_text(tok, ex, apply_chat_template));
}

int32_t response_end_id(const Tokenizer& tok, bool apply_chat_template) {
  int32_t im_end = tok.token_to_id("<|im_end|>");
  if (apply_chat_template && im_end >= 0) return im_end;
  GRPO_CHECK(tok.eos_id() >= 0, "[data] the tokenizer has no end-of-sequence token (eos_token in tokenizer_config.json)");
  return tok.eos_id();
}

std::vector<int32_t> encode_response(const Tokenizer& tok, const std::string& response, bool apply_chat_template) {
  std::vector<int32_t> ids = tok.encode(response);
  ids.push_back(response_end_id(tok, apply_chat_template));
  return ids;
}

}  // namespace grpo
