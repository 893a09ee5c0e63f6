// Pre-tokenizers: every Split behaviour with and without invert (expected pieces computed with Hugging
// Face tokenizers' Node binding), regex and literal patterns, ByteLevel's GPT-2 split and prefix space,
// and errors for unsupported ones.
#include <gtest/gtest.h>

#include "core/error.h"
#include "tokenizer/pre_tokenizer.h"

namespace grpo {
namespace {

using Pieces = std::vector<std::string>;

Pieces split(const nlohmann::json& j, std::string_view text) {
  const PreTokenizer p = PreTokenizer::from_json(j, "test pre_tokenizer");
  std::string storage;
  std::vector<std::string_view> views;
  p.split(text, storage, views);
  return Pieces(views.begin(), views.end());
}

nlohmann::json split_then_bytes(const std::string& behavior, bool invert, const nlohmann::json& pattern) {
  return {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Split"}, {"pattern", pattern}, {"behavior", behavior}, {"invert", invert}},
            {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
}

TEST(PreTokenizer, SplitBehaviours) {
  const std::string text = "the-final--countdown-";
  const nlohmann::json dash = {{"String", "-"}};
  EXPECT_EQ(split(split_then_bytes("Removed", false, dash), text), (Pieces{"the", "final", "countdown"}));
  EXPECT_EQ(split(split_then_bytes("Isolated", false, dash), text),
            (Pieces{"the", "-", "final", "-", "-", "countdown", "-"}));
  EXPECT_EQ(split(split_then_bytes("MergedWithPrevious", false, dash), text),
            (Pieces{"the-", "final-", "-", "countdown-"}));
  EXPECT_EQ(split(split_then_bytes("MergedWithNext", false, dash), text),
            (Pieces{"the", "-final", "-", "-countdown", "-"}));
  EXPECT_EQ(split(split_then_bytes("Contiguous", false, dash), text),
            (Pieces{"the", "-", "final", "--", "countdown", "-"}));
}

TEST(PreTokenizer, SplitBehavioursInverted) {
  const std::string text = "the-final--countdown-";
  const nlohmann::json dash = {{"Regex", "-"}};
  EXPECT_EQ(split(split_then_bytes("Removed", true, dash), text), (Pieces{"-", "-", "-", "-"}));
  EXPECT_EQ(split(split_then_bytes("Isolated", true, dash), text),
            (Pieces{"the", "-", "final", "-", "-", "countdown", "-"}));
  EXPECT_EQ(split(split_then_bytes("MergedWithPrevious", true, dash), text),
            (Pieces{"the", "-final", "-", "-countdown", "-"}));
  EXPECT_EQ(split(split_then_bytes("MergedWithNext", true, dash), text),
            (Pieces{"the-", "final-", "-", "countdown-"}));
  EXPECT_EQ(split(split_then_bytes("Contiguous", true, dash), text),
            (Pieces{"the", "-", "final", "--", "countdown", "-"}));
}

TEST(PreTokenizer, RegexWithUnicodePropertiesAndLookahead) {
  // Qwen's pattern: contractions, letters with one leading non-letter, single digits, whitespace rules.
  const nlohmann::json qwen = {
      {"Regex",
       R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}};
  EXPECT_EQ(split(split_then_bytes("Isolated", false, qwen), "I'LL pay 42\xE2\x82\xAC  now\n\n"),
            (Pieces{"I", "'LL", " pay", " ", "4", "2", "\xE2\x82\xAC", " ", " now", "\n\n"}));
  // U+180E is not whitespace for Oniguruma (Hugging Face's regex engine), unlike PCRE2's \s.
  EXPECT_EQ(split(split_then_bytes("Isolated", false, qwen), "a \xE1\xA0\x8E"), (Pieces{"a", " \xE1\xA0\x8E"}));
  // U+0085 (NEL) is.
  EXPECT_EQ(split(split_then_bytes("Isolated", false, qwen), "a\xC2\x85" "b"), (Pieces{"a", "\xC2\x85" "b"}));
}

TEST(PreTokenizer, ByteLevelGpt2RegexAndPrefixSpace) {
  const nlohmann::json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
  EXPECT_EQ(split(byte_level, "Hello  world's 42\n"), (Pieces{" Hello", " ", " world", "'s", " 42", "\n"}));
  // In a sequence, every piece of the earlier split gets its own prefix space.
  const nlohmann::json seq = {{"type", "Sequence"},
                              {"pretokenizers",
                               {{{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Removed"}},
                                {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", false}}}}};
  EXPECT_EQ(split(seq, "a b  c"), (Pieces{" a", " b", " c"}));
  EXPECT_EQ(split(seq, ""), Pieces{});
}

TEST(PreTokenizer, UnsupportedComponentsAreNamed) {
  auto message = [](const nlohmann::json& j) {
    try {
      PreTokenizer::from_json(j, "tokenizer.json: pre_tokenizer");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({{"type", "Metaspace"}}).find("\"Metaspace\" is not supported"), std::string::npos);
  EXPECT_NE(message({{"type", "Split"}, {"pattern", {{"Regex", "-"}}}, {"behavior", "Isolated"}})
                .find("no ByteLevel"),
            std::string::npos);
  EXPECT_NE(message(split_then_bytes("Sideways", false, {{"String", "-"}})).find("\"Sideways\""), std::string::npos);
  EXPECT_NE(message(split_then_bytes("Isolated", false, {{"Regex", "(unclosed"}})).find("cannot compile"),
            std::string::npos);
  EXPECT_NE(message(nullptr).find("only byte-level BPE"), std::string::npos);
}

}  // namespace
}  // namespace grpo
