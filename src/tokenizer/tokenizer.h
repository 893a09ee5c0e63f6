// The tokenizer of a Hugging Face model folder: tokenizer.json (byte-level BPE, added tokens, NFC,
// Split/ByteLevel pre-tokenizers, ByteLevel decoder, optional TemplateProcessing post-processor) plus
// tokenizer_config.json (eos/pad/bos tokens, add_bos_token/add_eos_token, chat_template). Encodes and
// decodes exactly like the Rust `tokenizers` library; unsupported components are rejected by name.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/chat_template.h"

namespace grpo {

class Tokenizer {
 public:
  // `path` is a folder (tokenizer.json + optional tokenizer_config.json) or a tokenizer.json file.
  static Tokenizer load(const std::string& path);
  // From the texts of tokenizer.json and tokenizer_config.json ("" = none); `source` names them in errors.
  static Tokenizer from_json_text(const std::string& tokenizer_json, const std::string& config_json,
                                  const std::string& source);

  // Encodes UTF-8 text (throws grpo::Error when it is not valid UTF-8). add_special_tokens adds what
  // the post-processor / add_bos_token ask for (Qwen: nothing). Thread-safe.
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = false) const;
  // Encodes many texts with all cores (OpenMP); results in input order.
  std::vector<std::vector<int32_t>> encode_batch(const std::vector<std::string>& texts,
                                                 bool add_special_tokens = false) const;
  // Decodes ids to text; invalid UTF-8 byte sequences become U+FFFD. Throws on ids outside the vocabulary.
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = false) const;

  int32_t token_to_id(std::string_view token) const;  // -1 if none
  std::string id_to_token(int32_t id) const;          // "" if none
  int64_t vocab_size() const;                         // max id + 1 incl. added tokens
  int32_t eos_id() const;
  int32_t pad_id() const;
  int32_t bos_id() const;
  std::vector<int32_t> stop_ids() const;  // eos + <|im_end|>/<|endoftext|> when present
  const std::string& chat_template() const;
  bool is_special(int32_t id) const;
  // Raw bytes that id contributes to decoded text (may be part of a UTF-8 character).
  const std::string& token_bytes(int32_t id) const;

  // Renders messages with the model's chat template (bos_token / eos_token in the context).
  std::string apply_chat_template(const ChatTemplateInput& in) const;
  // The same from JSON that keeps object key order, as Python's json does: tool schemas and tool-call
  // arguments print in their given key order (ChatTemplateInput's nlohmann::json sorts keys).
  std::string apply_chat_template(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                  bool add_generation_prompt, const nlohmann::ordered_json& extra) const;

  struct Impl;

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

// Incremental decoding for generation: push(id) returns the text completed by that token and never half
// a UTF-8 character; the concatenation of all pushes and flush() equals decode(all ids).
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& t, bool skip_special_tokens = false);
  std::string push(int32_t id);
  // Emits any incomplete tail (as U+FFFD) and resets.
  std::string flush();

 private:
  Tokenizer tokenizer_;
  bool skip_special_tokens_;
  std::string pending_;  // bytes of an incomplete character
};

}  // namespace grpo
