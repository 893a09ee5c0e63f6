// The Qwen3 tokenizer against Hugging Face tokenizers' own output: every case of
// shared/reference/tokenizer/qwen3_cases.jsonl encodes to the same ids and decodes back to `decoded`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/files.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_fixture.h"

namespace grpo {
namespace {

TEST(Qwen3Reference, EveryCaseEncodesAndDecodesLikeHuggingFace) {
  const Tokenizer& tok = qwen3_tokenizer();
  int64_t cases = 0;
  for_each_line(std::string(GRPO_SHARED_DIR) + "/reference/tokenizer/qwen3_cases.jsonl",
                [&](int64_t line, const std::string& text) {
                  if (text.empty()) return;
                  const auto c = nlohmann::json::parse(text);
                  const std::string input = c["text"].get<std::string>();
                  const auto expected = c["ids"].get<std::vector<int32_t>>();
                  const auto ids = tok.encode(input);
                  EXPECT_EQ(ids, expected) << "line " << line << ": " << input;
                  EXPECT_EQ(tok.decode(expected), c["decoded"].get<std::string>()) << "line " << line;
                  ++cases;
                });
  EXPECT_GT(cases, 100);
}

TEST(Qwen3Reference, SpecialTokensFromConfig) {
  const Tokenizer& tok = qwen3_tokenizer();
  EXPECT_EQ(tok.vocab_size(), 151669);
  EXPECT_EQ(tok.eos_id(), 151645);  // <|im_end|>
  EXPECT_EQ(tok.pad_id(), 151643);  // <|endoftext|>
  EXPECT_EQ(tok.bos_id(), -1);
  EXPECT_EQ(tok.stop_ids(), (std::vector<int32_t>{151645, 151643}));
  EXPECT_TRUE(tok.is_special(151644));
  EXPECT_FALSE(tok.is_special(151667));  // <think> is an added token but not special
  EXPECT_FALSE(tok.is_special(9707));
  EXPECT_EQ(tok.token_to_id("<think>"), 151667);
  EXPECT_EQ(tok.token_to_id("Hello"), 9707);
  EXPECT_EQ(tok.token_to_id("no such token"), -1);
  EXPECT_EQ(tok.id_to_token(220), "\xC4\xA0");  // "Ġ", the byte-level space
  EXPECT_NE(tok.chat_template().find("<|im_start|>"), std::string::npos);
  // Qwen adds nothing around the text.
  EXPECT_EQ(tok.encode("Hello world!", true), tok.encode("Hello world!", false));
}

TEST(Qwen3Reference, SkipSpecialTokensDropsOnlySpecialOnes) {
  const Tokenizer& tok = qwen3_tokenizer();
  const auto ids = tok.encode("<|im_start|>user\n<think>hi</think><|im_end|>");
  EXPECT_EQ(tok.decode(ids, true), "user\n<think>hi</think>");
  EXPECT_EQ(tok.decode(ids, false), "<|im_start|>user\n<think>hi</think><|im_end|>");
}

}  // namespace
}  // namespace grpo
