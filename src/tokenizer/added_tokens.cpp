// Implementation of added-token matching (see added_tokens.h), mirroring Hugging Face tokenizers'
// AddedVocabulary::find_matches: non-overlapping leftmost-longest matches; single_word tokens only count
// between non-word characters; lstrip / rstrip extend a match over the whitespace next to it.
#include "tokenizer/added_tokens.h"

#include <utf8proc.h>

#include <algorithm>

#include "tokenizer/utf8.h"

namespace grpo {
namespace {

// Rust's char::is_whitespace (the Unicode White_Space property).
bool is_whitespace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// Letters, digits and '_' (Rust's char::is_alphanumeric or '_').
bool is_word_char(char32_t c) {
  if (c == '_') return true;
  if (c < 0x80) return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  const utf8proc_category_t cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
         (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO);
}

// Offset of the code point that ends at `end` (end > 0) in valid UTF-8.
size_t previous_char_start(std::string_view s, size_t end) {
  size_t i = end - 1;
  while (i > 0 && (static_cast<uint8_t>(s[i]) & 0xC0) == 0x80) --i;
  return i;
}

char32_t char_at(std::string_view s, size_t i) { return utf8::next_code_point(s, i); }

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  terminal_.push_back(-1);
  for (size_t t = 0; t < tokens_.size(); ++t) {
    const std::string& content = tokens_[t].content;
    if (content.empty()) continue;
    first_byte_[static_cast<uint8_t>(content[0])] = true;
    int32_t node = 0;
    for (char ch : content) {
      const uint64_t key = (static_cast<uint64_t>(node) << 8) | static_cast<uint8_t>(ch);
      auto it = edges_.find(key);
      if (it == edges_.end()) {
        it = edges_.emplace(key, static_cast<int32_t>(terminal_.size())).first;
        terminal_.push_back(-1);
      }
      node = it->second;
    }
    // Like building the Aho-Corasick automaton from the list, the first token with a given content wins.
    if (terminal_[node] < 0) terminal_[node] = static_cast<int32_t>(t);
  }
}

int32_t AddedTokenMatcher::longest_at(std::string_view text, size_t pos) const {
  int32_t node = 0, best = -1;
  for (size_t i = pos; i < text.size(); ++i) {
    const auto it = edges_.find((static_cast<uint64_t>(node) << 8) | static_cast<uint8_t>(text[i]));
    if (it == edges_.end()) break;
    node = it->second;
    if (terminal_[node] >= 0) best = terminal_[node];
  }
  return best;
}

void AddedTokenMatcher::split(std::string_view text, std::vector<TextSegment>& out) const {
  size_t start_offset = 0;
  size_t pos = 0;
  while (pos < text.size() && !tokens_.empty()) {
    if (!first_byte_[static_cast<uint8_t>(text[pos])]) {
      ++pos;
      continue;
    }
    const int32_t t = longest_at(text, pos);
    if (t < 0) {
      ++pos;
      continue;
    }
    const AddedToken& token = tokens_[t];
    size_t start = pos, stop = pos + token.content.size();
    pos = stop;  // the search resumes after the match, whatever stripping does below
    if (token.single_word) {
      const bool start_space = start == 0 || !is_word_char(char_at(text, previous_char_start(text, start)));
      const bool stop_space = stop == text.size() || !is_word_char(char_at(text, stop));
      if (!start_space || !stop_space) continue;
    }
    if (token.lstrip) {
      size_t new_start = start;
      while (new_start > 0) {
        const size_t prev = previous_char_start(text, new_start);
        if (!is_whitespace(char_at(text, prev))) break;
        new_start = prev;
      }
      start = std::max(new_start, start_offset);
    }
    if (token.rstrip) {
      while (stop < text.size()) {
        size_t next = stop;
        if (!is_whitespace(utf8::next_code_point(text, next))) break;
        stop = next;
      }
    }
    if (start > start_offset) out.push_back({start_offset, start, -1});
    out.push_back({start, stop, token.id});
    start_offset = stop;
  }
  if (start_offset != text.size() || text.empty()) out.push_back({start_offset, text.size(), -1});
}

}  // namespace grpo
