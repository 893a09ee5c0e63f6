// Multi-turn generation with the fake model and a fake tool handler: samples are parked while their reply is
// prepared (on other threads, with random delays) and resume after it is prefilled; the result holds every
// turn with a response mask, per-turn counts and the handler's reports; log-probs of the sampled tokens match
// a fresh recompute over the whole conversation; results do not depend on reply timing, batch composition,
// chunking, the prefix cache, preemption (parked samples included) or the engine's memory released between
// rollouts; limits and budgets hold.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/error.h"
#include "rollout/engine.h"
#include "rollout/fake_model.h"
#include "rollout/turns.h"

using namespace grpo;
using namespace grpo::rollout;
using fake::FakeModel;
using fake::bytes_of_blocks;
using fake::engine_config;

namespace multi_turn_test {

// Stop tokens: a turn ends every few tokens.
const std::vector<int32_t> kStops = {1, 2, 3, 4, 5, 6};

// The fake tools: a turn holds a call unless its length is 1, 4, 7, ...; the reply is two spaces and the turn's first three
// tokens mapped to letters (then `extra` more letters); every fourth turn's call is reported as failed.
std::vector<int32_t> reply_for(std::span<const int32_t> turn, int extra) {
  std::vector<int32_t> r = {36, 36};
  for (size_t i = 0; i < std::min<size_t>(3, turn.size()); ++i) r.push_back(7 + turn[i] % 19);
  for (int i = 0; i < extra; ++i) r.push_back(7 + i % 19);
  return r;
}
bool holds_call(std::span<const int32_t> turn) { return turn.size() % 3 != 1; }

class FakeTools : public TurnHandler {
 public:
  FakeTools(int max_delay_ms = 0, uint64_t salt = 0, int extra = 0)
      : max_delay_ms_(max_delay_ms), salt_(salt), extra_(extra) {}
  std::future<TurnReply> on_turn_end(const TurnEnd& t) override {
    ++calls;
    EXPECT_EQ(t.turn_text, fake::fake_decode(t.turn_tokens.first(t.turn_tokens.size() - 1)));
    if (!holds_call(t.turn_tokens)) return {};
    std::vector<int32_t> turn(t.turn_tokens.begin(), t.turn_tokens.end());
    uint64_t h = salt_ * 0x9e3779b97f4a7c15ull;
    for (int32_t x : turn) h = h * 31 + static_cast<uint64_t>(x);
    const int delay = max_delay_ms_ > 0 ? static_cast<int>(h % static_cast<uint64_t>(max_delay_ms_ + 1)) : 0;
    const int extra = extra_;
    return std::async(std::launch::async, [turn, delay, extra] {
      if (delay > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay));
      TurnReply r;
      r.tokens = reply_for(turn, extra);
      r.tool_calls = 1;
      if (turn.size() % 4 == 0) r.failures.push_back("bad_json");
      r.tool_seconds = 0.5;
      return r;
    });
  }
  std::atomic<int> calls{0};

 private:
  int max_delay_ms_;
  uint64_t salt_;
  int extra_;
};

std::vector<Request> conversations(int n_requests = 5, int n = 4, int max_new = 48) {
  std::vector<Request> reqs;
  for (int i = 0; i < n_requests; ++i) {
    Request r;
    r.prompt = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};  // shared by every group
    for (int j = 0; j <= i * 2; ++j) r.prompt.push_back((i * 5 + j * 3) % 36);
    r.n = n;
    r.max_new_tokens = max_new + i;
    r.seed = 11;
    r.id = static_cast<uint64_t>(i);
    r.sampling.temperature = 0.8f;
    r.stop_token_ids = kStops;
    reqs.push_back(r);
  }
  return reqs;
}

void expect_same(const std::vector<RequestResult>& a, const std::vector<RequestResult>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].samples.size(), b[i].samples.size());
    for (size_t k = 0; k < a[i].samples.size(); ++k) {
      const SampleResult &x = a[i].samples[k], &y = b[i].samples[k];
      EXPECT_EQ(x.tokens, y.tokens) << "request " << i << " sample " << k;
      EXPECT_EQ(x.logprobs, y.logprobs);
      EXPECT_EQ(x.response_mask, y.response_mask);
      EXPECT_EQ(x.text, y.text);
      EXPECT_EQ(x.finish_reason, y.finish_reason);
      EXPECT_EQ(x.turns.assistant_turns, y.turns.assistant_turns);
      EXPECT_EQ(x.turns.user_turns, y.turns.user_turns);
      EXPECT_EQ(x.turns.failures, y.turns.failures);
    }
  }
}

// log p(token) of the model after `prefix`, one fresh prefill, under softmax(logits / temperature).
double recomputed_logprob(FakeModel& model, const std::vector<int32_t>& prefix, int32_t token, double temperature) {
  const int64_t T = static_cast<int64_t>(prefix.size()), bs = 4;
  KvCache kv({FakeModel::L, FakeModel::K, FakeModel::D, bs, ops::KvDType::F32}, (T + bs - 1) / bs, false);
  std::vector<int32_t> blocks, pos(T), seq(T, 0), slots(T);
  for (int64_t b = 0; b < kv.num_blocks(); ++b) blocks.push_back(kv.allocate());
  for (int64_t t = 0; t < T; ++t) {
    pos[t] = static_cast<int32_t>(t);
    slots[t] = static_cast<int32_t>(blocks[t / bs] * bs + t % bs);
  }
  const int32_t indptr[2] = {0, static_cast<int32_t>(blocks.size())};
  const int32_t row = static_cast<int32_t>(T - 1);
  const ForwardBatch b{prefix.data(), pos.data(), seq.data(), slots.data(), T, 1, indptr, blocks.data(), &row, 1};
  Workspace ws(model.workspace_bytes(T, 1));
  std::vector<float> logits(FakeModel::V);
  model.forward(b, kv.view(), logits.data(), ws);
  double mx = -INFINITY, z = 0;
  for (float l : logits) mx = std::max(mx, l / temperature);
  for (float l : logits) z += std::exp(l / temperature - mx);
  return logits[token] / temperature - mx - std::log(z);
}

// The structure of one sample (generated without turn limits): turns separated by replies, each reply the
// fake tools' answer to the turn before it, counts and text consistent with it. A last turn that holds a
// call got a reply too long to insert: its call and failure are counted all the same.
void check_sample(const Request& r, const SampleResult& s, int extra) {
  ASSERT_EQ(s.tokens.size(), s.logprobs.size());
  ASSERT_EQ(s.tokens.size(), s.response_mask.size());
  EXPECT_LE(static_cast<int64_t>(s.tokens.size()), r.max_new_tokens);
  std::string text;
  int32_t assistant = 0, user = 0, failures = 0, calls = 0;
  int64_t inserted = 0;
  size_t i = 0;
  while (i < s.tokens.size()) {
    ASSERT_EQ(s.response_mask[i], 1) << "a reply never comes first";
    size_t j = i;
    while (j < s.tokens.size() && s.response_mask[j] == 1) ++j;
    const std::span<const int32_t> turn(s.tokens.data() + i, j - i);
    ++assistant;
    const bool stopped = std::find(kStops.begin(), kStops.end(), turn.back()) != kStops.end();
    text += fake::fake_decode(stopped ? turn.first(turn.size() - 1) : turn);
    if (j == s.tokens.size()) {
      const bool asked = stopped && holds_call(turn) && j < static_cast<size_t>(r.max_new_tokens);
      calls += asked;
      failures += asked && turn.size() % 4 == 0;
      break;
    }
    ++calls;
    EXPECT_TRUE(stopped && holds_call(turn));
    failures += turn.size() % 4 == 0;
    size_t k = j;
    while (k < s.tokens.size() && s.response_mask[k] == 0) {
      EXPECT_EQ(s.logprobs[k], 0.0f);
      ++k;
    }
    const std::vector<int32_t> expect = reply_for(turn, extra);
    EXPECT_EQ(std::vector<int32_t>(s.tokens.begin() + j, s.tokens.begin() + k), expect);
    text += fake::fake_decode(expect);
    ++user;
    inserted += static_cast<int64_t>(k - j);
    i = k;
  }
  EXPECT_EQ(s.text, text);
  EXPECT_EQ(s.turns.assistant_turns, assistant);
  EXPECT_EQ(s.turns.user_turns, user);
  EXPECT_EQ(s.turns.inserted_tokens, inserted);
  EXPECT_EQ(s.turns.tool_calls, calls);
  const auto f = s.turns.failures.find("bad_json");
  EXPECT_EQ(f == s.turns.failures.end() ? 0 : f->second, failures);
}

}  // namespace multi_turn_test

using namespace multi_turn_test;

TEST(MultiTurn, ParksResumesAndKeepsEveryTurnWithItsMask) {
  FakeModel model(4, 256, /*logit_scale=*/1.0f);
  Engine engine(model, engine_config(), fake::fake_decode);
  FakeTools tools(3, 1);
  const auto reqs = conversations();
  const auto out = engine.generate(reqs, {}, MultiTurn{&tools});
  int64_t multi = 0, replies = 0;
  for (size_t i = 0; i < out.size(); ++i)
    for (const SampleResult& s : out[i].samples) {
      check_sample(reqs[i], s, 0);
      multi += s.turns.user_turns > 0;
      replies += s.turns.user_turns;
    }
  EXPECT_GT(multi, 5) << "the workload must have samples with several turns";
  EXPECT_EQ(engine.stats().replies, replies);
  EXPECT_GT(engine.stats().parked_peak, 0);
  EXPECT_EQ(engine.kv_cache().available_blocks(), engine.kv_cache().num_blocks());  // every block back
  // the sampled tokens' log-probs are those of one pass over the whole conversation (replies included)
  for (size_t i = 0; i < 2; ++i) {
    const SampleResult& s = out[i].samples[0];
    std::vector<int32_t> prefix = reqs[i].prompt;
    for (size_t t = 0; t < s.tokens.size(); ++t) {
      if (s.response_mask[t]) {
        EXPECT_NEAR(s.logprobs[t], recomputed_logprob(model, prefix, s.tokens[t], 0.8), 1e-5) << t;
      }
      prefix.push_back(s.tokens[t]);
    }
  }
  // without a handler: single-turn, no mask
  const auto single = engine.generate(reqs);
  for (const RequestResult& r : single)
    for (const SampleResult& s : r.samples) {
      EXPECT_TRUE(s.response_mask.empty());
      EXPECT_EQ(s.turns.assistant_turns, 0);
    }
}

// A handler whose every reply comes 20 ms after the turn: each reply taken counts at least that long parked.
class SlowTools : public TurnHandler {
 public:
  std::future<TurnReply> on_turn_end(const TurnEnd& t) override {
    if (!holds_call(t.turn_tokens)) return {};
    std::vector<int32_t> turn(t.turn_tokens.begin(), t.turn_tokens.end());
    return std::async(std::launch::async, [turn] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      TurnReply r;
      r.tokens = reply_for(turn, 0);
      r.tool_calls = 1;
      return r;
    });
  }
};

TEST(MultiTurn, CountsTheTimeEachSampleSpendsParked) {
  FakeModel model(4, 256, /*logit_scale=*/1.0f);
  Engine engine(model, engine_config(), fake::fake_decode);
  SlowTools tools;
  const auto out = engine.generate(conversations(3, 2, 24), {}, MultiTurn{&tools});
  int64_t parked_samples = 0;
  for (const RequestResult& r : out)
    for (const SampleResult& s : r.samples) {
      // every reply taken (inserted or, past the budget, ending the sample) was parked for its 20 ms
      EXPECT_GE(s.turns.parked_seconds, 0.02 * s.turns.tool_calls) << s.turns.tool_calls << " replies";
      if (s.turns.tool_calls == 0) {
        EXPECT_EQ(s.turns.parked_seconds, 0.0);
      }
      parked_samples += s.turns.tool_calls > 0;
    }
  EXPECT_GT(parked_samples, 0) << "the workload must park samples";
}

TEST(MultiTurn, IdenticalAcrossReplyTimingBatchesChunkingAndPreemption) {
  FakeModel model(4, 256, /*logit_scale=*/1.0f);
  const auto reqs = conversations(6, 4, 40);
  FakeTools instant;
  Engine base(model, engine_config(), fake::fake_decode);
  const auto a = base.generate(reqs, {}, MultiTurn{&instant});
  EXPECT_EQ(base.stats().preemptions, 0);
  {  // replies that take 0-8 ms, in another order
    FakeTools slow(8, 5);
    expect_same(a, base.generate(reqs, {}, MultiTurn{&slow}));
  }
  for (size_t i = 0; i < reqs.size(); i += 2) {  // one request at a time
    FakeTools tools(2, i);
    expect_same({a[i]}, base.generate({reqs[i]}, {}, MultiTurn{&tools}));
  }
  {  // reversed, chunked prefill, few sequences per step
    EngineConfig tight = engine_config();
    tight.token_budget = 5;
    tight.max_seqs = 3;
    Engine chunked(model, tight, fake::fake_decode);
    std::vector<Request> rev(reqs.rbegin(), reqs.rend());
    FakeTools tools(2, 9);
    auto b = chunked.generate(rev, {}, MultiTurn{&tools});
    std::reverse(b.begin(), b.end());
    expect_same(a, b);
  }
  {  // the engine's memory released between rollouts, as a GRPO step does after its rollout
    base.release_memory();
    FakeTools tools(2, 4);
    expect_same(a, base.generate(reqs, {}, MultiTurn{&tools}));
    EXPECT_EQ(base.kv_cache().available_blocks(), base.kv_cache().num_blocks());
  }
  // A cache with room for the longest sample and little more: parked samples hold blocks that running ones
  // need, so they are preempted (their reply still comes, and they are recomputed after it).
  int64_t longest = 0;
  for (const Request& r : reqs) longest = std::max<int64_t>(longest, r.prompt.size() + r.max_new_tokens);
  for (bool prefix : {false, true}) {
    Engine small(model, engine_config(bytes_of_blocks((longest + 3) / 4 + 1), prefix), fake::fake_decode);
    FakeTools slow(20, 3);
    const auto c = small.generate(reqs, {}, MultiTurn{&slow});
    EXPECT_GT(small.stats().preemptions, 0);
    EXPECT_GT(small.stats().reply_wait_s, 0.0);
    expect_same(a, c);
    EXPECT_EQ(small.kv_cache().available_blocks(), small.kv_cache().num_blocks());
  }
}

TEST(MultiTurn, TurnLimitsAndTheResponseBudget) {
  FakeModel model(4, 256, /*logit_scale=*/1.0f);
  Engine engine(model, engine_config(), fake::fake_decode);
  const auto reqs = conversations(4, 4, 48);
  for (int32_t max_assistant : {1, 2, 3}) {
    FakeTools tools;
    const auto out = engine.generate(reqs, {}, MultiTurn{&tools, max_assistant});
    for (const RequestResult& r : out)
      for (const SampleResult& s : r.samples) {
        EXPECT_LE(s.turns.assistant_turns, max_assistant);
        EXPECT_EQ(s.turns.user_turns, std::max(0, s.turns.assistant_turns - 1));
      }
  }
  {
    FakeTools tools;
    const auto out = engine.generate(reqs, {}, MultiTurn{&tools, 0, /*max_user_turns=*/1});
    for (const RequestResult& r : out)
      for (const SampleResult& s : r.samples) EXPECT_LE(s.turns.user_turns, 1);
  }
  // Long replies: one that would reach max_new_tokens is not inserted and the sample ends, cut by the length.
  FakeTools verbose(0, 0, 24);
  const auto out = engine.generate(reqs, {}, MultiTurn{&verbose});
  int64_t cut = 0;
  for (size_t i = 0; i < out.size(); ++i)
    for (const SampleResult& s : out[i].samples) {
      check_sample(reqs[i], s, 24);
      if (s.finish_reason != FinishReason::Length || s.tokens.size() == static_cast<size_t>(reqs[i].max_new_tokens))
        continue;
      ++cut;  // ended short of the budget: its last turn asked for a reply that did not fit
      const auto last = std::find(s.response_mask.rbegin(), s.response_mask.rend(), 0);
      const size_t turn_start = last == s.response_mask.rend() ? 0 : s.response_mask.rend() - last;
      const std::span<const int32_t> turn(s.tokens.data() + turn_start, s.tokens.size() - turn_start);
      EXPECT_TRUE(holds_call(turn));
      EXPECT_GE(s.tokens.size() + reply_for(turn, 24).size(), static_cast<size_t>(reqs[i].max_new_tokens));
    }
  EXPECT_GT(cut, 0) << "some replies must not fit";
}

TEST(MultiTurn, HandlerErrorsAndBadRepliesLeaveTheCacheWhole) {
  FakeModel model(4, 256, /*logit_scale=*/1.0f);
  Engine engine(model, engine_config(), fake::fake_decode);
  struct Throwing : TurnHandler {
    std::future<TurnReply> on_turn_end(const TurnEnd&) override {
      return std::async(std::launch::async, []() -> TurnReply { throw std::runtime_error("tool exploded"); });
    }
  } throwing;
  struct OutOfVocab : TurnHandler {
    std::future<TurnReply> on_turn_end(const TurnEnd&) override {
      std::promise<TurnReply> p;
      TurnReply reply;
      reply.tokens = {1, 2, 999};
      p.set_value(reply);
      return p.get_future();
    }
  } bad;
  const auto reqs = conversations(2, 2, 40);
  EXPECT_THROW(engine.generate(reqs, {}, MultiTurn{&throwing}), std::runtime_error);
  EXPECT_EQ(engine.kv_cache().available_blocks(), engine.kv_cache().num_blocks());
  try {
    engine.generate(reqs, {}, MultiTurn{&bad});
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("token id 999, outside the vocabulary"), std::string::npos) << e.what();
  }
  EngineConfig stat = engine_config();
  stat.continuous_batching = false;
  Engine static_engine(model, stat, fake::fake_decode);
  FakeTools tools;
  EXPECT_THROW(static_engine.generate(reqs, {}, MultiTurn{&tools}), Error);
  // the engine works on afterwards
  FakeTools ok;
  const auto out = engine.generate(reqs, {}, MultiTurn{&ok});
  for (size_t i = 0; i < out.size(); ++i)
    for (const SampleResult& s : out[i].samples) check_sample(reqs[i], s, 0);
}
