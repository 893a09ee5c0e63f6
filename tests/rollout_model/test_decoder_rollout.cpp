// The rollout engine over the real decoder: greedy decoding with the paged KV cache equals argmax
// decoding that recomputes the full forward pass every step (f32), and the engine's log-probs match the
// training decoder's (what `grpo score` computes) on the finished sequences. Sampled results are
// bit-identical whatever the batch composition, scheduling, prefix sharing and thread count (f32 and bf16,
// and bf16 on the AMX tile kernel, emulated).
#include <gtest/gtest.h>

#include <cmath>

#include "core/threads.h"
#include "kernels/cpu/gemv_amx.h"
#include "model/decoder.h"
#include "rollout/decoder_model.h"
#include "rollout/engine.h"
#include "test_util.h"

using namespace grpo;

namespace {

using grpo::test::kReferenceModels;

// Greedy continuation of `prompt` by full recomputation: argmax of the last row's logits each step.
std::vector<int32_t> greedy_by_recompute(ModelWeights& w, std::vector<int32_t> seq, int n) {
  Decoder dec(w, DecoderOptions{});
  const int64_t V = w.config().vocab_size;
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    PackedBatch b = PackedBatch::from_sequences({seq});
    std::vector<float> lp(b.T()), ent(b.T()), logits(b.T() * V);
    dec.forward(b, lp.data(), ent.data());
    dec.full_logits(logits.data());
    const float* last = logits.data() + (b.T() - 1) * V;
    int32_t best = static_cast<int32_t>(std::max_element(last, last + V) - last);
    out.push_back(best);
    seq.push_back(best);
  }
  return out;
}

rollout::Request greedy_request(std::vector<int32_t> prompt, int n_new, uint64_t id) {
  rollout::Request r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0;
  r.max_new_tokens = n_new;
  r.id = id;
  return r;
}

class DecoderRollout : public ::testing::TestWithParam<std::string> {};

TEST_P(DecoderRollout, GreedyWithCacheEqualsFullRecompute) {
  auto w = ModelWeights::load(kReferenceModels + GetParam());
  rollout::EngineConfig ec;
  ec.kv_memory_bytes = 8 << 20;
  ec.token_budget = 7;  // forces chunked prefill
  rollout::DecoderRolloutModel model(*w, ComputeMode::F32, ec.block_size);
  rollout::Engine engine(model, ec);
  std::vector<std::vector<int32_t>> prompts = {{1, 5, 9, 2, 7, 3, 3, 8, 20, 11}, {4}, {6, 6, 6, 2, 100, 17, 9}};
  std::vector<rollout::Request> reqs;
  for (size_t i = 0; i < prompts.size(); ++i) reqs.push_back(greedy_request(prompts[i], 12, i));
  auto res = engine.generate(reqs);
  for (size_t i = 0; i < prompts.size(); ++i) {
    std::vector<int32_t> expect = greedy_by_recompute(*w, prompts[i], 12);
    EXPECT_EQ(res[i].samples[0].tokens, expect) << "prompt " << i;
    // Log-probs of the generated tokens under the training decoder (what `grpo score` reports).
    std::vector<int32_t> full = prompts[i];
    full.insert(full.end(), expect.begin(), expect.end());
    PackedBatch b = PackedBatch::from_sequences({full});
    Decoder dec(*w, DecoderOptions{});
    std::vector<float> lp(b.T()), ent(b.T());
    dec.forward(b, lp.data(), ent.data());
    for (size_t t = 0; t < expect.size(); ++t)
      EXPECT_NEAR(res[i].samples[0].logprobs[t], lp[prompts[i].size() - 1 + t], 1e-4) << "prompt " << i << " token " << t;
  }
}

// Sampling at temperature 1 over `prompts` (3 samples each, the first prompt's id fixed at 0) with the
// given engine settings; returns the first request's samples.
std::vector<rollout::SampleResult> first_request_samples(ModelWeights& w, ComputeMode mode, ops::KvDType kv,
                                                         const std::vector<std::vector<int32_t>>& prompts,
                                                         int64_t token_budget, int64_t max_seqs, bool prefix_cache,
                                                         bool continuous = true) {
  rollout::EngineConfig ec;
  ec.continuous_batching = continuous;
  ec.kv_memory_bytes = 16 << 20;
  ec.kv_dtype = kv;
  ec.token_budget = token_budget;
  ec.max_seqs = max_seqs;
  ec.prefix_cache = prefix_cache;
  rollout::DecoderRolloutModel model(w, mode, ec.block_size);
  rollout::Engine engine(model, ec);
  std::vector<rollout::Request> reqs;
  for (size_t i = 0; i < prompts.size(); ++i) {
    rollout::Request r;
    r.prompt = prompts[i];
    r.n = 3;
    r.sampling.temperature = 1.0f;
    r.max_new_tokens = 20;
    r.seed = 7;
    r.id = i;
    reqs.push_back(std::move(r));
  }
  return engine.generate(reqs)[0].samples;
}

// A request's samples alone, in a crowd, in small steps without the prefix cache, in a static batch and
// with one thread, for each weight mode and KV dtype: bitwise the same.
void expect_samples_independent_of_the_batch(ModelWeights& w, std::initializer_list<ComputeMode> modes,
                                             std::initializer_list<ops::KvDType> kvs) {
  const std::vector<int32_t> mine = {1, 5, 9, 2, 7, 3, 3, 8, 20, 11, 4, 4, 9, 30, 2, 1, 6, 8, 19};
  std::vector<std::vector<int32_t>> crowd = {mine};  // the same request among 12 others (some sharing its prefix)
  for (int i = 0; i < 12; ++i) {
    std::vector<int32_t> p(mine.begin(), mine.begin() + 3 + i);
    p.push_back(40 + i);
    crowd.push_back(p);
  }
  const int threads = num_threads();
  for (ComputeMode mode : modes)
    for (ops::KvDType kv : kvs) {
      SCOPED_TRACE(std::string(mode == ComputeMode::BF16 ? "bf16" : "f32") + " weights, kv " +
                   std::to_string(static_cast<int>(kv)));
      set_num_threads(threads);
      const auto alone = first_request_samples(w, mode, kv, {mine}, 512, 64, true);
      const auto batched = first_request_samples(w, mode, kv, crowd, 512, 64, true);
      const auto chunked = first_request_samples(w, mode, kv, crowd, 5, 7, false);  // small steps, no prefix cache
      const auto static_batch = first_request_samples(w, mode, kv, crowd, 512, 64, false, false);
      set_num_threads(1);
      const auto one_thread = first_request_samples(w, mode, kv, crowd, 64, 40, true);
      set_num_threads(threads);
      for (const auto* other : {&batched, &chunked, &static_batch, &one_thread}) {
        ASSERT_EQ(other->size(), alone.size());
        for (size_t k = 0; k < alone.size(); ++k) {
          EXPECT_EQ((*other)[k].tokens, alone[k].tokens) << "sample " << k;
          EXPECT_EQ((*other)[k].logprobs, alone[k].logprobs) << "sample " << k;  // bitwise
        }
      }
    }
}

TEST_P(DecoderRollout, SamplesDoNotDependOnBatchCompositionOrThreads) {
  auto w = ModelWeights::load(kReferenceModels + GetParam());
  expect_samples_independent_of_the_batch(*w, {ComputeMode::F32, ComputeMode::BF16},
                                          {ops::KvDType::F32, ops::KvDType::BF16, ops::KvDType::I8});
}

// The same with the bf16 GEMVs on the AMX tile kernel (emulated, so on any CPU; at the amx level ops::gemv
// runs the same kernel on the hardware, which the kernel tests compare with the emulator bit for bit). The
// KV cache's dtype does not meet the GEMV: bf16, the rollout's own, only.
TEST_P(DecoderRollout, SamplesDoNotDependOnBatchCompositionOnTheTileKernel) {
  auto w = ModelWeights::load(kReferenceModels + GetParam());
  struct EmulatedTiles {  // on for this test only, whatever fails in it
    EmulatedTiles() { ops::cpu_tiles::set_emulated_tiles_for_tests(true); }
    ~EmulatedTiles() { ops::cpu_tiles::set_emulated_tiles_for_tests(false); }
  } scope;
  expect_samples_independent_of_the_batch(*w, {ComputeMode::BF16}, {ops::KvDType::BF16});
}

INSTANTIATE_TEST_SUITE_P(Models, DecoderRollout, ::testing::Values("qwen3", "qwen3-tied", "qwen2"));

}  // namespace
