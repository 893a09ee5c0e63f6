// Prompt and response encoding (see prompting.h).
#include "data/prompting.h"

#include "core/error.h"
#include "data/vision_data.h"

namespace grpo {

std::string prompt_text(const Tokenizer& tok, const Example& ex, bool apply_chat_template,
                        const nlohmann::ordered_json* tools) {
  if (!apply_chat_template) {
    GRPO_CHECK(ex.messages.is_null(),
               "chat turns (`messages`, or verl's `prompt` list) need data.apply_chat_template: true (the model's "
               "chat template)");
    GRPO_CHECK(ex.tools.is_null(), "rows with `tools` need data.apply_chat_template: true (the chat template shows "
               "the model its tools)");
    return ex.has_image_key ? plain_vision_prompt(ex.prompt) : ex.prompt;
  }
  // The run's tools (the ones that answer), else the row's own.
  return tok.apply_chat_template(template_messages(ex), tools ? *tools : ex.tools, /*add_generation_prompt=*/true,
                                 nlohmann::ordered_json::object({{"enable_thinking", false}}));
}

std::vector<int32_t> encode_prompt(const Tokenizer& tok, const Example& ex, bool apply_chat_template,
                                   const ImageProcessorConfig* images, const nlohmann::ordered_json* tools) {
  std::vector<int32_t> ids = tok.encode(prompt_text(tok, ex, apply_chat_template, tools));
  if (ex.images.empty()) return ids;
  GRPO_CHECK(images, "[data] the row has pictures but the model has no preprocessor_config.json");
  return expand_picture_pads(tok, ids, ex.image_grids, images->merge_size, "[data] prompt");
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
