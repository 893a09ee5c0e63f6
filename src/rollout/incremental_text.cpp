// Incremental detokenisation and stop-string matching (see incremental_text.h).
#include "rollout/incremental_text.h"

#include <algorithm>

namespace grpo::rollout {

namespace {
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD: an incomplete UTF-8 sequence
}

IncrementalText::IncrementalText(const DecodeFn* decode, const std::vector<std::string>* stop_strings)
    : decode_(decode), stops_(stop_strings) {
  for (const std::string& s : *stops_) longest_stop_ = std::max(longest_stop_, s.size());
}

bool IncrementalText::append_and_match(std::string_view delta) {
  const size_t old_size = text_.size();
  text_ += delta;
  if (stops_->empty()) return false;
  // a stop string that ends in the new text starts at most longest-1 bytes before it
  const size_t from = std::max(match_from_, old_size >= longest_stop_ ? old_size - longest_stop_ + 1 : 0);
  size_t first = std::string::npos;
  for (const std::string& s : *stops_) first = std::min(first, text_.find(s, from));
  if (first == std::string::npos) return false;
  text_.resize(first);
  return true;
}

void IncrementalText::insert(std::string_view inserted, size_t tokens_end) {
  text_ += inserted;
  match_from_ = text_.size();
  prefix_offset_ = read_offset_ = tokens_end;
}

bool IncrementalText::push(std::span<const int32_t> tokens) {
  if (!decode_ || !*decode_) return false;
  const std::string before = (*decode_)(tokens.subspan(prefix_offset_, read_offset_ - prefix_offset_));
  const std::string now = (*decode_)(tokens.subspan(prefix_offset_));
  if (now.size() <= before.size() || now.ends_with(kReplacement)) return false;
  prefix_offset_ = read_offset_;
  read_offset_ = tokens.size();
  return append_and_match(std::string_view(now).substr(before.size()));
}

bool IncrementalText::flush(std::span<const int32_t> tokens) {
  if (!decode_ || !*decode_ || read_offset_ == tokens.size()) return false;
  const std::string before = (*decode_)(tokens.subspan(prefix_offset_, read_offset_ - prefix_offset_));
  const std::string now = (*decode_)(tokens.subspan(prefix_offset_));
  prefix_offset_ = read_offset_ = tokens.size();
  if (now.size() <= before.size()) return false;
  return append_and_match(std::string_view(now).substr(before.size()));
}

}  // namespace grpo::rollout
