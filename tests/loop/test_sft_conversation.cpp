// Multi-turn SFT samples: one per assistant turn, the conversation's tokens through that turn with all
// before it as prompt, token for token the prompt, the assistant turns with their end tokens and the tool
// turns of a rollout (tools/chat_turns.h).
#include <gtest/gtest.h>

#include "data/dataset.h"
#include "data/prompting.h"
#include "error_of.h"
#include "loop/sft_conversation.h"
#include "temp_dir.h"
#include "tokenizer/byte_tokenizer.h"

namespace grpo {
namespace {

TEST(SftConversation, OneSamplePerAssistantTurnTrainingAssistantTokensOnly) {
  test::TempDir dir;
  write_byte_tokenizer(dir.path());
  const Tokenizer tok = Tokenizer::load(dir.path());
  Example ex = parse_example(
      R"({"id": "c", "answer": "408", "tools": [{"type": "function", "function": {"name": "calculator", "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}}}}],
          "messages": [{"role": "user", "content": "Compute 12*34."},
                       {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "calculator", "arguments": {"expression": "12*34"}}}]},
                       {"role": "tool", "content": "408"}, {"role": "assistant", "content": "\\boxed{408}"}]})",
      "f:1", true);
  ex.prompt_ids = encode_prompt(tok, ex, true);
  const auto samples = conversation_samples(tok, ex, true);
  ASSERT_EQ(samples.size(), 2u);
  const std::string prompt =
      "<|im_start|>system\nTools: calculator(expression)<|im_end|>\n<|im_start|>user\nCompute 12*34.<|im_end|>\n"
      "<|im_start|>assistant\n<think>\n\n</think>\n\n";
  const std::string call = "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"12*34\"}}\n</tool_call><|im_end|>";
  const std::string tool_turn =
      "\n<|im_start|>user\n<tool_response>\n408\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
  auto text = [&](const std::vector<int32_t>& ids, size_t from, size_t to) {
    return tok.decode(std::vector<int32_t>(ids.begin() + static_cast<std::ptrdiff_t>(from), ids.begin() + static_cast<std::ptrdiff_t>(to)),
                      /*skip_special_tokens=*/false);
  };
  const auto& first = samples[0];
  EXPECT_EQ(first.prompt_len, static_cast<int64_t>(ex.prompt_ids.size()));
  EXPECT_EQ(text(first.tokens, 0, first.prompt_len), prompt);
  EXPECT_EQ(text(first.tokens, first.prompt_len, first.tokens.size()), call);
  EXPECT_EQ(first.tokens.back(), tok.token_to_id("<|im_end|>"));
  const auto& second = samples[1];
  // The second sequence goes on from the first: the tool turn is prompt, the answer is trained on.
  ASSERT_GT(second.tokens.size(), first.tokens.size());
  EXPECT_TRUE(std::equal(first.tokens.begin(), first.tokens.end(), second.tokens.begin()));
  EXPECT_EQ(text(second.tokens, first.tokens.size(), second.prompt_len), tool_turn);
  EXPECT_EQ(text(second.tokens, second.prompt_len, second.tokens.size()), "\\boxed{408}<|im_end|>");

  EXPECT_NE(test::error_of([&] { conversation_samples(tok, ex, false); }).find("needs data.apply_chat_template: true"),
            std::string::npos);
}

}  // namespace
}  // namespace grpo
