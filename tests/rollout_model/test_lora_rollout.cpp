// The rollout engine with LoRA adapters applied unmerged (InferenceModel::set_lora): the engine's log-probs
// equal the training decoder's with the same adapters (the policy being trained), and samples stay bit-identical
// whatever the batch composition (the low-rank path runs through the same batch-invariant GEMV).
#include <gtest/gtest.h>

#include "model/decoder.h"
#include "model/lora.h"
#include "rollout/decoder_model.h"
#include "rollout/engine.h"
#include "test_util.h"

using namespace grpo;

namespace {

using grpo::test::kReferenceModels;

std::vector<rollout::SampleResult> sample(ModelWeights& w, const LoraAdapters* lora, ComputeMode mode,
                                          const std::vector<std::vector<int32_t>>& prompts, int64_t token_budget) {
  rollout::EngineConfig ec;
  ec.kv_memory_bytes = 16 << 20;
  ec.token_budget = token_budget;
  rollout::DecoderRolloutModel model(w, mode, ec.block_size);
  model.set_lora(lora);
  rollout::Engine engine(model, ec);
  std::vector<rollout::Request> reqs;
  for (size_t i = 0; i < prompts.size(); ++i) {
    rollout::Request r;
    r.prompt = prompts[i];
    r.n = 3;
    r.sampling.temperature = 1.0f;
    r.max_new_tokens = 16;
    r.seed = 5;
    r.id = i;
    reqs.push_back(std::move(r));
  }
  return engine.generate(reqs)[0].samples;
}

class LoraRollout : public ::testing::TestWithParam<std::string> {};

TEST_P(LoraRollout, LogprobsAreTheTrainedPolicysAndBatchInvariant) {
  auto w = ModelWeights::load(kReferenceModels + GetParam());
  for (const char* kind : {"lora_adapter", "lora_rs_adapter"}) {
    SCOPED_TRACE(kind);
    auto lora = LoraAdapters::load(w->config(), kReferenceModels + GetParam() + "/" + kind);
    const std::vector<int32_t> mine = {1, 5, 9, 2, 7, 3, 3, 8, 20, 11, 4};
    const auto alone = sample(*w, lora.get(), ComputeMode::F32, {mine}, 512);
    // The training decoder with the same adapters scores the samples as the engine did.
    Decoder dec(*w, DecoderOptions{});
    dec.set_lora(lora.get());
    Decoder base(*w, DecoderOptions{});
    double moved = 0;
    for (const rollout::SampleResult& s : alone) {
      std::vector<int32_t> full = mine;
      full.insert(full.end(), s.tokens.begin(), s.tokens.end());
      PackedBatch b = PackedBatch::from_sequences({full});
      std::vector<float> lp(b.T()), ent(b.T()), lp0(b.T());
      dec.forward(b, lp.data(), ent.data());
      base.forward(b, lp0.data(), ent.data());
      for (size_t t = 0; t < s.tokens.size(); ++t) {
        EXPECT_NEAR(s.logprobs[t], lp[mine.size() - 1 + t], 1e-4) << "token " << t;
        moved = std::max(moved, std::fabs(double(lp[mine.size() - 1 + t]) - lp0[mine.size() - 1 + t]));
      }
    }
    EXPECT_GT(moved, 1e-3) << "the adapter should change the policy";
    // Bitwise the same among other requests, in small steps, in f32 and bf16.
    std::vector<std::vector<int32_t>> crowd = {mine};
    for (int i = 0; i < 6; ++i) crowd.push_back({static_cast<int32_t>(30 + i), 2, 9, static_cast<int32_t>(i)});
    for (ComputeMode mode : {ComputeMode::F32, ComputeMode::BF16}) {
      const auto one = sample(*w, lora.get(), mode, {mine}, 512);
      for (int64_t budget : {int64_t{512}, int64_t{5}}) {
        const auto many = sample(*w, lora.get(), mode, crowd, budget);
        ASSERT_EQ(many.size(), one.size());
        for (size_t k = 0; k < one.size(); ++k) {
          EXPECT_EQ(many[k].tokens, one[k].tokens);
          EXPECT_EQ(many[k].logprobs, one[k].logprobs);
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, LoraRollout, ::testing::Values("qwen3", "qwen3-tied", "qwen2"));

}  // namespace
