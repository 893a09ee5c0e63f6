// The Tokenizer API around encoding: invalid UTF-8 and bad ids are rejected, parallel batches equal
// serial encoding, tokenizer_config.json special tokens and add_bos_token, unsupported components named.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "core/files.h"
#include "tokenizer_fixture.h"

namespace grpo {
namespace {

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(TokenizerApi, RejectsInvalidUtf8AndUnknownIds) {
  const Tokenizer& tok = qwen3_tokenizer();
  EXPECT_NE(error_of([&] { tok.encode("ok \xC3"); }).find("not valid UTF-8"), std::string::npos);
  EXPECT_NE(error_of([&] { tok.decode({1, 151669}); }).find("id 151669"), std::string::npos);
  EXPECT_NE(error_of([&] { tok.decode({-1}); }).find("id -1"), std::string::npos);
  EXPECT_EQ(tok.encode(""), std::vector<int32_t>{});
  EXPECT_EQ(tok.decode({}), "");
}

TEST(TokenizerApi, BatchEqualsSerial) {
  const Tokenizer& tok = qwen3_tokenizer();
  std::vector<std::string> texts;
  for_each_line(std::string(GRPO_SHARED_DIR) + "/reference/tokenizer/qwen3_cases.jsonl",
                [&](int64_t, const std::string& line) { texts.push_back(line); });
  const auto batch = tok.encode_batch(texts);
  ASSERT_EQ(batch.size(), texts.size());
  for (size_t k = 0; k < texts.size(); ++k) EXPECT_EQ(batch[k], tok.encode(texts[k]));
  texts.push_back("bad \xFF");
  EXPECT_THROW(tok.encode_batch(texts), Error);
}

TEST(TokenizerApi, ConfigSpecialTokensAndAddBos) {
  nlohmann::json added = nlohmann::json::array();
  added.push_back({{"id", 256}, {"content", "<s>"}, {"special", true}});
  added.push_back({{"id", 257}, {"content", "</s>"}, {"special", true}});
  const auto j = tiny_tokenizer_json({}, added);
  const std::string config =
      R"({"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>", "pad_token": null,
          "add_bos_token": true, "add_eos_token": true,
          "chat_template": [{"name": "tool_use", "template": "x"}, {"name": "default", "template": "{{ bos_token }}"}]})";
  const Tokenizer tok = tiny_tokenizer(j, config);
  EXPECT_EQ(tok.bos_id(), 256);
  EXPECT_EQ(tok.eos_id(), 257);
  EXPECT_EQ(tok.pad_id(), -1);
  EXPECT_EQ(tok.stop_ids(), std::vector<int32_t>{257});
  EXPECT_EQ(tok.chat_template(), "{{ bos_token }}");
  EXPECT_EQ(tok.encode("a", true), (std::vector<int32_t>{256, 'a', 257}));
  EXPECT_EQ(tok.encode("a", false), (std::vector<int32_t>{'a'}));

  // A TemplateProcessing post-processor adds its tokens; add_bos_token: false takes the bos away again.
  auto with_template = j;
  with_template["post_processor"] = nlohmann::json::parse(R"({"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
      "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [256], "tokens": ["<s>"]}}})");
  EXPECT_EQ(tiny_tokenizer(with_template).encode("a", true), (std::vector<int32_t>{256, 'a'}));
  EXPECT_EQ(tiny_tokenizer(with_template, R"({"bos_token": "<s>", "add_bos_token": false})").encode("a", true),
            (std::vector<int32_t>{'a'}));

  EXPECT_NE(error_of([&] { tiny_tokenizer(j, R"({"eos_token": "<nope>"})"); }).find("eos_token \"<nope>\""),
            std::string::npos);
  EXPECT_NE(error_of([&] { tiny_tokenizer(j, "{not json"); }).find("tokenizer_config.json"), std::string::npos);
}

TEST(TokenizerApi, UnsupportedComponentsAreNamed) {
  auto j = tiny_tokenizer_json({});
  j["normalizer"] = {{"type", "NFKC"}};
  EXPECT_NE(error_of([&] { tiny_tokenizer(j); }).find("normalizer type \"NFKC\""), std::string::npos);
  j = tiny_tokenizer_json({});
  j["decoder"] = {{"type", "Metaspace"}};
  EXPECT_NE(error_of([&] { tiny_tokenizer(j); }).find("decoder type \"Metaspace\""), std::string::npos);
  j = tiny_tokenizer_json({});
  j["post_processor"] = {{"type", "BertProcessing"}};
  EXPECT_NE(error_of([&] { tiny_tokenizer(j); }).find("\"BertProcessing\""), std::string::npos);
  EXPECT_NE(error_of([] { Tokenizer::load("/nonexistent/tokenizer"); }).find("/nonexistent/tokenizer"),
            std::string::npos);
}

TEST(TokenizerApi, CopiesShareStateAndStayUsable) {
  Tokenizer copy = qwen3_tokenizer();
  const Tokenizer other = tiny_tokenizer(tiny_tokenizer_json({{"a", "b"}}));
  // Alternating between two tokenizers on one thread must not mix their word caches.
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(copy.encode("abab"), (std::vector<int32_t>{370, 370}));
    EXPECT_EQ(other.encode("abab"), (std::vector<int32_t>{256, 256}));
  }
}

}  // namespace
}  // namespace grpo
