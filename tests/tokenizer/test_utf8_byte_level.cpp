// UTF-8 helpers (validation, lossy replacement by maximal subparts as Rust's from_utf8_lossy does,
// incomplete tails) and the GPT-2 byte-level alphabet.
#include <gtest/gtest.h>

#include <set>

#include "core/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace grpo {
namespace {

const std::string R = "\xEF\xBF\xBD";  // U+FFFD

std::string lossy(std::string_view s) {
  std::string out;
  utf8::append_lossy(out, s);
  return out;
}

TEST(Utf8, ValidatesAndReportsFirstBadByte) {
  size_t bad = 99;
  EXPECT_TRUE(utf8::is_valid("plain ascii and \xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80"));
  EXPECT_FALSE(utf8::is_valid("abcdefghij\xFFxyz", &bad));
  EXPECT_EQ(bad, 10u);
  EXPECT_FALSE(utf8::is_valid("\xC0\xAF"));          // overlong
  EXPECT_FALSE(utf8::is_valid("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(utf8::is_valid("\xF4\x90\x80\x80"));  // > U+10FFFF
  EXPECT_FALSE(utf8::is_valid("\xE4\xB8"));          // cut off
  EXPECT_THROW(utf8::check_valid("ok\x80", "input.jsonl:3"), Error);
  try {
    utf8::check_valid("ok\x80", "input.jsonl:3");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input.jsonl:3"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("0x80"), std::string::npos);
  }
}

TEST(Utf8, LossyReplacesEachMaximalSubpartOnce) {
  EXPECT_EQ(lossy("a\xF0\x9F\x98z"), "a" + R + "z");             // truncated 4-byte sequence: one U+FFFD
  EXPECT_EQ(lossy("\xED\xA0\x80"), R + R + R);                   // surrogate: ED is not followed by A0..
  EXPECT_EQ(lossy("\xC0\xAF"), R + R);                           // C0 is never valid
  EXPECT_EQ(lossy("\xE0\x80\x80"), R + R + R);                   // E0 needs A0..BF next
  EXPECT_EQ(lossy("\xE4\xB8\xAD\xE4\xB8"), "\xE4\xB8\xAD" + R);  // valid char, then an incomplete one
  EXPECT_EQ(lossy("\xFF\xFE"), R + R);
  EXPECT_EQ(lossy("ok"), "ok");
}

TEST(Utf8, IncompleteTailIsOnlyAValidPrefix) {
  EXPECT_EQ(utf8::incomplete_tail_length("ab\xF0\x9F\x98"), 3u);
  EXPECT_EQ(utf8::incomplete_tail_length("ab\xF0\x9F"), 2u);
  EXPECT_EQ(utf8::incomplete_tail_length("ab\xE4"), 1u);
  EXPECT_EQ(utf8::incomplete_tail_length("ab\xF0\x9F\x98\x80"), 0u);  // complete
  EXPECT_EQ(utf8::incomplete_tail_length("ab\xED\xA0"), 0u);          // can never complete
  EXPECT_EQ(utf8::incomplete_tail_length("ab\x80"), 0u);
  EXPECT_EQ(utf8::incomplete_tail_length(""), 0u);
}

TEST(ByteLevel, AlphabetIsGpt2s) {
  EXPECT_EQ(byte_level::char_of_byte(' '), U'\u0120');   // Ġ
  EXPECT_EQ(byte_level::char_of_byte('\n'), U'\u010A');  // Ċ
  EXPECT_EQ(byte_level::char_of_byte(0), U'\u0100');
  EXPECT_EQ(byte_level::char_of_byte(0x7F), U'\u0121');
  EXPECT_EQ(byte_level::char_of_byte(0xAD), U'\u0143');
  EXPECT_EQ(byte_level::char_of_byte('A'), U'A');
  EXPECT_EQ(byte_level::char_of_byte(0xE9), U'\u00E9');
  std::set<char32_t> distinct;
  for (int b = 0; b < 256; ++b) {
    const char32_t c = byte_level::char_of_byte(static_cast<uint8_t>(b));
    distinct.insert(c);
    EXPECT_EQ(byte_level::byte_of_char(c), b);
  }
  EXPECT_EQ(distinct.size(), 256u);
  EXPECT_EQ(byte_level::byte_of_char(U' '), -1);
  EXPECT_EQ(byte_level::byte_of_char(U'\u4E2D'), -1);
}

TEST(ByteLevel, EncodeDecodeRoundTripAndFallback) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  EXPECT_EQ(byte_level::decode(byte_level::encode(all)), all);
  EXPECT_EQ(byte_level::encode("a b\n"), "a\xC4\xA0" "b\xC4\x8A");
  // A token with a character outside the alphabet keeps its own UTF-8 bytes (like HF's decoder).
  EXPECT_EQ(byte_level::decode("a b"), "a b");
  EXPECT_EQ(byte_level::decode("\xE4\xB8\xAD"), "\xE4\xB8\xAD");
}

}  // namespace
}  // namespace grpo
