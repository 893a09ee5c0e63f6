// The byte-level tokenizer that `grpo init --tokenizer bytes` writes, loaded by Tokenizer: any UTF-8 text
// round-trips, plain text is one token per byte, ChatML specials are single tokens.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "tokenizer/byte_tokenizer.h"
#include "tokenizer/utf8.h"
#include "tokenizer_fixture.h"

namespace grpo {
namespace {

const Tokenizer& byte_tokenizer() {
  static const Tokenizer tok = [] {
    // One folder per process: CTest runs this file's tests as parallel processes.
    const std::string dir =
        (std::filesystem::temp_directory_path() / ("grpo_test_byte_tokenizer_" + std::to_string(::getpid()))).string();
    write_byte_tokenizer(dir);
    Tokenizer t = Tokenizer::load(dir);
    std::filesystem::remove_all(dir);
    return t;
  }();
  return tok;
}

TEST(ByteTokenizer, SpecialsAndOneTokenPerByte) {
  const Tokenizer& tok = byte_tokenizer();
  EXPECT_EQ(tok.vocab_size(), kByteTokenizerVocab);
  EXPECT_EQ(tok.eos_id(), tok.token_to_id("<|im_end|>"));
  EXPECT_EQ(tok.pad_id(), tok.token_to_id("<|endoftext|>"));
  EXPECT_EQ(tok.encode("Hi \xC3\xA9"), (std::vector<int32_t>{'H', 'i', ' ', 0xC3, 0xA9}));
  EXPECT_EQ(tok.encode("<|im_start|>user\n"),
            (std::vector<int32_t>{tok.token_to_id("<|im_start|>"), 'u', 's', 'e', 'r', '\n'}));
  EXPECT_FALSE(tok.chat_template().empty());
}

TEST(ByteTokenizer, AnyUtf8TextRoundTrips) {
  const Tokenizer& tok = byte_tokenizer();
  std::mt19937 rng(11);
  for (int t = 0; t < 500; ++t) {
    std::string text;
    const int n = static_cast<int>(rng() % 40);
    for (int k = 0; k < n; ++k) {
      char32_t cp;
      do {
        const uint32_t r = rng() % 4;
        cp = r == 0 ? rng() % 0x80 : r == 1 ? rng() % 0x800 : r == 2 ? rng() % 0x10000 : rng() % 0x110000;
      } while (cp >= 0xD800 && cp < 0xE000);
      utf8::append_code_point(text, cp);
    }
    const auto ids = tok.encode(text);
    ASSERT_EQ(tok.decode(ids), text);
    for (int32_t id : ids) ASSERT_LT(id, kByteTokenizerVocab);
  }
}

}  // namespace
}  // namespace grpo
