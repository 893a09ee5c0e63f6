// A tokenizer for models trained from scratch (`grpo init`): the 256 bytes as tokens (ids 0-255, written
// as their GPT-2 byte-level strings, BPE with no merges, ByteLevel pre-tokenizer and decoder) plus the
// ChatML special tokens (and, for vision-language models, the vision tokens), saved as tokenizer.json +
// tokenizer_config.json that Hugging Face `tokenizers` and `transformers` load as they are.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace grpo {

// Added tokens after the 256 bytes, in id order: <|endoftext|> 256, <|im_start|> 257, <|im_end|> 258,
// <think> 259, </think> 260; the vision tokenizer adds <|vision_start|> 261, <|vision_end|> 262,
// <|image_pad|> 263, <|video_pad|> 264.
const std::vector<std::string>& byte_tokenizer_added_tokens(bool vision = false);
constexpr int64_t kByteTokenizerVocab = 261;        // ids 0..260
constexpr int64_t kByteTokenizerVisionVocab = 265;  // ids 0..264
constexpr int32_t kByteVisionStartId = 261, kByteVisionEndId = 262, kByteImagePadId = 263, kByteVideoPadId = 264;

// Writes tokenizer.json and tokenizer_config.json (eos <|im_end|>, pad <|endoftext|>, a ChatML
// chat_template like Qwen's) into dir (created if needed), each file atomically. `vision`: with the
// vision tokens and the vision-language template of tokenizer/vl_chat_template.h.
void write_byte_tokenizer(const std::string& dir, bool vision = false);

}  // namespace grpo
