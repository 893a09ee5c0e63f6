// Turn texts of tool-calling conversations against Qwen3's own template as transformers renders it
// (data/qwen3_tool_turns.jsonl, written by data/make_qwen3_tool_turns.py with Jinja2): the prompt followed by
// an assistant turn is the template's rendering of the conversation ending with that turn, and the tool
// turn is what the template writes after it; and the same turns through the byte-level model's template.
#include <gtest/gtest.h>

#include "core/files.h"
#include "temp_dir.h"
#include "tokenizer/byte_tokenizer.h"
#include "tools/chat_turns.h"
#include "tools/hermes.h"

namespace grpo::tools {
namespace {

using nlohmann::ordered_json;

TEST(ChatTurns, Qwen3TemplateAsTransformersRendersIt) {
  const Tokenizer tok = Tokenizer::load(std::string(GRPO_SHARED_DIR) + "/models/qwen3-tokenizer");
  const ordered_json extra = {{"enable_thinking", false}};
  int cases = 0;
  for_each_line(std::string(GRPO_SOURCE_DIR) + "/tests/tools/data/qwen3_tool_turns.jsonl", [&](int64_t line, const std::string& text) {
    const auto c = ordered_json::parse(text);
    const std::string prompt = tok.apply_chat_template(c["messages"], c["tools"], true, extra);
    EXPECT_EQ(prompt, c["prompt"].get<std::string>()) << "line " << line;
    const std::string assistant = assistant_turn_text(c["assistant"]);
    // The rollout's text to the assistant's end token is the template's rendering of that conversation.
    EXPECT_EQ(prompt + assistant + "<|im_end|>\n", c["with_assistant"].get<std::string>()) << "line " << line;
    // The tool turn is what the template writes after the assistant's end token, through the next prompt.
    const std::string tool_turn = tool_turn_text(tok, c["results"].get<std::vector<std::string>>(), extra);
    const std::string with_tools = c["with_tools"].get<std::string>();
    ASSERT_GE(with_tools.size(), tool_turn.size());
    EXPECT_EQ(with_tools.substr(with_tools.size() - tool_turn.size()), tool_turn) << "line " << line;
    EXPECT_EQ(tool_turn.rfind("\n<|im_start|>user\n<tool_response>\n", 0), 0u) << tool_turn;
    // Each call the model wrote parses back to the call of the message.
    const auto calls = parse_tool_calls(assistant);
    ASSERT_EQ(calls.size(), c["assistant"]["tool_calls"].size());
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(calls[i].failure, ToolFailure::None);
      EXPECT_EQ(calls[i].call.name, c["assistant"]["tool_calls"][i]["function"]["name"]);
      EXPECT_EQ(calls[i].call.arguments, nlohmann::json::parse(c["assistant"]["tool_calls"][i]["function"]["arguments"].dump()));
    }
    ++cases;
  });
  EXPECT_EQ(cases, 2);
}

TEST(ChatTurns, ByteModelTemplateListsToolsShortlyAndRendersToolTurns) {
  test::TempDir dir;
  write_byte_tokenizer(dir.path());
  const Tokenizer tok = Tokenizer::load(dir.path());
  const ordered_json extra = {{"enable_thinking", false}};
  const ordered_json tools = ordered_json::array({ordered_json::parse(R"({"type": "function", "function": {
      "name": "calculator", "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}}}})"),
                                                  ordered_json::parse(R"({"type": "function", "function": {
      "name": "search", "parameters": {"type": "object", "properties": {"query": {}, "k": {}}}}})")});
  const ordered_json user = ordered_json::array({{{"role", "user"}, {"content", "Compute 12*34."}}});
  EXPECT_EQ(tok.apply_chat_template(user, tools, true, extra),
            "<|im_start|>system\nTools: calculator(expression) search(query, k)<|im_end|>\n"
            "<|im_start|>user\nCompute 12*34.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  const ordered_json with_system = ordered_json::array({{{"role", "system"}, {"content", "Be brief."}}, user[0]});
  EXPECT_EQ(tok.apply_chat_template(with_system, tools, false, extra),
            "<|im_start|>system\nBe brief.\nTools: calculator(expression) search(query, k)<|im_end|>\n"
            "<|im_start|>user\nCompute 12*34.<|im_end|>\n");
  // Without tools the template renders as before: ChatML turns.
  EXPECT_EQ(tok.apply_chat_template(with_system, nullptr, false, extra),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nCompute 12*34.<|im_end|>\n");
  const ordered_json call = ordered_json::parse(
      R"({"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "calculator", "arguments": {"expression": "12*34"}}}]})");
  ordered_json conversation = user;
  conversation.push_back(call);
  conversation.push_back({{"role", "tool"}, {"content", "408"}});
  conversation.push_back({{"role", "assistant"}, {"content", "\\boxed{408}"}});
  const std::string full = tok.apply_chat_template(conversation, nullptr, false, extra);
  EXPECT_EQ(full,
            "<|im_start|>user\nCompute 12*34.<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{\"name\": \"calculator\", "
            "\"arguments\": {\"expression\": \"12*34\"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n408\n"
            "</tool_response><|im_end|>\n<|im_start|>assistant\n\\boxed{408}<|im_end|>\n");
  EXPECT_EQ(assistant_turn_text(call), "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"12*34\"}}\n</tool_call>");
  EXPECT_EQ(tool_turn_text(tok, {"408"}, extra),
            "\n<|im_start|>user\n<tool_response>\n408\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  EXPECT_EQ(tool_turn_text(tok, {"1", "2"}, ordered_json::object()),
            "\n<|im_start|>user\n<tool_response>\n1\n</tool_response>\n<tool_response>\n2\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatTurns, AssistantTextWithContentAndArgumentsAsText) {
  const auto m = ordered_json::parse(R"({"role": "assistant", "content": "Checking.", "tool_calls": [
      {"type": "function", "function": {"name": "a", "arguments": "{\"x\": 1}"}},
      {"name": "b", "arguments": {"z": 1, "y": [2]}}]})");
  EXPECT_EQ(assistant_turn_text(m),
            "Checking.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>\n<tool_call>\n"
            "{\"name\": \"b\", \"arguments\": {\"z\": 1, \"y\": [2]}}\n</tool_call>");
  EXPECT_EQ(assistant_turn_text(ordered_json::parse(R"({"role": "assistant", "content": "\\boxed{3}"})")), "\\boxed{3}");
}

}  // namespace
}  // namespace grpo::tools
