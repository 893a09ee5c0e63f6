// Turning dataset examples into token ids: the prompt (through the model's chat template with the
// generation prompt, or as plain text when data.apply_chat_template is false), with each picture's
// <|image_pad|> expanded to its token count (data/vision_data.h), and, for supervised fine-tuning, the
// response followed by the end-of-sequence token.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "image/preprocess.h"
#include "tokenizer/tokenizer.h"

namespace grpo {

// The text the model sees as the prompt (one <|image_pad|> per picture). `tools` (multi-turn rollouts): the
// tools' function schemas, the chat template's `tools` (null: the row's own `tools`, if any).
std::string prompt_text(const Tokenizer& tok, const Example& ex, bool apply_chat_template,
                        const nlohmann::ordered_json* tools = nullptr);
// Its ids; an example with pictures needs `images` (the model's preprocessor) and its image_grids.
std::vector<int32_t> encode_prompt(const Tokenizer& tok, const Example& ex, bool apply_chat_template,
                                   const ImageProcessorConfig* images = nullptr,
                                   const nlohmann::ordered_json* tools = nullptr);
// Response ids + the end-of-sequence id (the chat end token <|im_end|> when the template is used).
std::vector<int32_t> encode_response(const Tokenizer& tok, const std::string& response, bool apply_chat_template);
// The id that ends a response: <|im_end|> with a chat template, else the tokenizer's eos.
int32_t response_end_id(const Tokenizer& tok, bool apply_chat_template);

}  // namespace grpo
