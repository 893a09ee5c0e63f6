// Added tokens: leftmost-longest matching at the edges of the text and next to each other, the
// single_word / lstrip / rstrip options, and raw vs normalized matching.
#include <gtest/gtest.h>

#include "core/error.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer_fixture.h"

namespace grpo {
namespace {

std::vector<std::pair<std::string, int32_t>> segments(const AddedTokenMatcher& m, std::string_view text) {
  std::vector<TextSegment> segs;
  m.split(text, segs);
  std::vector<std::pair<std::string, int32_t>> out;
  for (const TextSegment& s : segs) out.emplace_back(std::string(text.substr(s.begin, s.end - s.begin)), s.id);
  return out;
}

using Segs = std::vector<std::pair<std::string, int32_t>>;

AddedToken token(int32_t id, std::string content) {
  AddedToken t;
  t.id = id;
  t.content = std::move(content);
  t.special = true;
  return t;
}

TEST(AddedTokens, EdgesAdjacencyAndLongestMatch) {
  const AddedTokenMatcher m({token(1, "<|a|>"), token(2, "<|ab|>"), token(3, "<|a"), token(4, "x")});
  EXPECT_EQ(segments(m, "<|a|>"), (Segs{{"<|a|>", 1}}));
  EXPECT_EQ(segments(m, "<|a|><|ab|>"), (Segs{{"<|a|>", 1}, {"<|ab|>", 2}}));
  EXPECT_EQ(segments(m, "hi<|a|>"), (Segs{{"hi", -1}, {"<|a|>", 1}}));
  EXPECT_EQ(segments(m, "<|a|>hi"), (Segs{{"<|a|>", 1}, {"hi", -1}}));
  EXPECT_EQ(segments(m, "<|a b"), (Segs{{"<|a", 3}, {" b", -1}}));  // the longest token that matches
  EXPECT_EQ(segments(m, "<<|a|>>"), (Segs{{"<", -1}, {"<|a|>", 1}, {">", -1}}));
  EXPECT_EQ(segments(m, "xx"), (Segs{{"x", 4}, {"x", 4}}));
  EXPECT_EQ(segments(m, "plain"), (Segs{{"plain", -1}}));
  EXPECT_EQ(segments(m, ""), (Segs{{"", -1}}));
}

TEST(AddedTokens, SingleWordLstripRstrip) {
  AddedToken word = token(1, "tok");
  word.single_word = true;
  AddedToken left = token(2, "<L>");
  left.lstrip = true;
  AddedToken right = token(3, "<R>");
  right.rstrip = true;
  const AddedTokenMatcher m({word, left, right});
  EXPECT_EQ(segments(m, "a tok b"), (Segs{{"a ", -1}, {"tok", 1}, {" b", -1}}));
  EXPECT_EQ(segments(m, "atok tok_"), (Segs{{"atok tok_", -1}}));  // inside words: no match
  EXPECT_EQ(segments(m, "tok"), (Segs{{"tok", 1}}));
  EXPECT_EQ(segments(m, "a  <L> b"), (Segs{{"a", -1}, {"  <L>", 2}, {" b", -1}}));
  EXPECT_EQ(segments(m, "a <R>  \n b"), (Segs{{"a ", -1}, {"<R>  \n ", 3}, {"b", -1}}));
  EXPECT_EQ(segments(m, "<R> <L>"), (Segs{{"<R> ", 3}, {"<L>", 2}}));  // lstrip stops at the previous match
}

TEST(AddedTokens, ThroughTheTokenizer) {
  nlohmann::json added = nlohmann::json::array();
  added.push_back({{"id", 256}, {"content", "<|end|>"}, {"special", true}, {"normalized", false}});
  // A normalized added token is matched after NFC: "e + combining acute" finds "é".
  added.push_back({{"id", 257}, {"content", "caf\xC3\xA9"}, {"special", false}, {"normalized", true}});
  const Tokenizer tok = tiny_tokenizer(tiny_tokenizer_json({}, added));
  EXPECT_EQ(tok.encode("<|end|>"), (std::vector<int32_t>{256}));
  EXPECT_EQ(tok.encode("a<|end|><|end|>b"), (std::vector<int32_t>{'a', 256, 256, 'b'}));
  EXPECT_EQ(tok.encode("cafe\xCC\x81!"), (std::vector<int32_t>{257, '!'}));
  EXPECT_EQ(tok.encode("<|end"), (std::vector<int32_t>{'<', '|', 'e', 'n', 'd'}));
  EXPECT_EQ(tok.vocab_size(), 258);
  EXPECT_EQ(tok.token_to_id("<|end|>"), 256);
  EXPECT_EQ(tok.decode({'a', 256}, true), "a");
  // Hugging Face's ByteLevel decoder maps an added token's characters through the byte alphabet when
  // all of them are in it: "é" (U+00E9) stands for byte 0xE9 there, so "café" decodes to "caf\uFFFD".
  EXPECT_EQ(tok.decode({'a', 256, 257}), "a<|end|>caf\xEF\xBF\xBD");
}

TEST(AddedTokens, IdsMustBeThoseHuggingFaceAssigns) {
  // Hugging Face ignores the listed id of an added token that is not in the vocabulary and numbers it
  // after the vocabulary instead; a file where the two differ is rejected rather than renumbered.
  nlohmann::json added = nlohmann::json::array();
  added.push_back({{"id", 300}, {"content", "<|end|>"}, {"special", true}});
  try {
    tiny_tokenizer(tiny_tokenizer_json({}, added));
    ADD_FAILURE() << "a gap in the added token ids was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("added_tokens[0]"), std::string::npos) << e.what();
  }
  // An added token that is already in the vocabulary keeps its vocabulary id.
  added = nlohmann::json::array();
  added.push_back({{"id", 'x'}, {"content", "x"}, {"special", true}});
  const Tokenizer tok = tiny_tokenizer(tiny_tokenizer_json({}, added));
  EXPECT_TRUE(tok.is_special('x'));
  EXPECT_EQ(tok.encode("axa"), (std::vector<int32_t>{'a', 'x', 'a'}));
}

}  // namespace
}  // namespace grpo
