// The request and response mapping without a server: chat messages (text parts joined, developer as system,
// tools rendered by the template unless tool_choice is "none", pictures refused by a text model), completion
// prompts (strings, lists, token ids), bounds named by field, hermes tool calls as OpenAI tool_calls with
// JSON-string arguments, a stream holding back what may still become a stop string or a tool call, and data
// URLs decoded.
#include <gtest/gtest.h>

#include "serve/api_error.h"
#include "serve/openai_request.h"
#include "serve/openai_response.h"
#include "serve/pictures.h"
#include "serve/stream.h"
#include "serve_fixture.h"

namespace grpo::serve {
namespace {

using nlohmann::json;

class OpenAiMapping : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { tok_ = new Tokenizer(Tokenizer::load(test::tiny_model())); }
  ModelInfo info() const {
    return ModelInfo{.name = "tiny", .tok = tok_, .vocab = 384, .context = 4096, .stop_ids = {258}};
  }
  // The ApiError's (status, param) of parsing body, or (0, "") when it parses.
  std::pair<int, std::string> error(const json& body, bool chat = true) const {
    try {
      chat ? parse_chat_request(body.dump(), info(), 1) : parse_completion_request(body.dump(), info(), 1);
    } catch (const ApiError& e) {
      return {e.status, e.param};
    }
    return {0, ""};
  }
  std::string prompt_text(const json& body) const {
    return tok_->decode(parse_chat_request(body.dump(), info(), 1).requests[0].prompt, false);
  }
  static Tokenizer* tok_;
};
Tokenizer* OpenAiMapping::tok_ = nullptr;

TEST_F(OpenAiMapping, ChatMessagesGoThroughTheTemplate) {
  const json parts = {
      {"messages",
       {{{"role", "developer"}, {"content", "be brief"}},
        {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "a"}}, {{"type", "text"}, {"text", "b"}}}}}}},
      {"temperature", nullptr}};
  const std::string text = prompt_text(parts);
  EXPECT_NE(text.find("<|im_start|>system\nbe brief<|im_end|>"), std::string::npos) << text;
  EXPECT_NE(text.find("<|im_start|>user\nab<|im_end|>"), std::string::npos) << text;
  const ParsedRequest p = parse_chat_request(parts.dump(), info(), 42);
  EXPECT_EQ(p.requests[0].seed, 42u);  // no seed given: the server's
  EXPECT_EQ(p.requests[0].max_new_tokens, 4096 - static_cast<int64_t>(p.requests[0].prompt.size()));
  EXPECT_EQ(p.requests[0].stop_token_ids, std::vector<int32_t>{258});

  const json tool = {{"type", "function"},
                     {"function", {{"name", "get_weather"}, {"parameters", {{"type", "object"}}}}}};
  json with_tools = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"tools", {tool}}};
  EXPECT_NE(prompt_text(with_tools).find("get_weather"), std::string::npos);
  EXPECT_TRUE(parse_chat_request(with_tools.dump(), info(), 1).tools);
  with_tools["tool_choice"] = "none";
  EXPECT_EQ(prompt_text(with_tools).find("get_weather"), std::string::npos);
}

// tool_choice "required" and a named function are enforced by starting the reply: the prompt ends with the
// generation prompt followed by the opening of a call (of that function), and the reply's text starts with it.
TEST_F(OpenAiMapping, ToolChoiceStartsTheReplyWithACall) {
  const json tool = {{"type", "function"}, {"function", {{"name", "get_weather"}}}};
  json body = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"tools", {tool}}};
  const std::string plain = prompt_text(body);
  EXPECT_NE(plain.rfind("<|im_start|>assistant"), std::string::npos) << plain;  // the generation prompt
  body["tool_choice"] = "auto";
  EXPECT_EQ(prompt_text(body), plain);
  body["tool_choice"] = "required";
  EXPECT_EQ(prompt_text(body), plain + "<tool_call>\n");
  body["tool_choice"] = {{"type", "function"}, {"function", {{"name", "get_weather"}}}};
  const ParsedRequest named = parse_chat_request(body.dump(), info(), 1);
  EXPECT_EQ(named.reply_start, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": ");
  EXPECT_EQ(prompt_text(body), plain + named.reply_start);
  rollout::RequestResult done;  // the model completes the call
  done.samples.resize(1);
  done.samples[0].text = "{\"city\": \"Oslo\"}}\n</tool_call>";
  done.samples[0].finish_reason = rollout::FinishReason::Stop;
  const json reply = chat_response(ResponseHead{"id", 0, "tiny", tok_}, named, {done});
  const json& message = reply["choices"][0]["message"];
  EXPECT_EQ(reply["choices"][0]["finish_reason"], "tool_calls") << reply;
  EXPECT_TRUE(message["content"].is_null());
  EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(message["tool_calls"][0]["function"]["arguments"].get<std::string>()),
            json({{"city", "Oslo"}}));
  ResponseStream stream(named, ResponseHead{"id", 0, "tiny", tok_});
  const std::string events = stream.start() + stream.finish({done});
  EXPECT_NE(events.find("\"name\":\"get_weather\""), std::string::npos) << events;

  body["tool_choice"] = {{"type", "function"}, {"function", {{"name", "elsewhere"}}}};
  EXPECT_EQ(error(body), std::make_pair(400, std::string("tool_choice")));
  body["tool_choice"] = "sometimes";
  EXPECT_EQ(error(body), std::make_pair(400, std::string("tool_choice")));
  body.erase("tools");
  body["tool_choice"] = "required";
  EXPECT_EQ(error(body), std::make_pair(400, std::string("tool_choice")));
}

TEST_F(OpenAiMapping, BadFieldsAreNamed) {
  const json user = {{{"role", "user"}, {"content", "hi"}}};
  EXPECT_EQ(error({{"messages", user}, {"n", 17}}), std::make_pair(400, std::string("n")));
  EXPECT_EQ(error({{"messages", user}, {"temperature", -1}}), std::make_pair(400, std::string("temperature")));
  EXPECT_EQ(error({{"messages", user}, {"stop", json::array({""})}}), std::make_pair(400, std::string("stop")));
  EXPECT_EQ(error({{"messages", user}, {"stream", "yes"}}), std::make_pair(400, std::string("stream")));
  EXPECT_EQ(error({{"messages", {{{"role", "robot"}, {"content", "x"}}}}}),
            std::make_pair(400, std::string("messages")));
  const json picture = {{{"role", "user"}, {"content", {{{"type", "image_url"}, {"image_url", {{"url", "data:,"}}}}}}}};
  EXPECT_EQ(error({{"messages", picture}}), std::make_pair(400, std::string("messages")));  // a text model
  EXPECT_EQ(error({{"model", "gpt-4"}, {"messages", user}}), std::make_pair(404, std::string("model")));
  EXPECT_EQ(error({{"prompt", {1, 9999}}}, false), std::make_pair(400, std::string("prompt")));
  EXPECT_EQ(error({{"prompt", json::array()}}, false), std::make_pair(400, std::string("prompt")));
  EXPECT_EQ(error({{"prompt", ""}}, false), std::make_pair(400, std::string("prompt")));
  EXPECT_EQ(error({{"prompt", "x"}, {"logprobs", 6}}, false), std::make_pair(400, std::string("logprobs")));
  EXPECT_EQ(error(json::array(), false).first, 400);
}

TEST_F(OpenAiMapping, CompletionPromptsInEveryForm) {
  EXPECT_EQ(parse_completion_request(R"({"prompt": "ab"})", info(), 1).requests[0].prompt, tok_->encode("ab"));
  EXPECT_EQ(parse_completion_request(R"({"prompt": ["a", "b"]})", info(), 1).requests.size(), 2u);
  EXPECT_EQ(parse_completion_request(R"({"prompt": [5, 6]})", info(), 1).requests[0].prompt,
            (std::vector<int32_t>{5, 6}));
  const ParsedRequest lists = parse_completion_request(R"({"prompt": [[5], [6, 7]], "seed": 3, "n": 2})", info(), 1);
  ASSERT_EQ(lists.requests.size(), 2u);
  EXPECT_EQ(lists.requests[1].prompt, (std::vector<int32_t>{6, 7}));
  EXPECT_EQ(lists.requests[1].seed, 3u);
  EXPECT_EQ(lists.requests[1].n, 2);
}

TEST(OpenAiResponse, HermesCallsBecomeToolCalls) {
  const ToolSplit s = split_tool_calls(
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>",
      "c");
  EXPECT_EQ(s.content, "Let me check.");
  ASSERT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(s.calls[0]["type"], "function");
  EXPECT_EQ(s.calls[0]["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(s.calls[0]["function"]["arguments"].get<std::string>()), json({{"city", "Oslo"}}));
  EXPECT_TRUE(split_tool_calls("no calls here", "c").calls.empty());
  EXPECT_EQ(content_before_calls("text <tool", false), "text ");
  EXPECT_EQ(content_before_calls("text <tool", true), "text <tool");
  EXPECT_EQ(content_before_calls("a<tool_call>{}", false), "a");
}

TEST(OpenAiResponse, StreamHoldsBackAPossibleStopString) {
  ParsedRequest p;
  p.endpoint = Endpoint::Chat;
  p.requests.resize(1);
  p.requests[0].stop_strings = {"END"};
  ResponseStream stream(p, ResponseHead{"id", 0, "tiny", nullptr});
  stream.start();
  const std::string first = stream.on_tokens(TokenEvent{0, 0, {1}, {-0.5f}, {}, "abcE"});
  EXPECT_NE(first.find("\"content\":\"ab\""), std::string::npos) << first;  // "cE" may start "END"
  rollout::RequestResult done;
  done.samples.resize(1);
  done.samples[0].text = "abc";  // the stop string came: "E" was its start
  done.samples[0].finish_reason = rollout::FinishReason::Stop;
  const std::string end = stream.finish({done});
  EXPECT_NE(end.find("\"content\":\"c\""), std::string::npos) << end;
  EXPECT_NE(end.find("\"finish_reason\":\"stop\""), std::string::npos) << end;
  EXPECT_TRUE(end.ends_with("data: [DONE]\n\n"));
}

TEST(OpenAiPictures, DataUrlsDecode) {
  const std::vector<uint8_t> hi = data_url_bytes("data:image/png;base64,aGk=");
  EXPECT_EQ(std::string(hi.begin(), hi.end()), "hi");
  EXPECT_THROW(data_url_bytes("https://example.com/a.png"), std::exception);
  EXPECT_THROW(data_url_bytes("data:image/png;base64,a*b"), std::exception);
}

}  // namespace
}  // namespace grpo::serve
