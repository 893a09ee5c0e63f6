// Pre-tokenizers of tokenizer.json: a `Sequence` of `Split` steps (regex or literal pattern; behaviours
// Removed / Isolated / MergedWithPrevious / MergedWithNext / Contiguous; invert) ending with `ByteLevel`
// (add_prefix_space, use_regex with the GPT-2 pattern). Splits a normalized text into the words that BPE
// encodes; the byte-level mapping itself is done by BPE, which works on raw bytes.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/regex.h"

namespace grpo {

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// One Split step: pieces are cut at the matches of `regex` (or occurrences of `literal`).
class SplitStep {
 public:
  SplitStep(std::optional<Regex> regex, std::string literal, SplitBehavior behavior, bool invert);
  // Appends the non-empty pieces of `text` to out (views into text).
  void apply(std::string_view text, std::vector<std::string_view>& out) const;

 private:
  std::optional<Regex> regex_;
  std::string literal_;
  SplitBehavior behavior_;
  bool invert_;
};

class PreTokenizer {
 public:
  // From tokenizer.json's "pre_tokenizer" value; `where` names it in errors. The sequence must end with
  // ByteLevel (only byte-level BPE is supported).
  static PreTokenizer from_json(const nlohmann::json& j, const std::string& where);
  // Appends the words of `text` to out. Views point into `text` or, when a prefix space is added, into
  // `storage` (which the call overwrites; keep it alive while the views are used).
  void split(std::string_view text, std::string& storage, std::vector<std::string_view>& out) const;

 private:
  PreTokenizer() = default;

  std::vector<SplitStep> steps_before_byte_level_;  // the Split steps before ByteLevel
  std::vector<SplitStep> byte_level_steps_;          // ByteLevel's own GPT-2 split when use_regex
  bool add_prefix_space_ = false;
};

}  // namespace grpo
