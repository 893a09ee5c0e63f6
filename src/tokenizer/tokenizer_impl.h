// Internal state of Tokenizer shared by tokenizer.cpp (loading, encoding, decoding), the chat-template
// glue and the stream decoder. Not part of the public API.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace grpo {

struct Tokenizer::Impl {
  BpeModel model;
  std::optional<PreTokenizer> pre_tokenizer;
  bool nfc = false;
  std::vector<AddedToken> added;        // as listed in tokenizer.json
  AddedTokenMatcher raw_matcher;        // added tokens with normalized = false, matched in the raw text
  AddedTokenMatcher normalized_matcher; // the others, matched in the normalized text
  std::vector<std::string> id_to_added; // id -> content for added ids ("" otherwise)
  std::vector<std::string> bytes_of_id; // id -> raw bytes the decoder produces
  std::vector<uint8_t> special;         // id -> 1 when an added token with special = true
  std::vector<int32_t> prefix_ids, suffix_ids;  // added around the text when add_special_tokens
  int32_t eos = -1, pad = -1, bos = -1;
  std::string chat_template;
  std::string bos_token, eos_token;  // contents, for the chat template context
  std::string source;                // path named in errors

  void encode_into(std::string_view text, bool add_special_tokens, std::vector<int32_t>& out) const;
  bool valid_id(int32_t id) const { return id >= 0 && id < static_cast<int32_t>(bytes_of_id.size()); }
};

}  // namespace grpo
