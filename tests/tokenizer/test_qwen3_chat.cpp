// Chat cases of shared/reference/tokenizer/qwen3_chat_cases.jsonl: the conversation rendered with
// Qwen3's own chat template through Tokenizer::apply_chat_template equals `rendered`, and encodes to `ids`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/files.h"
#include "tokenizer_fixture.h"

namespace grpo {
namespace {

TEST(Qwen3Chat, EveryCaseRendersAndEncodesLikeTransformers) {
  const Tokenizer& tok = qwen3_tokenizer();
  int64_t cases = 0;
  for_each_line(std::string(GRPO_SHARED_DIR) + "/reference/tokenizer/qwen3_chat_cases.jsonl",
                [&](int64_t line, const std::string& text) {
                  if (text.empty()) return;
                  const auto c = nlohmann::ordered_json::parse(text);
                  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
                  if (c.contains("enable_thinking")) extra["enable_thinking"] = c["enable_thinking"];
                  const std::string rendered = tok.apply_chat_template(
                      c["messages"], c.value("tools", nlohmann::ordered_json()), c.value("add_generation_prompt", false),
                      extra);
                  EXPECT_EQ(rendered, c["rendered"].get<std::string>()) << "line " << line;
                  EXPECT_EQ(tok.encode(rendered), c["ids"].get<std::vector<int32_t>>()) << "line " << line;
                  ++cases;
                });
  EXPECT_GE(cases, 7);
}

TEST(Qwen3Chat, ChatTemplateInputRendersCasesWithoutKeyOrderDependence) {
  // ChatTemplateInput holds nlohmann::json, which sorts object keys; cases without tool schemas or
  // tool-call arguments render the same through it.
  const Tokenizer& tok = qwen3_tokenizer();
  for_each_line(std::string(GRPO_SHARED_DIR) + "/reference/tokenizer/qwen3_chat_cases.jsonl",
                [&](int64_t line, const std::string& text) {
                  if (text.empty()) return;
                  const auto c = nlohmann::json::parse(text);
                  if (c.contains("tools") || c.dump().find("tool_calls") != std::string::npos) return;
                  ChatTemplateInput in;
                  in.messages = c["messages"];
                  in.add_generation_prompt = c.value("add_generation_prompt", false);
                  if (c.contains("enable_thinking")) in.extra["enable_thinking"] = c["enable_thinking"];
                  EXPECT_EQ(tok.apply_chat_template(in), c["rendered"].get<std::string>()) << "line " << line;
                });
}

}  // namespace
}  // namespace grpo
