// Incremental detokenisation of a sample's generated tokens and stop-string matching on the text.
// The tokenizer is reached only through a decode callback (token ids -> UTF-8 text), so the engine does not
// depend on it. Text is emitted once it stops changing: each new token decodes a small window of the
// latest tokens, and output that ends in an incomplete UTF-8 sequence (U+FFFD) is held back.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace grpo::rollout {

using DecodeFn = std::function<std::string(std::span<const int32_t>)>;

class IncrementalText {
 public:
  IncrementalText(const DecodeFn* decode, const std::vector<std::string>* stop_strings);
  // `tokens` are all generated tokens so far, the newest last. Returns true when a stop string has
  // appeared: text() then ends just before it.
  bool push(std::span<const int32_t> tokens);
  // Emits what was held back (the sample ended). Returns true when that completed a stop string.
  bool flush(std::span<const int32_t> tokens);
  // Appends `inserted`, the text of tokens inserted up to `tokens_end` (a multi-turn reply): it is never
  // matched against the stop strings, and the next push() decodes from tokens_end.
  void insert(std::string_view inserted, size_t tokens_end);
  const std::string& text() const { return text_; }
  std::string take_text() { return std::move(text_); }

 private:
  bool append_and_match(std::string_view delta);
  const DecodeFn* decode_;
  const std::vector<std::string>* stops_;
  size_t longest_stop_ = 0;
  size_t prefix_offset_ = 0, read_offset_ = 0;  // token window: [prefix, read) decoded already, [read, ..) new
  std::string text_;
  size_t match_from_ = 0;  // stop strings are looked for from here (after inserted text)
};

}  // namespace grpo::rollout
