// The tokenizer of a Hugging Face model folder as llama.cpp's GPT-2-style BPE metadata: tokenizer.ggml.model
// "gpt2", the pre-tokenizer name llama.cpp knows for the file's split (qwen2, llama-bpe, gpt-2), tokens
// (padded to the model's vocab_size with [PAD<id>]), token types, merges ("a b"), bos/eos/padding ids,
// add_bos_token / add_eos_token and the chat template.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "export/gguf_file.h"
#include "model/config.h"

namespace grpo::gguf {

// llama.cpp's token types (llama.h's llama_token_type).
enum TokenType : int32_t { kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5 };

struct Vocab {
  std::string pre;                       // tokenizer.ggml.pre
  std::vector<std::string> tokens;       // [vocab_size]
  std::vector<int32_t> types;            // [vocab_size] TokenType
  std::vector<std::string> merges;       // "left right", in rank order
  int32_t bos = -1, eos = -1, pad = -1;  // -1: none
  bool add_bos = false, add_eos = false;
  std::string chat_template;  // "" when the folder has none
};

// Reads dir/tokenizer.json (+ tokenizer_config.json) for a model of config c (its vocab_size pads the
// token list; its bos_token_id / eos_token_id fill what tokenizer_config.json leaves unset). Errors name
// the file and field, and a pre-tokenizer llama.cpp has no name for.
Vocab read_vocab(const std::string& dir, const ModelConfig& c);
// Adds the tokenizer.ggml.* keys (and tokenizer.chat_template) of v.
void add_vocab(Writer& w, const Vocab& v);

}  // namespace grpo::gguf
