// Incremental decoding: never half a character, the same text as decode() in the end (including
// U+FFFD for bytes that never form a character), skip_special_tokens.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "tokenizer/utf8.h"
#include "tokenizer_fixture.h"

namespace grpo {
namespace {

std::string stream(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip,
                   std::vector<std::string>* pieces = nullptr) {
  StreamDecoder d(tok, skip);
  std::string text;
  for (int32_t id : ids) {
    const std::string piece = d.push(id);
    if (pieces) pieces->push_back(piece);
    text += piece;
  }
  return text + d.flush();
}

TEST(StreamDecoder, HoldsBackPartialCharacters) {
  const Tokenizer& tok = qwen3_tokenizer();
  // "👩‍👩‍👧" encodes partly as single-byte tokens (see qwen3_cases.jsonl: 378, 235 are pieces of U+200D).
  const auto ids = tok.encode("\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA9 ok");
  std::vector<std::string> pieces;
  EXPECT_EQ(stream(tok, ids, false, &pieces), tok.decode(ids));
  bool saw_empty_piece = false;
  for (const std::string& p : pieces) {
    EXPECT_TRUE(utf8::is_valid(p)) << p;
    EXPECT_EQ(p.find("\xEF\xBF\xBD"), std::string::npos);
    saw_empty_piece = saw_empty_piece || p.empty();
  }
  EXPECT_TRUE(saw_empty_piece);  // some token ended inside a character
}

TEST(StreamDecoder, MatchesDecodeOnRandomIds) {
  const Tokenizer& tok = qwen3_tokenizer();
  std::mt19937 rng(3);
  for (int t = 0; t < 300; ++t) {
    std::vector<int32_t> ids;
    const int n = 1 + static_cast<int>(rng() % 20);
    for (int k = 0; k < n; ++k) {
      // Mostly byte tokens (ids < 256 are single bytes in Qwen3), some whole tokens and specials.
      const uint32_t r = rng() % 10;
      ids.push_back(r < 6 ? static_cast<int32_t>(rng() % 256)
                          : r < 9 ? static_cast<int32_t>(rng() % 151643) : 151643 + static_cast<int32_t>(rng() % 26));
    }
    for (bool skip : {false, true}) ASSERT_EQ(stream(tok, ids, skip), tok.decode(ids, skip));
  }
}

TEST(StreamDecoder, FlushReplacesAnIncompleteTail) {
  const Tokenizer& tok = qwen3_tokenizer();
  const auto ids = tok.encode("\xE4\xB8\xAD");  // 中
  ASSERT_GE(ids.size(), 1u);
  // Byte tokens E4 B8 alone: an incomplete character, emitted only by flush as one U+FFFD.
  const int32_t e4 = tok.token_to_id(byte_level::encode("\xE4")), b8 = tok.token_to_id(byte_level::encode("\xB8"));
  StreamDecoder d(tok);
  EXPECT_EQ(d.push(e4), "");
  EXPECT_EQ(d.push(b8), "");
  EXPECT_EQ(d.flush(), "\xEF\xBF\xBD");
  EXPECT_EQ(tok.decode({e4, b8}), "\xEF\xBF\xBD");
  EXPECT_EQ(d.push(tok.token_to_id("<|im_end|>")), "<|im_end|>");
  EXPECT_THROW(d.push(200000), Error);
}

}  // namespace
}  // namespace grpo
