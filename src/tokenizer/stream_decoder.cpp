// StreamDecoder (see tokenizer.h): holds back the bytes of an incomplete UTF-8 character until the next
// token completes it; bytes that can never become a character are replaced by U+FFFD at once, exactly as
// decode() would replace them.
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace grpo {

StreamDecoder::StreamDecoder(const Tokenizer& t, bool skip_special_tokens)
    : tokenizer_(t), skip_special_tokens_(skip_special_tokens) {}

std::string StreamDecoder::push(int32_t id) {
  const std::string& bytes = tokenizer_.token_bytes(id);
  if (skip_special_tokens_ && tokenizer_.is_special(id)) return "";
  pending_.append(bytes);
  const size_t keep = utf8::incomplete_tail_length(pending_);
  std::string text;
  utf8::append_lossy(text, std::string_view(pending_).substr(0, pending_.size() - keep));
  pending_.erase(0, pending_.size() - keep);
  return text;
}

std::string StreamDecoder::flush() {
  std::string text;
  utf8::append_lossy(text, pending_);
  pending_.clear();
  return text;
}

}  // namespace grpo
