// Engine tests with the fake model: results are bit-identical with and without group sharing / the prefix
// cache, under preemption, across batch compositions, chunk sizes and thread counts; log-probs match a
// fresh recompute; stops, limits and aborts; int8/bf16 KV error; no allocation in warm steps; the same results
// after the engine's memory is released between rollouts; clear errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "core/threads.h"
#include "rollout/engine.h"
#include "rollout/fake_model.h"
#include "rollout/kv_cache.h"

using namespace grpo;
using namespace grpo::rollout;
using fake::FakeModel;
using fake::bytes_of_blocks;
using fake::engine_config;

namespace {

constexpr int64_t kBigCache = 4 << 20;  // 4096 blocks

std::vector<Request> workload(int n_requests = 5, int n = 4, int max_new = 12) {
  std::vector<Request> reqs;
  const std::vector<int32_t> shared = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};  // a common system prompt
  for (int i = 0; i < n_requests; ++i) {
    Request r;
    r.prompt = shared;
    for (int j = 0; j <= i * 3; ++j) r.prompt.push_back((i * 7 + j * 3) % 36);
    r.n = n;
    r.max_new_tokens = max_new + i;
    r.seed = 42;
    r.id = static_cast<uint64_t>(i);
    r.sampling.temperature = 0.9f;
    r.sampling.top_p = i % 2 ? 0.95f : 1.0f;
    reqs.push_back(r);
  }
  return reqs;
}

void expect_identical(const std::vector<RequestResult>& a, const std::vector<RequestResult>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].samples.size(), b[i].samples.size());
    for (size_t k = 0; k < a[i].samples.size(); ++k) {
      const SampleResult &x = a[i].samples[k], &y = b[i].samples[k];
      EXPECT_EQ(x.tokens, y.tokens) << "request " << i << " sample " << k;
      ASSERT_EQ(x.logprobs.size(), y.logprobs.size());
      for (size_t t = 0; t < x.logprobs.size(); ++t) EXPECT_EQ(x.logprobs[t], y.logprobs[t]);
      EXPECT_EQ(x.text, y.text);
      EXPECT_EQ(x.finish_reason, y.finish_reason);
    }
  }
}

// Logits of the last position of `tokens`, computed by one fresh prefill in a private f32 cache.
std::vector<float> fresh_logits(FakeModel& model, const std::vector<int32_t>& tokens,
                                ops::KvDType dt = ops::KvDType::F32) {
  const int64_t T = static_cast<int64_t>(tokens.size()), bs = 4;
  KvCache kv({FakeModel::L, FakeModel::K, FakeModel::D, bs, dt}, (T + bs - 1) / bs, false);
  std::vector<int32_t> blocks, pos(T), seq(T, 0), slots(T);
  for (int64_t b = 0; b < kv.num_blocks(); ++b) blocks.push_back(kv.allocate());
  for (int64_t t = 0; t < T; ++t) {
    pos[t] = static_cast<int32_t>(t);
    slots[t] = static_cast<int32_t>(blocks[t / bs] * bs + t % bs);
  }
  const int32_t indptr[2] = {0, static_cast<int32_t>(blocks.size())};
  const int32_t row = static_cast<int32_t>(T - 1);
  const ForwardBatch b{tokens.data(), pos.data(), seq.data(), slots.data(), T, 1, indptr, blocks.data(), &row, 1};
  Workspace ws(model.workspace_bytes(T, 1));
  std::vector<float> logits(FakeModel::V);
  model.forward(b, kv.view(), logits.data(), ws);
  return logits;
}

}  // namespace

TEST(Engine, GeneratesNSamplesWithLogprobsMatchingARecompute) {
  FakeModel model(4);
  Engine engine(model, engine_config(), fake::fake_decode);
  auto reqs = workload(3, 3, 8);
  auto out = engine.generate(reqs);
  ASSERT_EQ(out.size(), 3u);
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_EQ(out[i].samples.size(), 3u);
    for (const SampleResult& s : out[i].samples) {
      EXPECT_EQ(s.finish_reason, FinishReason::Length);
      ASSERT_EQ(static_cast<int>(s.tokens.size()), reqs[i].max_new_tokens);
      ASSERT_EQ(s.logprobs.size(), s.tokens.size());
      EXPECT_EQ(s.text, fake::fake_decode(s.tokens));
      // each log-prob is log softmax(logits / T) of a fresh full recompute of the prefix
      std::vector<int32_t> prefix = reqs[i].prompt;
      for (size_t t = 0; t < s.tokens.size(); ++t) {
        auto logits = fresh_logits(model, prefix);
        double mx = -INFINITY, z = 0;
        for (float l : logits) mx = std::max(mx, static_cast<double>(l) / 0.9);
        for (float l : logits) z += std::exp(l / 0.9 - mx);
        EXPECT_NEAR(s.logprobs[t], logits[s.tokens[t]] / 0.9 - mx - std::log(z), 1e-5);
        prefix.push_back(s.tokens[t]);
      }
    }
    // samples of a group differ (independent RNG streams)
    EXPECT_NE(out[i].samples[0].tokens, out[i].samples[1].tokens);
  }
  EXPECT_GT(engine.stats().decode_tokens, 0);
}

TEST(Engine, SharingAndPrefixCacheGiveIdenticalResults) {
  FakeModel model(4);
  auto reqs = workload();
  reqs.push_back(reqs[2]);  // an identical prompt later in the batch
  reqs.back().id = 99;
  Engine plain(model, engine_config(kBigCache, false));
  auto a = plain.generate(reqs);
  EXPECT_EQ(plain.stats().prefix_hits, 0);
  Engine cached(model, engine_config(kBigCache, true));
  auto b = cached.generate(reqs);
  expect_identical(a, b);
  auto c = cached.generate(reqs);  // second call: every prompt's full blocks come from the cache
  expect_identical(a, c);
  EXPECT_GT(cached.stats().prefix_hits, 0);
  EXPECT_LT(cached.stats().prefill_tokens, plain.stats().prefill_tokens);
  // one request at a time without any sharing: n requests of n = 1 with the same seeds and ids
  for (size_t i = 0; i < reqs.size(); ++i) {
    for (int k = 0; k < reqs[i].n; ++k) {
      // sample k of a group uses the stream (seed, id, k): reproduce it with a group of k+1
      Request single = reqs[i];
      single.n = k + 1;
      auto one = plain.generate({single});
      EXPECT_EQ(one[0].samples[k].tokens, a[i].samples[k].tokens);
    }
  }
}

TEST(Engine, PreemptionAndRecomputeGiveIdenticalResults) {
  FakeModel model(4);
  auto reqs = workload(6, 4, 16);
  Engine big(model, engine_config());
  auto a = big.generate(reqs);
  EXPECT_EQ(big.stats().preemptions, 0);
  for (bool prefix : {false, true}) {
    // just enough blocks for the longest single sequence (+ spare): samples must take turns
    int64_t longest = 0;
    for (const Request& r : reqs) longest = std::max<int64_t>(longest, r.prompt.size() + r.max_new_tokens);
    Engine small(model, engine_config(bytes_of_blocks((longest + 3) / 4 + 2), prefix));
    auto b = small.generate(reqs);
    EXPECT_GT(small.stats().preemptions, 0);
    expect_identical(a, b);
  }
}

TEST(Engine, IdenticalAcrossBatchCompositionChunkingAndThreads) {
  FakeModel model(4);
  auto reqs = workload();
  Engine base(model, engine_config());
  auto a = base.generate(reqs);
  // one request per call
  for (size_t i = 0; i < reqs.size(); ++i) {
    auto one = base.generate({reqs[i]});
    expect_identical({a[i]}, one);
  }
  // reversed order, tiny token budget (chunked prefill), few sequences per step
  std::vector<Request> rev(reqs.rbegin(), reqs.rend());
  EngineConfig tight = engine_config();
  tight.token_budget = 5;
  tight.max_seqs = 3;
  Engine chunked(model, tight);
  auto b = chunked.generate(rev);
  std::reverse(b.begin(), b.end());
  expect_identical(a, b);
  // thread counts: 128 sequences, enough keys per step for the threaded attention path
  const auto many = workload(16, 8, 30);
  EngineConfig wide = engine_config();
  wide.max_seqs = 128;
  wide.token_budget = 256;
  const int threads = num_threads();
  set_num_threads(2);
  Engine two_threads(model, wide);
  auto c = two_threads.generate(many);
  set_num_threads(1);
  Engine single_thread(model, wide);
  auto d = single_thread.generate(many);
  set_num_threads(threads);
  expect_identical(c, d);
}

TEST(Engine, WarmStepsAllocateNothing) {
  FakeModel model(4);
  Engine engine(model, engine_config());
  auto reqs = workload();
  engine.generate(reqs);
  EXPECT_GT(engine.stats().steps, engine.stats().steps_with_allocs);
  EXPECT_LE(engine.stats().steps_with_allocs, 3);  // one per batch-size bucket: 16, 32, 64 tokens
  engine.generate(reqs);
  EXPECT_EQ(engine.stats().step_allocs, 0);
}

TEST(Engine, StopTokenAndStopStrings) {
  FakeModel model(4);
  Engine engine(model, engine_config(), fake::fake_decode);
  Request r = workload(1, 8, 40)[0];
  auto free_run = engine.generate({r})[0];
  // stop on the token that sample 0 generates at step 5 (first occurrence)
  const int32_t stop = free_run.samples[0].tokens[5];
  r.stop_token_ids = {stop};
  auto out = engine.generate({r})[0];
  for (size_t k = 0; k < out.samples.size(); ++k) {
    const SampleResult& s = out.samples[k];
    const auto& full = free_run.samples[k].tokens;
    const auto at = std::find(full.begin(), full.end(), stop);
    if (at == full.end()) {
      EXPECT_EQ(s.finish_reason, FinishReason::Length);
      continue;
    }
    EXPECT_EQ(s.finish_reason, FinishReason::Stop);
    EXPECT_EQ(s.tokens, std::vector<int32_t>(full.begin(), at + 1));  // the stop token is kept
    EXPECT_EQ(s.text, fake::fake_decode(std::vector<int32_t>(full.begin(), at)));  // its text is not
  }
  // stop string: the two letters at text offset 6..7 of sample 1
  Request rs = workload(1, 8, 40)[0];
  const std::string text1 = free_run.samples[1].text;
  rs.stop_strings = {text1.substr(6, 2)};
  auto out2 = engine.generate({rs})[0];
  for (size_t k = 0; k < out2.samples.size(); ++k) {
    const std::string& full = free_run.samples[k].text;
    const size_t at = full.find(rs.stop_strings[0]);
    const SampleResult& s = out2.samples[k];
    if (at == std::string::npos) {
      EXPECT_EQ(s.text, full);
      continue;
    }
    EXPECT_EQ(s.finish_reason, FinishReason::Stop);
    EXPECT_EQ(s.text, full.substr(0, at));
    EXPECT_EQ(fake::fake_decode(s.tokens).substr(0, at), s.text);
  }
}

// A static batch (the benchmarks' baseline) decodes padding after samples stop, until the longest one has
// stopped, and returns exactly what continuous batching returns (stop ids, stop strings, lengths).
TEST(Engine, StaticBatchPadsButGivesTheSameResults) {
  FakeModel model(4);
  auto reqs = workload(4, 4, 30);
  reqs[0].stop_token_ids = {7, 11};
  reqs[1].stop_strings = {"ab"};
  reqs[2].stop_token_ids = {5};
  EngineConfig cont = engine_config(), stat = engine_config();
  stat.continuous_batching = false;
  Engine a(model, cont, fake::fake_decode), b(model, stat, fake::fake_decode);
  const auto x = a.generate(reqs), y = b.generate(reqs);
  expect_identical(x, y);
  int64_t stopped_early = 0;
  for (const auto& r : x)
    for (const auto& smp : r.samples) stopped_early += smp.finish_reason == FinishReason::Stop;
  ASSERT_GT(stopped_early, 0) << "the workload must have samples that stop early";
  EXPECT_EQ(a.stats().padding_tokens, 0);
  EXPECT_GT(b.stats().padding_tokens, 0);
  EXPECT_EQ(a.stats().generated_tokens, b.stats().generated_tokens);  // padding is not counted as generated
  EXPECT_EQ(b.stats().decode_tokens - a.stats().decode_tokens, b.stats().padding_tokens);
}

// Predetermined lengths (benchmarks): each sample stops at its own length as at a stop token, in every
// batching; the static batch decodes the stopped samples on as padding, as for a stop token.
TEST(Engine, StopLengthsEndEachSampleAtItsLength) {
  FakeModel model(4);
  auto reqs = workload(4, 4, 30);
  for (size_t i = 0; i < reqs.size(); ++i)
    for (int32_t k = 0; k < reqs[i].n; ++k)
      reqs[i].stop_lengths.push_back(k == 0 ? reqs[i].max_new_tokens : 1 + static_cast<int32_t>((i * 5 + k * 7) % 20));
  EngineConfig cont = engine_config(), stat = engine_config();
  stat.continuous_batching = false;
  Engine a(model, cont, fake::fake_decode), b(model, stat, fake::fake_decode);
  const auto x = a.generate(reqs), y = b.generate(reqs);
  expect_identical(x, y);
  int64_t total = 0;
  for (size_t i = 0; i < reqs.size(); ++i)
    for (int32_t k = 0; k < reqs[i].n; ++k) {
      EXPECT_EQ(static_cast<int32_t>(x[i].samples[k].tokens.size()), reqs[i].stop_lengths[k]) << i << " " << k;
      EXPECT_EQ(x[i].samples[k].finish_reason, FinishReason::Stop);
      total += reqs[i].stop_lengths[k];
    }
  EXPECT_EQ(a.stats().generated_tokens, total);
  EXPECT_EQ(b.stats().generated_tokens, total);
  EXPECT_EQ(a.stats().padding_tokens, 0);
  EXPECT_GT(b.stats().padding_tokens, 0);
  reqs[1].stop_lengths.pop_back();
  EXPECT_THROW(a.generate(reqs), Error);
  reqs[1].stop_lengths.push_back(reqs[1].max_new_tokens + 1);
  EXPECT_THROW(a.generate(reqs), Error);
}

TEST(Engine, MaxPositionsEndsWithLength) {
  FakeModel model(4, /*max_positions=*/20);
  Engine engine(model, engine_config());
  Request r = workload(1, 2, 100)[0];
  auto out = engine.generate({r})[0];
  for (const SampleResult& s : out.samples) {
    EXPECT_EQ(s.finish_reason, FinishReason::Length);
    EXPECT_EQ(r.prompt.size() + s.tokens.size(), 20u);
  }
}

TEST(Engine, ProgressCallbackCanAbort) {
  FakeModel model(4);
  Engine engine(model, engine_config());
  int calls = 0;
  auto out = engine.generate(workload(3, 2, 30), [&](const Progress& p) {
    EXPECT_EQ(p.requests_total, 3);
    return ++calls < 5;
  });
  EXPECT_EQ(calls, 5);
  for (const RequestResult& r : out)
    for (const SampleResult& s : r.samples) {
      EXPECT_EQ(s.finish_reason, FinishReason::Abort);
      EXPECT_LT(s.tokens.size(), 30u);
      EXPECT_EQ(s.tokens.size(), s.logprobs.size());
    }
  // the cache is whole again: a new call runs to completion
  auto again = engine.generate(workload(1, 2, 3));
  EXPECT_EQ(again[0].samples[0].finish_reason, FinishReason::Length);
  EXPECT_EQ(engine.kv_cache().available_blocks(), engine.kv_cache().num_blocks());
}

TEST(Engine, QuantisedKvErrorVsF32) {
  FakeModel model(4);
  auto reqs = workload(1, 1, 1);
  std::vector<int32_t> tokens = reqs[0].prompt;
  for (int i = 0; i < 30; ++i) tokens.push_back((i * 11) % 36);
  const auto ref = fresh_logits(model, tokens);
  for (ops::KvDType dt : {ops::KvDType::BF16, ops::KvDType::I8}) {
    const auto got = fresh_logits(model, tokens, dt);
    double max_err = 0, scale = 0;
    for (int64_t v = 0; v < FakeModel::V; ++v) {
      max_err = std::max(max_err, static_cast<double>(std::fabs(got[v] - ref[v])));
      scale = std::max(scale, static_cast<double>(std::fabs(ref[v])));
    }
    std::printf("[measured] fake model logits, %s KV vs f32: max abs err %.2e (max |logit| %.2f)\n",
                std::string(ops::kv_dtype_name(dt)).c_str(), max_err, scale);
    EXPECT_LT(max_err, dt == ops::KvDType::BF16 ? 0.05 : 0.1);
  }
  // the engine runs with either dtype
  for (ops::KvDType dt : {ops::KvDType::BF16, ops::KvDType::I8}) {
    EngineConfig c = engine_config();
    c.kv_dtype = dt;
    Engine engine(model, c);
    auto out = engine.generate(workload(2, 2, 6));
    EXPECT_EQ(out[1].samples[1].tokens.size(), out[1].samples[1].logprobs.size());
  }
}

TEST(Engine, BadRequestsAndConfigsNameTheField) {
  FakeModel model(4);
  Engine engine(model, engine_config());
  auto error_of = [&](const Request& r) -> std::string {
    try {
      engine.generate({workload(1)[0], r});
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  Request good = workload(1)[0];
  Request r = good;
  r.n = 0;
  EXPECT_NE(error_of(r).find("request 1: n must be >= 1"), std::string::npos);
  r = good;
  r.max_new_tokens = -2;
  EXPECT_NE(error_of(r).find("max_new_tokens"), std::string::npos);
  r = good;
  r.sampling.temperature = NAN;
  EXPECT_NE(error_of(r).find("temperature"), std::string::npos);
  r = good;
  r.prompt.clear();
  EXPECT_NE(error_of(r).find("prompt is empty"), std::string::npos);
  r = good;
  r.prompt[2] = FakeModel::V;
  EXPECT_NE(error_of(r).find("prompt[2]"), std::string::npos);
  r = good;
  r.stop_token_ids = {-1};
  EXPECT_NE(error_of(r).find("stop_token_ids[0]"), std::string::npos);
  r = good;
  r.stop_strings = {"x"};  // engine without detokenizer
  EXPECT_NE(error_of(r).find("detokenizer"), std::string::npos);
  // a request that can never fit in the cache
  Engine tiny(model, engine_config(bytes_of_blocks(3)));
  r = good;
  r.max_new_tokens = 50;
  try {
    tiny.generate({r});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("KV blocks"), std::string::npos) << e.what();
  }
  EngineConfig c = engine_config();
  c.max_seqs = 0;
  EXPECT_THROW(Engine(model, c), Error);
  c = engine_config();
  c.kv_memory_bytes = 0;
  c.kv_memory_fraction = 1.5;
  EXPECT_THROW(Engine(model, c), Error);
  c = engine_config(16);
  EXPECT_THROW(Engine(model, c), Error);  // not one block
}

TEST(Engine, KvBlocksForCountsTheLargestSamplesThatRunAtOnce) {
  EXPECT_EQ(kv_blocks_for(3, 17, 4, "test"), 3 * 5);
  EXPECT_EQ(kv_blocks_for(3, 16, 4, "test"), 3 * 4);
  EXPECT_THROW(kv_blocks_for(INT64_MAX / 2, 64, 4, "test"), Error);
  std::vector<Request> reqs(3);
  reqs[0].prompt.assign(6, 1);  // 6 + 10 = 16 tokens: 4 blocks per sample
  reqs[0].max_new_tokens = 10;
  reqs[0].n = 2;
  reqs[1].prompt.assign(3, 1);  // 3 + 30 = 33 tokens: 9 blocks
  reqs[1].max_new_tokens = 30;
  reqs[1].n = 3;
  reqs[2].prompt.assign(40, 1);  // 40 + 40 tokens capped at the context 64: 16 blocks
  reqs[2].max_new_tokens = 40;
  reqs[2].n = 1;
  EXPECT_EQ(kv_blocks_for(reqs, 100, 4, 64), 16 + 3 * 9 + 2 * 4);  // every sample at once
  EXPECT_EQ(kv_blocks_for(reqs, 3, 4, 64), 16 + 2 * 9);             // the three largest
  EXPECT_EQ(kv_blocks_for(reqs, 1, 4, 64), 16 + 2 * 9);             // a group of 3 is admitted whole
}

TEST(Engine, KvBudgetCappedByTheWorkNeedsNoPreemption) {
  FakeModel model(4);
  for (bool continuous : {true, false})
    for (bool prefix : {false, true})
      for (int64_t max_seqs : {3, 8, 64}) {
        auto reqs = workload(6, 4, 16);
        EngineConfig c = engine_config(kBigCache, prefix);
        c.continuous_batching = continuous;
        c.max_seqs = max_seqs;
        c.kv_max_blocks = kv_blocks_for(reqs, max_seqs, c.block_size, model.max_positions());
        Engine engine(model, c);
        EXPECT_EQ(engine.kv_cache().num_blocks(), c.kv_max_blocks);
        engine.generate(reqs);
        EXPECT_EQ(engine.stats().preemptions, 0) << "continuous " << continuous << " prefix " << prefix
                                                 << " max_seqs " << max_seqs;
      }
}

TEST(Engine, KvBudgetIsTheSmallerOfMemoryAndWork) {
  FakeModel model(4);
  EngineConfig c = engine_config(0);
  c.kv_memory_fraction = 1.0;
  c.kv_max_blocks = 10;
  Engine capped(model, c);
  EXPECT_EQ(capped.kv_cache().num_blocks(), 10);
  EXPECT_EQ(capped.kv_budget().bytes, bytes_of_blocks(10));
  EXPECT_GT(capped.kv_budget().available_bytes, 0);
  EXPECT_NE(capped.kv_budget().describe().find("min(1.00 x "), std::string::npos) << capped.kv_budget().describe();
  c = engine_config(bytes_of_blocks(7));  // the memory budget is the smaller
  c.kv_max_blocks = 10;
  Engine small(model, c);
  EXPECT_EQ(small.kv_cache().num_blocks(), 7);
  c.kv_max_blocks = -1;
  EXPECT_THROW(Engine(model, c), Error);
}

// A GRPO step releases the engine's memory after its rollout (Engine::release_memory): the next rollout
// gives what it gives after only clearing the prefix cache (the weights changed), and the released blocks
// are never served from the prefix cache.
TEST(Engine, ReleasingMemoryBetweenRolloutsGivesTheSameResults) {
  FakeModel model(4);
  auto step1 = workload(), step2 = workload(4, 3, 10);
  for (Request& r : step2) r.seed = 7;
  step2.push_back(step1[1]);  // a prompt the first rollout cached
  for (bool prefix : {false, true}) {
    Engine kept(model, engine_config(kBigCache, prefix)), released(model, engine_config(kBigCache, prefix));
    const auto a1 = kept.generate(step1);
    kept.clear_prefix_cache();
    const auto a2 = kept.generate(step2);
    const auto b1 = released.generate(step1);
    released.release_memory();
    EXPECT_EQ(released.kv_cache().available_blocks(), released.kv_cache().num_blocks());
    const auto b2 = released.generate(step2);
    expect_identical(a1, b1);
    expect_identical(a2, b2);
    EXPECT_EQ(released.stats().prefix_hits, kept.stats().prefix_hits);  // only hits within the rollout
    released.release_memory();  // twice in a row, and a third rollout
    released.release_memory();
    expect_identical(a2, released.generate(step2));
    EXPECT_EQ(released.stats().step_allocs, 0);  // the pages come back without any allocation
  }
}

TEST(Engine, ModelErrorLeavesTheCacheWhole) {
  struct FailingModel : fake::FakeModel {
    FailingModel() : FakeModel(4) {}
    void forward(const ForwardBatch& b, const ops::PagedKvView& kv, float* logits, Workspace& ws) override {
      if (forward_calls == 6 && !failed) {
        failed = true;
        throw Error("[fake] forward failed");
      }
      FakeModel::forward(b, kv, logits, ws);
    }
    bool failed = false;
  } model;
  Engine engine(model, engine_config());
  EXPECT_THROW(engine.generate(workload(4, 3, 20)), Error);
  EXPECT_EQ(engine.kv_cache().available_blocks(), engine.kv_cache().num_blocks());
  auto out = engine.generate(workload(1, 2, 3));
  EXPECT_EQ(out[0].samples[1].tokens.size(), 3u);
}
