// Added tokens of tokenizer.json (special tokens like <|im_end|> and extra tokens like <think>): found in
// the text before anything else, leftmost-longest like Hugging Face's Aho-Corasick matcher, with the
// single_word / lstrip / rstrip options.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace grpo {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;  // matched in the normalized text (else in the raw text)
  bool special = false;     // dropped by decode(skip_special_tokens)
};

// A piece of text: either an added token (id >= 0) or plain text to normalize and encode (id = -1).
struct TextSegment {
  size_t begin = 0, end = 0;
  int32_t id = -1;
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  // `tokens` are matched by their `content`, which the caller has already normalized when needed.
  explicit AddedTokenMatcher(std::vector<AddedToken> tokens);

  bool empty() const { return tokens_.empty(); }
  // Appends the segments of `text` (covering it, in order) to out.
  void split(std::string_view text, std::vector<TextSegment>& out) const;

 private:
  // Index of the longest token that starts at text[pos], or -1.
  int32_t longest_at(std::string_view text, size_t pos) const;

  std::vector<AddedToken> tokens_;
  // Byte trie: node 0 is the root; edges_ maps (node << 8 | byte) to the child node.
  std::unordered_map<uint64_t, int32_t> edges_;
  std::vector<int32_t> terminal_;  // node -> index into tokens_, or -1
  std::array<bool, 256> first_byte_{};
};

}  // namespace grpo
