// The hermes tool-call parser: blocks found in order, every way a block can be malformed, and the
// rendering of a call as Qwen3's template writes it.
#include <gtest/gtest.h>

#include "tools/hermes.h"

namespace grpo::tools {
namespace {

TEST(Hermes, FindsEveryClosedBlockInOrder) {
  const std::string text =
      "Let me compute.\n<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"1+2\"}}\n</tool_call>\n"
      "<tool_call>{\"name\": \"search\", \"arguments\": {\"query\": \"x\", \"k\": 3}}</tool_call> trailing";
  ASSERT_TRUE(has_tool_call(text));
  const auto calls = parse_tool_calls(text);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].failure, ToolFailure::None);
  EXPECT_EQ(calls[0].call.name, "calculator");
  EXPECT_EQ(calls[0].call.arguments, nlohmann::json({{"expression", "1+2"}}));
  EXPECT_EQ(calls[1].call.name, "search");
  EXPECT_EQ(calls[1].call.arguments["k"], 3);
}

TEST(Hermes, NoCallWithoutAClosedBlock) {
  EXPECT_FALSE(has_tool_call("plain answer \\boxed{3}"));
  EXPECT_FALSE(has_tool_call("<tool_call>{\"name\": \"calculator\", \"arguments\": {}}"));  // cut off
  EXPECT_FALSE(has_tool_call("</tool_call> then <tool_call>"));                            // wrong order
  EXPECT_TRUE(parse_tool_calls("<tool_call>{\"name\": \"a\"").empty());
  // A closed block followed by an unclosed one: only the closed one counts.
  const auto calls = parse_tool_calls("<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call><tool_call>{");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].call.name, "a");
}

TEST(Hermes, MalformedBlocksAreFailedCallsNotExceptions) {
  struct Case {
    std::string body;
    ToolFailure failure;
    std::string says;
  };
  const Case cases[] = {
      {"{\"name\": \"calculator\", \"arguments\": {\"expression\": \"1+2\"}", ToolFailure::BadJson, "not valid JSON"},
      {"", ToolFailure::BadJson, "not valid JSON"},
      {"calculator(1+2)", ToolFailure::BadJson, "not valid JSON"},
      {"[1, 2]", ToolFailure::BadJson, "must be a JSON object"},
      {"{\"arguments\": {}}", ToolFailure::BadJson, "no \"name\""},
      {"{\"name\": 7, \"arguments\": {}}", ToolFailure::BadJson, "no \"name\""},
      {"{\"name\": \"\", \"arguments\": {}}", ToolFailure::BadJson, "no \"name\""},
      {"{\"name\": \"calculator\"}", ToolFailure::BadArguments, "no \"arguments\""},
      {"{\"name\": \"calculator\", \"arguments\": \"1+2\"}", ToolFailure::BadArguments, "must be a JSON object"},
      {"{\"name\": \"calculator\", \"arguments\": [1]}", ToolFailure::BadArguments, "must be a JSON object"},
  };
  for (const auto& c : cases) {
    const auto calls = parse_tool_calls("<tool_call>\n" + c.body + "\n</tool_call>");
    ASSERT_EQ(calls.size(), 1u) << c.body;
    EXPECT_EQ(calls[0].failure, c.failure) << c.body;
    EXPECT_NE(calls[0].error.find(c.says), std::string::npos) << c.body << " -> " << calls[0].error;
  }
}

TEST(Hermes, WhitespaceUnicodeAndTrailingText) {
  // Any whitespace around the JSON; non-ASCII arguments kept as UTF-8.
  auto calls = parse_tool_calls("<tool_call> \t\r\n{\"name\": \"s\", \"arguments\": {\"q\": \"caf\u00e9 \u20ac\"}}\n\n</tool_call>");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].failure, ToolFailure::None);
  EXPECT_EQ(calls[0].call.arguments["q"], "caf\xC3\xA9 \xE2\x82\xAC");
  // Text after the object inside the block is not a call.
  calls = parse_tool_calls("<tool_call>{\"name\": \"s\", \"arguments\": {}} and more</tool_call>");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].failure, ToolFailure::BadJson);
  // A block opened inside a block ends at the first closing tag, as verl's non-greedy match does.
  calls = parse_tool_calls("<tool_call><tool_call>{\"name\": \"s\", \"arguments\": {}}</tool_call></tool_call>");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].failure, ToolFailure::BadJson);
  // A "</tool_call>" inside a JSON string closes the block there too (the model must not write one).
  calls = parse_tool_calls("<tool_call>{\"name\": \"s\", \"arguments\": {\"q\": \"</tool_call>\"}}</tool_call>");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].failure, ToolFailure::BadJson);
  // Content around the blocks is not a call.
  calls = parse_tool_calls("I will use {\"name\": \"s\"} here:\n<tool_call>{\"name\": \"t\", \"arguments\": {}}</tool_call> done");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].call.name, "t");
}

TEST(Hermes, GoodAndBadBlocksKeepTheirPlaces) {
  const auto calls = parse_tool_calls(
      "<tool_call>{bad}</tool_call><tool_call>{\"name\":\"b\",\"arguments\":{}}</tool_call><tool_call>{}</tool_call>");
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].failure, ToolFailure::BadJson);
  EXPECT_EQ(calls[1].failure, ToolFailure::None);
  EXPECT_EQ(calls[1].call.name, "b");
  EXPECT_EQ(calls[2].failure, ToolFailure::BadJson);
}

TEST(Hermes, FormatsAsQwen3sTemplateAndParsesBack) {
  const ToolCall call{"calculator", {{"expression", "12 * (3 + 4)"}}};
  const std::string text = format_tool_call(call);
  EXPECT_EQ(text, "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"12 * (3 + 4)\"}}\n</tool_call>");
  const auto back = parse_tool_calls(text);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].call.name, call.name);
  EXPECT_EQ(back[0].call.arguments, call.arguments);
}

TEST(Hermes, FailureNames) {
  EXPECT_STREQ(failure_name(ToolFailure::BadJson), "bad_json");
  EXPECT_STREQ(failure_name(ToolFailure::UnknownTool), "unknown_tool");
  EXPECT_STREQ(failure_name(ToolFailure::BadArguments), "bad_arguments");
  EXPECT_STREQ(failure_name(ToolFailure::Timeout), "timeout");
  EXPECT_STREQ(failure_name(ToolFailure::Crashed), "crashed");
  EXPECT_STREQ(failure_name(ToolFailure::OutputTooLong), "output_too_long");
  EXPECT_STREQ(failure_name(ToolFailure::ToolError), "tool_error");
}

}  // namespace
}  // namespace grpo::tools
