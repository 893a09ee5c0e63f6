// Prompt scoring (Request::prompt_logprobs) on the reference models against PyTorch: each prompt token's
// log-prob given the tokens before it equals lm_case's token_logprobs, and its alternatives are the largest
// entries of PyTorch's logits row, however the prompt's prefill is chunked and whatever runs beside it (the
// same prompt unscored, whose prefix the scored one must not take from the cache). The samples drawn after a
// scored prompt are those of the unscored request.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "model/safetensors.h"
#include "rollout/decoder_model.h"
#include "rollout/engine.h"
#include "test_util.h"

using namespace grpo;

namespace {

using grpo::test::kReferenceModels;

std::vector<int32_t> ints_of(const SafetensorsFile& f, const std::string& name) {
  const StTensor* t = f.find(name);
  EXPECT_TRUE(t && t->dtype == StDType::I64) << name;
  std::vector<int64_t> v(st_numel(t->shape));
  std::memcpy(v.data(), t->data, v.size() * 8);
  return {v.begin(), v.end()};
}

std::vector<float> floats_of(const SafetensorsFile& f, const std::string& name) {
  const StTensor* t = f.find(name);
  std::vector<float> v(st_numel(t->shape));
  tensor_to_f32(*t, v.data(), static_cast<int64_t>(v.size()), f.path());
  return v;
}

class PromptLogprobs : public ::testing::TestWithParam<std::string> {};

TEST_P(PromptLogprobs, EqualPyTorchsTokenLogprobsAndTopLogits) {
  const std::string dir = kReferenceModels + GetParam();
  auto w = ModelWeights::load(dir);
  const SafetensorsFile ref = SafetensorsFile::open(dir + "/lm_case.safetensors");
  const std::vector<int32_t> ids = ints_of(ref, "input_ids"), lens = ints_of(ref, "seq_lens");
  const std::vector<float> want = floats_of(ref, "token_logprobs"), logits = floats_of(ref, "logits");
  const int64_t V = w->config().vocab_size;
  constexpr int32_t kTop = 4;
  for (const int64_t budget : {int64_t{5}, int64_t{512}}) {  // prefill in chunks of 5 tokens, and in one
    rollout::EngineConfig ec;
    ec.kv_memory_bytes = 8 << 20;
    ec.token_budget = budget;
    ec.block_size = 4;  // blocks the unscored prompt leaves in the prefix cache
    rollout::DecoderRolloutModel model(*w, ComputeMode::F32, ec.block_size);
    rollout::Engine engine(model, ec);
    std::vector<rollout::Request> reqs;
    size_t start = 0;
    for (const int32_t len : lens) {
      rollout::Request r;
      r.prompt.assign(ids.begin() + start, ids.begin() + start + len);
      r.max_new_tokens = 3;
      r.n = 2;
      r.seed = 11;
      r.id = reqs.size();
      reqs.push_back(r);  // unscored, first: its prompt's blocks enter the prefix cache
      r.prompt_logprobs = true;
      r.top_logprobs = kTop;
      reqs.push_back(r);
      start += len;
    }
    const std::vector<rollout::RequestResult> out = engine.generate(reqs);
    size_t row = 0, target = 0;  // row of `logits`, index of `want`
    for (size_t q = 0; q < lens.size(); ++q) {
      const rollout::RequestResult& plain = out[2 * q];
      const rollout::RequestResult& scored = out[2 * q + 1];
      EXPECT_TRUE(plain.prompt_logprobs.empty());
      const int64_t len = lens[q];
      ASSERT_EQ(scored.prompt_logprobs.size(), static_cast<size_t>(len - 1));
      ASSERT_EQ(scored.prompt_top_logprobs.size(), static_cast<size_t>((len - 1) * kTop));
      for (int64_t i = 0; i + 1 < len; ++i) {
        EXPECT_NEAR(scored.prompt_logprobs[i], want[target + i], 2e-4) << "sequence " << q << " token " << i + 1;
        const float* z = logits.data() + (row + i) * V;
        std::vector<int32_t> order(V);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return z[a] > z[b]; });
        for (int32_t k = 0; k < kTop; ++k) {
          const rollout::TokenLogprob& a = scored.prompt_top_logprobs[i * kTop + k];
          if (k == 0) EXPECT_EQ(a.token, order[0]) << "sequence " << q << " row " << i;
          // (near-ties may swap places between PyTorch's logits and ours: compare the log-probs)
          const double max = z[order[0]];
          double sum = 0;
          for (int64_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(z[v]) - max);
          EXPECT_NEAR(a.logprob, z[order[k]] - max - std::log(sum), 2e-4);
        }
      }
      for (size_t k = 0; k < plain.samples.size(); ++k)  // the same samples, scored or not (same seed and id)
        EXPECT_EQ(plain.samples[k].tokens, scored.samples[k].tokens);
      row += len;
      target += len - 1;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, PromptLogprobs, ::testing::Values("qwen3", "qwen2"));

}  // namespace
