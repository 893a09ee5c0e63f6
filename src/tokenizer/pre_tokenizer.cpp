// Implementation of the pre-tokenizers (see pre_tokenizer.h), following Hugging Face tokenizers'
// NormalizedString::split and PreTokenizedString semantics (empty pieces are dropped).
#include "tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <utility>

#include "core/error.h"
#include "tokenizer/json_fields.h"

namespace grpo {
namespace {

// The regex of ByteLevel with use_regex = true (GPT-2).
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct Span {
  size_t begin, end;
  bool flag;  // is a match (before behaviours) / is to be removed (after)
};

SplitBehavior parse_behavior(const nlohmann::json& j, const std::string& where) {
  if (!j.is_string()) fail("[tokenizer] ", where, ".behavior: expected a string");
  const std::string s = j.get<std::string>();
  if (s == "Removed") return SplitBehavior::kRemoved;
  if (s == "Isolated") return SplitBehavior::kIsolated;
  if (s == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (s == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (s == "Contiguous") return SplitBehavior::kContiguous;
  fail("[tokenizer] ", where, ".behavior: \"", s,
       "\" is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous");
}

SplitStep parse_split(const nlohmann::json& j, const std::string& where) {
  const nlohmann::json* pattern = j.contains("pattern") ? &j["pattern"] : nullptr;
  if (!pattern || !pattern->is_object() || pattern->size() != 1)
    fail("[tokenizer] ", where, ".pattern: expected {\"Regex\": ...} or {\"String\": ...}");
  const bool invert = json_bool(j, "invert", false, where);
  if (!j.contains("behavior")) fail("[tokenizer] ", where, ": missing \"behavior\"");
  const SplitBehavior behavior = parse_behavior(j["behavior"], where);
  const std::string kind = pattern->begin().key();
  const nlohmann::json& value = pattern->begin().value();
  if (!value.is_string()) fail("[tokenizer] ", where, ".pattern.", kind, ": expected a string");
  const std::string text = value.get<std::string>();
  if (kind == "Regex") return SplitStep(Regex(text, where + ".pattern.Regex"), "", behavior, invert);
  if (kind == "String") {
    if (text.empty()) fail("[tokenizer] ", where, ".pattern.String: an empty pattern is not supported");
    return SplitStep(std::nullopt, text, behavior, invert);
  }
  fail("[tokenizer] ", where, ".pattern: \"", kind, "\" is not Regex or String");
}

}  // namespace

SplitStep::SplitStep(std::optional<Regex> regex, std::string literal, SplitBehavior behavior, bool invert)
    : regex_(std::move(regex)), literal_(std::move(literal)), behavior_(behavior), invert_(invert) {}

void SplitStep::apply(std::string_view text, std::vector<std::string_view>& out) const {
  if (text.empty()) return;
  thread_local std::vector<std::pair<size_t, size_t>> matches;
  thread_local std::vector<Span> spans, merged;
  matches.clear();
  if (regex_) {
    regex_->find_all(text, matches);
  } else {
    for (size_t pos = text.find(literal_); pos != std::string_view::npos; pos = text.find(literal_, pos)) {
      matches.emplace_back(pos, pos + literal_.size());
      pos += literal_.size();
    }
  }
  // Alternating (span, is_match) over the whole text.
  spans.clear();
  size_t prev = 0;
  for (const auto& [b, e] : matches) {
    if (b != prev) spans.push_back({prev, b, invert_});
    spans.push_back({b, e, !invert_});
    prev = e;
  }
  if (prev != text.size()) spans.push_back({prev, text.size(), invert_});

  // Turn is_match into should_remove according to the behaviour.
  merged.clear();
  switch (behavior_) {
    case SplitBehavior::kRemoved:
      merged = spans;
      break;
    case SplitBehavior::kIsolated:
      for (const Span& s : spans) merged.push_back({s.begin, s.end, false});
      break;
    case SplitBehavior::kContiguous: {
      bool previous_match = false;
      for (const Span& s : spans) {
        if (s.flag == previous_match && !merged.empty())
          merged.back().end = s.end;
        else
          merged.push_back({s.begin, s.end, false});
        previous_match = s.flag;
      }
      break;
    }
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const Span& s : spans) {
        if (s.flag && !previous_match && !merged.empty())
          merged.back().end = s.end;
        else
          merged.push_back({s.begin, s.end, false});
        previous_match = s.flag;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool previous_match = false;
      for (size_t k = spans.size(); k-- > 0;) {
        const Span& s = spans[k];
        if (s.flag && !previous_match && !merged.empty())
          merged.back().begin = s.begin;
        else
          merged.push_back({s.begin, s.end, false});
        previous_match = s.flag;
      }
      std::reverse(merged.begin(), merged.end());
      break;
    }
  }
  for (const Span& s : merged)
    if (!s.flag && s.end > s.begin) out.push_back(text.substr(s.begin, s.end - s.begin));
}

PreTokenizer PreTokenizer::from_json(const nlohmann::json& j, const std::string& where) {
  // Flatten nested Sequences into a list of (step json, where).
  std::vector<std::pair<const nlohmann::json*, std::string>> flat;
  auto flatten = [&](auto&& self, const nlohmann::json& node, const std::string& path) -> void {
    if (!node.is_object() || !node.contains("type") || !node["type"].is_string())
      fail("[tokenizer] ", path, ": expected an object with a \"type\"");
    if (node["type"] == "Sequence") {
      if (!node.contains("pretokenizers") || !node["pretokenizers"].is_array())
        fail("[tokenizer] ", path, ".pretokenizers: expected an array");
      for (size_t k = 0; k < node["pretokenizers"].size(); ++k)
        self(self, node["pretokenizers"][k], cat(path, ".pretokenizers[", k, "]"));
    } else {
      flat.emplace_back(&node, path);
    }
  };
  if (j.is_null()) fail("[tokenizer] ", where, ": null; only byte-level BPE (a ByteLevel pre_tokenizer) is supported");
  flatten(flatten, j, where);

  PreTokenizer result;
  bool seen_byte_level = false;
  for (const auto& [node, path] : flat) {
    const std::string type = (*node)["type"].get<std::string>();
    if (seen_byte_level)
      fail("[tokenizer] ", path, ": pre-tokenizer \"", type, "\" after ByteLevel is not supported");
    if (type == "Split") {
      result.steps_before_byte_level_.push_back(parse_split(*node, path));
    } else if (type == "ByteLevel") {
      seen_byte_level = true;
      result.add_prefix_space_ = json_bool(*node, "add_prefix_space", true, path);
      if (json_bool(*node, "use_regex", true, path))
        result.byte_level_steps_.emplace_back(Regex(kGpt2Pattern, path + " (GPT-2 pattern)"), "",
                                              SplitBehavior::kIsolated, false);
    } else {
      fail("[tokenizer] ", path, ": pre-tokenizer type \"", type,
           "\" is not supported (supported: Sequence, Split, ByteLevel)");
    }
  }
  if (!seen_byte_level)
    fail("[tokenizer] ", where, ": no ByteLevel pre-tokenizer; only byte-level BPE is supported");
  return result;
}

void PreTokenizer::split(std::string_view text, std::string& storage, std::vector<std::string_view>& out) const {
  if (text.empty()) return;
  thread_local std::vector<std::string_view> current, next;
  current.clear();
  current.push_back(text);
  for (const SplitStep& step : steps_before_byte_level_) {
    next.clear();
    for (std::string_view piece : current) step.apply(piece, next);
    std::swap(current, next);
  }
  if (add_prefix_space_) {
    // Every piece that does not start with a space gets one; rebuild the pieces inside `storage`.
    storage.clear();
    size_t total = 0;
    for (std::string_view piece : current) total += piece.size() + 1;
    storage.reserve(total);
    for (std::string_view& piece : current) {
      const size_t start = storage.size();
      if (piece.empty() || piece.front() != ' ') storage.push_back(' ');
      storage.append(piece);
      piece = std::string_view(storage).substr(start);
    }
  }
  if (byte_level_steps_.empty()) {
    for (std::string_view piece : current)
      if (!piece.empty()) out.push_back(piece);
    return;
  }
  for (std::string_view piece : current)
    for (const SplitStep& step : byte_level_steps_) step.apply(piece, out);
}

}  // namespace grpo
