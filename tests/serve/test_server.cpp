// `grpo serve`'s HTTP API on a tiny model, in this process: the routes answer in OpenAI's shapes; a greedy
// chat reply is the engine's own greedy completion of the chat template's prompt; completions take token
// ids and return token_ids and token_logprobs; a stream's deltas add up to the whole reply and end with
// usage and [DONE]; errors have OpenAI's shape and status (400 malformed JSON, 404 unknown model, 400 naming
// max_tokens past the context or past what the KV cache can ever hold, 413 over the body limit, 429 with
// Retry-After when the queue is full, 401 without the key).
#include <gtest/gtest.h>

#include <string>

#include "generate/request_fields.h"
#include "serve_fixture.h"

namespace grpo::serve {
namespace {

using nlohmann::json;
using test::sse_events;
using test::TestServer;

json chat_body(const std::string& text, int max_tokens, const json& extra = json::object()) {
  json b = {{"model", "tiny"}, {"messages", {{{"role", "user"}, {"content", text}}}}, {"max_tokens", max_tokens}};
  for (auto it = extra.begin(); it != extra.end(); ++it) b[it.key()] = it.value();
  return b;
}

json error_of(const httplib::Result& r) { return json::parse(r->body).at("error"); }

TEST(ServeHttp, RoutesAnswerInOpenAiShapes) {
  TestServer s;
  const auto models = s.get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(models->status, 200);
  EXPECT_EQ(json::parse(models->body)["data"][0]["id"], "tiny");
  EXPECT_EQ(s.get("/health")->status, 200);
  const auto page = s.get("/");
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("/v1/chat/completions"), std::string::npos);
  EXPECT_EQ(page->body.find("src=\"http"), std::string::npos);  // no external assets
  EXPECT_NE(s.get("/metrics")->body.find("# TYPE grpo_kv_blocks_used gauge"), std::string::npos);
  const auto missing = s.get("/nowhere");
  EXPECT_EQ(missing->status, 404);
  EXPECT_TRUE(error_of(missing).contains("message"));
}

TEST(ServeHttp, GreedyChatIsTheEnginesCompletionOfTheTemplate) {
  TestServer s;
  const auto r =
      s.post("/v1/chat/completions", chat_body("hello", 12, {{"temperature", 0}, {"logprobs", true}}).dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "chat.completion");
  const json& choice = j["choices"][0];
  EXPECT_EQ(choice["message"]["role"], "assistant");

  rollout::Request want;
  want.prompt = generate::chat_prompt(*s.model().tok, generate::Json::array({{{"role", "user"}, {"content", "hello"}}}),
                                      generate::Json());
  want.sampling.temperature = 0;
  want.max_new_tokens = 12;
  want.stop_token_ids = s.model().stop_ids;
  const rollout::SampleResult direct = test::direct(want).samples[0];
  EXPECT_EQ(choice["message"]["content"], direct.text);
  EXPECT_EQ(choice["finish_reason"], direct.finish_reason == rollout::FinishReason::Length ? "length" : "stop");
  ASSERT_EQ(choice["logprobs"]["content"].size(), direct.tokens.size());
  EXPECT_EQ(choice["logprobs"]["content"][0]["logprob"].get<float>(), direct.logprobs[0]);
  EXPECT_EQ(j["usage"]["prompt_tokens"], want.prompt.size());
  EXPECT_EQ(j["usage"]["completion_tokens"], direct.tokens.size());
}

TEST(ServeHttp, CompletionsTakeTokenIdsAndReturnThem) {
  TestServer s;
  const json body = {{"prompt", {{104, 105}, {106}}}, {"max_tokens", 5}, {"temperature", 0}, {"n", 2}, {"logprobs", 1}};
  const auto r = s.post("/v1/completions", body.dump());
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  ASSERT_EQ(j["choices"].size(), 4u);  // 2 prompts x n = 2
  rollout::Request want;
  want.prompt = {106};
  want.sampling.temperature = 0;
  want.max_new_tokens = 5;
  want.stop_token_ids = s.model().stop_ids;
  const rollout::SampleResult direct = test::direct(want).samples[0];
  const json& c = j["choices"][2];  // the second prompt's first choice
  EXPECT_EQ(c["index"], 2);
  EXPECT_EQ(c["token_ids"].get<std::vector<int32_t>>(), direct.tokens);
  EXPECT_EQ(c["token_logprobs"].get<std::vector<float>>(), direct.logprobs);
  EXPECT_EQ(c["logprobs"]["token_logprobs"].size(), direct.tokens.size());
  EXPECT_EQ(c["text"], direct.text);

  const auto echo = s.post("/v1/completions", json{{"prompt", "ab"}, {"max_tokens", 2}, {"echo", true}}.dump());
  ASSERT_EQ(echo->status, 200) << echo->body;
  EXPECT_EQ(json::parse(echo->body)["choices"][0]["text"].get<std::string>().substr(0, 2), "ab");
  const json echo_body = {{"prompt", "ab"}, {"max_tokens", 2}, {"echo", true}, {"seed", 1}, {"stream", true}};
  std::string streamed;  // the streamed text of the choice: the prompt's, then the reply's
  for (const std::string& e : test::sse_events(s.stream("/v1/completions", echo_body.dump())))
    if (e != "[DONE]") streamed += json::parse(e)["choices"][0]["text"].get<std::string>();
  json whole_body = echo_body;
  whole_body.erase("stream");
  EXPECT_EQ(streamed, json::parse(s.post("/v1/completions", whole_body.dump())->body)["choices"][0]["text"]);
}

TEST(ServeHttp, TopLogprobsAreTheEnginesAlternatives) {
  TestServer s;
  const auto r = s.post("/v1/chat/completions",
                        chat_body("hello", 6, {{"temperature", 0}, {"logprobs", true}, {"top_logprobs", 3}}).dump());
  ASSERT_EQ(r->status, 200) << r->body;
  rollout::Request want;
  want.prompt = generate::chat_prompt(*s.model().tok, generate::Json::array({{{"role", "user"}, {"content", "hello"}}}),
                                      generate::Json());
  want.sampling.temperature = 0;
  want.max_new_tokens = 6;
  want.stop_token_ids = s.model().stop_ids;
  want.top_logprobs = 3;
  const rollout::SampleResult direct = test::direct(want).samples[0];
  const json content = json::parse(r->body)["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), direct.tokens.size());
  ASSERT_EQ(direct.top_logprobs.size(), 3 * direct.tokens.size());
  for (size_t t = 0; t < direct.tokens.size(); ++t) {
    ASSERT_EQ(content[t]["top_logprobs"].size(), 3u);
    EXPECT_EQ(content[t]["top_logprobs"][0]["logprob"], content[t]["logprob"]);  // greedy: the best one was taken
    for (size_t k = 0; k < 3; ++k) {
      const rollout::TokenLogprob& a = direct.top_logprobs[t * 3 + k];
      const Tokenizer& tok = *s.model().tok;  // (the tiny model's vocabulary is larger than its tokenizer's)
      EXPECT_EQ(content[t]["top_logprobs"][k]["token"],
                a.token < tok.vocab_size() ? tok.decode(std::vector<int32_t>{a.token}, false) : "");
      EXPECT_EQ(content[t]["top_logprobs"][k]["logprob"].get<float>(), a.logprob);
    }
  }
  const auto refused = s.post("/v1/chat/completions", chat_body("hello", 6, {{"top_logprobs", 3}}).dump());
  EXPECT_EQ(refused->status, 400);
  EXPECT_EQ(error_of(refused)["param"], "top_logprobs");

  const json body = {{"prompt", "ab"}, {"max_tokens", 4}, {"seed", 3}, {"logprobs", 2}, {"ignore_eos", true}};
  const json whole = json::parse(s.post("/v1/completions", body.dump())->body)["choices"][0]["logprobs"];
  ASSERT_EQ(whole["top_logprobs"].size(), 4u);
  for (const json& alts : whole["top_logprobs"]) {  // {text: logprob}: alternatives of the same text are one entry
    EXPECT_GE(alts.size(), 1u);
    EXPECT_LE(alts.size(), 2u);
  }
  json streamed = json::array();  // the stream's chunks carry the same alternatives
  json streamed_offsets = json::array();
  json streamed_body = body;
  streamed_body["stream"] = true;
  for (const std::string& e : test::sse_events(s.stream("/v1/completions", streamed_body.dump()))) {
    if (e == "[DONE]") break;
    const json lp = json::parse(e)["choices"][0]["logprobs"];
    if (lp.is_null()) continue;
    for (const json& alts : lp["top_logprobs"]) streamed.push_back(alts);
    for (const json& o : lp["text_offset"]) streamed_offsets.push_back(o);
  }
  EXPECT_EQ(streamed, whole["top_logprobs"]);
  EXPECT_EQ(streamed_offsets, whole["text_offset"]);
}

// What lm-evaluation-harness's local-completions sends to score a text: the prompt as token ids, echo,
// logprobs 1, max_tokens 1, temperature 0.
TEST(ServeHttp, EchoWithLogprobsScoresThePrompt) {
  TestServer s;
  const std::vector<int32_t> prompt = {104, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100};
  const json body = {{"prompt", prompt}, {"max_tokens", 1}, {"temperature", 0}, {"logprobs", 1}, {"echo", true}};
  const auto r = s.post("/v1/completions", body.dump());
  ASSERT_EQ(r->status, 200) << r->body;
  const json lp = json::parse(r->body)["choices"][0]["logprobs"];
  rollout::Request want;
  want.prompt = prompt;
  want.sampling.temperature = 0;
  want.max_new_tokens = 1;
  want.stop_token_ids = s.model().stop_ids;
  want.prompt_logprobs = true;
  want.top_logprobs = 1;
  const rollout::RequestResult direct = test::direct(want);
  ASSERT_EQ(lp["token_logprobs"].size(), prompt.size() + 1);
  ASSERT_EQ(lp["top_logprobs"].size(), prompt.size() + 1);
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  for (size_t i = 1; i < prompt.size(); ++i) {
    EXPECT_EQ(lp["token_logprobs"][i].get<float>(), direct.prompt_logprobs[i - 1]) << i;
    ASSERT_EQ(lp["top_logprobs"][i].size(), 1u);
    EXPECT_EQ(lp["top_logprobs"][i].begin().value().get<float>(), direct.prompt_top_logprobs[i - 1].logprob);
    EXPECT_LE(lp["token_logprobs"][i].get<float>(), lp["top_logprobs"][i].begin().value().get<float>());
  }
  EXPECT_EQ(lp["token_logprobs"][prompt.size()].get<float>(), direct.samples[0].logprobs[0]);
  json streamed = body;
  streamed["stream"] = true;
  const auto refused = s.post("/v1/completions", streamed.dump());
  EXPECT_EQ(refused->status, 400);
  EXPECT_EQ(error_of(refused)["param"], "echo");
}

TEST(ServeHttp, StreamDeltasAddUpToTheReply) {
  TestServer s;
  const json extra = {{"seed", 5}, {"stop", "zz"}, {"stream_options", {{"include_usage", true}}}};
  const auto whole = s.post("/v1/chat/completions", chat_body("hi", 40, extra).dump());
  ASSERT_EQ(whole->status, 200) << whole->body;
  json streamed_body = chat_body("hi", 40, extra);
  streamed_body["stream"] = true;
  const std::vector<std::string> events = sse_events(s.stream("/v1/chat/completions", streamed_body.dump()));
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text, finish;
  for (size_t i = 0; i + 2 < events.size(); ++i) {
    const json chunk = json::parse(events[i]);
    EXPECT_EQ(chunk["object"], "chat.completion.chunk");
    const json& choice = chunk["choices"][0];
    if (choice["delta"].contains("content")) text += choice["delta"]["content"].get<std::string>();
    if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
  }
  const json usage = json::parse(events[events.size() - 2]);
  EXPECT_TRUE(usage["choices"].empty());
  const json reply = json::parse(whole->body);
  EXPECT_EQ(usage["usage"], reply["usage"]);
  EXPECT_EQ(text, reply["choices"][0]["message"]["content"]);
  EXPECT_EQ(finish, reply["choices"][0]["finish_reason"]);
}

TEST(ServeHttp, ErrorsHaveOpenAiShapeAndStatus) {
  ServerOptions o;
  o.max_queue = 1;
  o.max_body_bytes = 4096;
  TestServer s(o);
  const auto malformed = s.post("/v1/chat/completions", "{\"messages\": [");
  EXPECT_EQ(malformed->status, 400);
  EXPECT_EQ(error_of(malformed)["type"], "invalid_request_error");
  const auto model = s.post("/v1/chat/completions", json{{"model", "other"}, {"messages", json::array()}}.dump());
  EXPECT_EQ(model->status, 404);
  EXPECT_EQ(error_of(model)["code"], "model_not_found");
  const auto past = s.post("/v1/chat/completions", chat_body("hi", 5000).dump());
  EXPECT_EQ(past->status, 400);
  EXPECT_EQ(error_of(past)["param"], "max_tokens");
  const auto past2 = s.post("/v1/completions", json{{"prompt", "hi"}, {"max_completion_tokens", 4095}}.dump());
  EXPECT_EQ(error_of(past2)["param"], "max_completion_tokens");
  const auto big = s.post("/v1/completions", json{{"prompt", std::string(5000, 'a')}}.dump());
  EXPECT_EQ(big->status, 413);
  EXPECT_TRUE(error_of(big).contains("message"));
  const auto full = s.post("/v1/completions", json{{"prompt", {"a", "b"}}, {"max_tokens", 2}}.dump());
  EXPECT_EQ(full->status, 429);  // two engine requests, a queue of one
  EXPECT_EQ(full->get_header_value("Retry-After"), "1");
  const auto bad_field = s.post("/v1/chat/completions", chat_body("hi", 3, {{"top_p", 2}}).dump());
  EXPECT_EQ(bad_field->status, 400);
  EXPECT_EQ(error_of(bad_field)["param"], "top_p");
}

TEST(ServeHttp, RequestsThatCouldNeverFitTheKvCacheAreRefusedBeforeQueueing) {
  TestServer s({}, 1 << 20);  // 32 blocks of 16 tokens (f32 k and v of the tiny model's 4 layers)
  const auto r = s.post("/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 1000}}.dump());
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(error_of(r)["param"], "max_tokens");
  EXPECT_NE(error_of(r)["message"].get<std::string>().find("KV blocks"), std::string::npos);
  EXPECT_EQ(s.post("/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 100}}.dump())->status, 200);
}

TEST(ServeHttp, ApiKeyIsRequiredWhenSet) {
  ServerOptions o;
  o.api_key = "sekrit";
  TestServer s(o);
  EXPECT_EQ(s.get("/v1/models")->status, 401);
  EXPECT_EQ(error_of(s.get("/v1/models"))["code"], "invalid_api_key");
  EXPECT_EQ(s.get("/v1/models", {{"Authorization", "Bearer sekrix"}})->status, 401);
  EXPECT_EQ(s.get("/v1/models", {{"Authorization", "Bearer sekrit"}})->status, 200);
  EXPECT_EQ(s.get("/")->status, 200);  // the page itself holds nothing; it sends the key it is given
  EXPECT_TRUE(keys_equal("abc", "abc"));
  EXPECT_FALSE(keys_equal("abcd", "abc"));
  EXPECT_FALSE(keys_equal("", "abc"));
}

TEST(ServeHttp, APortInUseIsRefused) {
  TestServer s;
  const generate::LoadedModel m = generate::load_model(test::tiny_model(), "", "f32", 16, "");
  rollout::EngineConfig ec;
  ec.kv_memory_bytes = 1 << 20;
  rollout::Engine engine(*m.model, ec, rollout::tokenizer_decode_fn(*m.tok));
  ServerOptions o;
  o.port = s.port();
  Server second(o, m, engine);
  try {
    second.bind();
    FAIL() << "a second server bound port " << s.port();
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("cannot listen on 127.0.0.1:" + std::to_string(s.port())), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(s.get("/health")->status, 200);
}

}  // namespace
}  // namespace grpo::serve
