// Rows with tool calls: `messages` going on after the last user turn split into the prompt and the SFT
// target (Example::response_messages), `tools` kept in its key order, and the errors of such rows.
#include <gtest/gtest.h>

#include "data/dataset.h"
#include "error_of.h"

namespace grpo {
namespace {

const char* kConversation =
    R"({"id": "c1", "answer": "408", "tools": [{"type": "function", "function": {"name": "calculator", "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}}}}],
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Compute 12*34."},
                     {"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {"name": "calculator", "arguments": {"expression": "12*34"}}}]},
                     {"role": "tool", "content": "408"}, {"role": "assistant", "content": "\\boxed{408}"}]})";

TEST(DatasetConversations, TurnsAfterTheLastUserTurnAreTheTarget) {
  const Example ex = parse_example(kConversation, "f:1", /*require_response=*/true);
  ASSERT_EQ(ex.messages.size(), 2u);
  EXPECT_EQ(ex.messages[1]["content"], "Compute 12*34.");
  ASSERT_EQ(ex.response_messages.size(), 3u);
  EXPECT_EQ(ex.response_messages[0]["tool_calls"][0]["function"]["arguments"]["expression"], "12*34");
  EXPECT_EQ(ex.response_messages[2]["content"], "\\boxed{408}");
  EXPECT_TRUE(ex.response.empty());
  // The schema's keys in the row's order (as transformers prints them), not sorted.
  EXPECT_EQ(ex.tools[0]["function"].begin().key(), "name");
  EXPECT_FALSE(ex.extra.contains("tools"));
}

TEST(DatasetConversations, PromptsEndingWithAUserTurnAreUnchanged) {
  const Example ex = parse_example(
      R"({"answer": "1", "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]})",
      "f:1", false);
  EXPECT_EQ(ex.messages.size(), 3u);  // a few-shot prompt: its assistant turn is not a target
  EXPECT_TRUE(ex.response_messages.is_null());
  EXPECT_TRUE(ex.tools.is_null());
}

TEST(DatasetConversations, Errors) {
  auto error = [](const std::string& row) { return test::error_of([&] { parse_example(row, "f:1", true); }); };
  EXPECT_NE(error(R"({"answer": "1", "response": "x", "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]})")
                .find("has both \"response\" and turns after the last user turn"),
            std::string::npos);
  EXPECT_NE(error(R"({"answer": "1", "messages": [{"role": "user", "content": "a"}, {"role": "tool", "content": "b"}, {"role": "assistant", "content": "c"}]})")
                .find("must start with an assistant turn"),
            std::string::npos);
  EXPECT_NE(error(R"({"answer": "1", "messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b", "tool_calls": []}]})")
                .find("tool_calls must be a list of calls, in an assistant turn"),
            std::string::npos);
  EXPECT_NE(error(R"({"answer": "1", "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]}]})")
                .find("each call needs"),
            std::string::npos);
  EXPECT_NE(error(R"({"answer": "1", "prompt": "a", "response": "b", "tools": {"name": "f"}})").find("\"tools\" must be a list"),
            std::string::npos);
  EXPECT_NE(error(R"({"answer": "1", "messages": [{"role": "user", "content": "a"}]})").find("or assistant turns after the last user turn"),
            std::string::npos);
}

}  // namespace
}  // namespace grpo
