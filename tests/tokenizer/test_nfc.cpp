// NFC: the quick check passes text that NFC cannot change and flags text it might; normalisation
// composes, reorders and maps singletons like Hugging Face's NFC normalizer.
#include <gtest/gtest.h>

#include "tokenizer/nfc.h"
#include "tokenizer_fixture.h"

namespace grpo {
namespace {

std::string nfc_of(std::string_view s) {
  std::string out;
  nfc::normalize(s, out);
  return out;
}

TEST(Nfc, QuickCheckPassesTextThatIsAlreadyNfc) {
  EXPECT_TRUE(nfc::quick_check("plain ASCII text\n"));
  EXPECT_TRUE(nfc::quick_check("caf\xC3\xA9 \xC3\x85"));              // precomposed é, Å
  EXPECT_TRUE(nfc::quick_check("\xE4\xB8\xAD\xE6\x96\x87 \xED\x95\x9C"));  // 中文 한 (Hangul syllable)
  EXPECT_TRUE(nfc::quick_check("\xF0\x9F\x98\x80"));                  // emoji
}

TEST(Nfc, QuickCheckFlagsWhatNfcMayChange) {
  EXPECT_FALSE(nfc::quick_check("e\xCC\x81"));                  // e + combining acute
  EXPECT_FALSE(nfc::quick_check("\xE2\x84\xAB"));               // U+212B ANGSTROM SIGN (singleton)
  EXPECT_FALSE(nfc::quick_check("\xE1\x84\x80\xE1\x85\xA1"));   // Hangul jamo L + V
  EXPECT_FALSE(nfc::quick_check("\xE0\xA5\x98"));               // U+0958 (composition exclusion)
  EXPECT_FALSE(nfc::quick_check("\xE3\x81\x8B\xE3\x82\x99"));   // か + combining voiced mark
}

TEST(Nfc, Normalizes) {
  EXPECT_EQ(nfc_of("e\xCC\x81"), "\xC3\xA9");
  EXPECT_EQ(nfc_of("\xE2\x84\xAB"), "\xC3\x85");
  EXPECT_EQ(nfc_of("\xE1\x84\x80\xE1\x85\xA1"), "\xEA\xB0\x80");  // 가
  EXPECT_EQ(nfc_of("\xE3\x81\x8B\xE3\x82\x99"), "\xE3\x81\x8C");  // が
  EXPECT_EQ(nfc_of("q\xCC\x87\xCC\xA3"), "q\xCC\xA3\xCC\x87");    // canonical reordering (dot below first)
  EXPECT_EQ(nfc_of(std::string_view("a\0e\xCC\x81", 5)), std::string("a\0\xC3\xA9", 4));  // NUL is kept
}

TEST(Nfc, TokenizerNormalizesBeforeEncoding) {
  const Tokenizer& tok = qwen3_tokenizer();
  EXPECT_EQ(tok.encode("cafe\xCC\x81"), tok.encode("caf\xC3\xA9"));
  EXPECT_EQ(tok.decode(tok.encode("cafe\xCC\x81")), "caf\xC3\xA9");
}

}  // namespace
}  // namespace grpo
