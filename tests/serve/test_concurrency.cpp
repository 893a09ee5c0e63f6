// Concurrent requests on one server share the engine's continuous batching: a seeded request gives the
// same tokens alone and among 31 others sent at the same time (the others of several lengths, seeds and
// sampling settings, so that it joins and leaves a changing batch); a client that drops its stream cancels
// its request, whose KV blocks are freed while it would still have had thousands of tokens to go.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "serve_fixture.h"

namespace grpo::serve {
namespace {

using nlohmann::json;
using test::TestServer;

int status_of(const httplib::Result& r) { return r ? r->status : -1; }  // -1: no response (connection failed)

std::vector<int32_t> token_ids(const httplib::Result& r) {
  if (!r || r->status != 200) return {-1};
  return json::parse(r->body)["choices"][0]["token_ids"].get<std::vector<int32_t>>();
}

TEST(ServeConcurrency, SeededRequestIsBitIdenticalAloneAndAmong31Others) {
  TestServer s;
  const json reference = {
      {"prompt", "The reference prompt"}, {"max_tokens", 48}, {"seed", 7}, {"top_k", 50}, {"ignore_eos", true}};
  const std::vector<int32_t> alone = token_ids(s.post("/v1/completions", reference.dump()));
  ASSERT_EQ(alone.size(), 48u);

  std::vector<std::future<httplib::Result>> others;
  std::promise<void> go;
  std::shared_future<void> start = go.get_future().share();
  for (int i = 0; i < 31; ++i) {
    const json other = {{"prompt", "other prompt number " + std::to_string(i)},
                        {"max_tokens", 8 + 2 * i},
                        {"seed", 100 + i},
                        {"temperature", i % 3 == 0 ? 0.0 : 0.8},
                        {"n", 1 + i % 2}};
    others.push_back(std::async(std::launch::async, [&s, other, start] {
      start.wait();
      return s.post("/v1/completions", other.dump());
    }));
  }
  auto mine = std::async(std::launch::async, [&s, &reference, start] {
    start.wait();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // joins a batch already running
    return s.post("/v1/completions", reference.dump());
  });
  go.set_value();
  EXPECT_EQ(token_ids(mine.get()), alone);
  for (auto& f : others) EXPECT_EQ(status_of(f.get()), 200);  // all connected at once: none dropped
  EXPECT_GT(s.metric("grpo_engine_steps_total"), 0);
}

TEST(ServeConcurrency, DroppedStreamCancelsItsRequestAndFreesItsBlocks) {
  TestServer s;
  const json body = {{"prompt", "a long one"}, {"max_tokens", 4000}, {"stream", true}, {"ignore_eos", true}};
  const std::string got = s.stream("/v1/completions", body.dump(), 400);
  EXPECT_GE(got.size(), 400u);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline &&
         (s.metric("grpo_requests_cancelled_total") < 1 || s.metric("grpo_kv_blocks_used") != 0))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(s.metric("grpo_requests_cancelled_total"), 1);
  EXPECT_EQ(s.metric("grpo_requests_running"), 0);
  EXPECT_EQ(s.metric("grpo_kv_blocks_used"), 0);
  EXPECT_LT(s.metric("grpo_generated_tokens_total"), 4000);  // cut short, not run to its end
}

}  // namespace
}  // namespace grpo::serve
