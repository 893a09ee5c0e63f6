// Shared by the tokenizer tests: the Qwen3 tokenizer from shared/models (loaded once per test binary)
// and small tokenizer.json documents built in code (a 256-byte vocabulary plus chosen merges).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"

namespace grpo {

inline const Tokenizer& qwen3_tokenizer() {
  static const Tokenizer tok = Tokenizer::load(std::string(GRPO_SHARED_DIR) + "/models/qwen3-tokenizer");
  return tok;
}

// tokenizer.json with ids 0..255 = the byte-level characters of bytes 0..255, then one token per merge
// (in order, ids 256, 257, ...). Merges are {left, right} in byte-level spelling.
inline nlohmann::json tiny_tokenizer_json(const std::vector<std::pair<std::string, std::string>>& merges,
                                          const nlohmann::json& added_tokens = nlohmann::json::array()) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_level::encode(std::string(1, static_cast<char>(b)))] = b;
  nlohmann::json merge_list = nlohmann::json::array();
  for (const auto& [l, r] : merges) {
    if (!vocab.contains(l + r)) vocab[l + r] = static_cast<int>(vocab.size());
    merge_list.push_back(l + " " + r);
  }
  return {
      {"version", "1.0"},
      {"added_tokens", added_tokens},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merge_list}}},
  };
}

inline Tokenizer tiny_tokenizer(const nlohmann::json& j, const std::string& config = "") {
  return Tokenizer::from_json_text(j.dump(), config, "tiny tokenizer.json");
}

}  // namespace grpo
