// verl's response_mask in the actor (multi-turn responses: tool-turn tokens are 0): masked tokens carry no
// loss and are not counted by the token aggregation, whatever their advantages or old log-probs, while they
// still are the context of the tokens after them; SFT's cross-entropy skips them too. On the reference qwen3.
#include <gtest/gtest.h>

#include <vector>

#include "train/actor.h"
#include "test_util.h"

using namespace grpo;
using namespace grpo::train;

namespace response_mask_test {

// Two responses of 10 tokens, the middle 4 of the first one inserted (a tool turn).
std::vector<TrainSample> turns(float advantage_of_inserted) {
  TrainSample a;
  a.tokens = {1, 5, 9, 2, 7, 3, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49};
  a.prompt_len = 6;
  a.response_mask = {1, 1, 1, 0, 0, 0, 0, 1, 1, 1};
  a.token_advantages = {1, -1, 1, advantage_of_inserted, advantage_of_inserted, advantage_of_inserted,
                        advantage_of_inserted, 1, 1, -1};
  TrainSample b;
  b.tokens = {1, 5, 9, 2, 7, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69};
  b.prompt_len = 5;
  b.advantage = -0.5f;
  return {a, b};
}

UpdateStats policy_step(const std::vector<TrainSample>& samples) {
  auto w = ModelWeights::load(test::kReferenceModels + "qwen3");
  AdamWConfig adam;
  adam.weight_decay = 0;
  Actor actor(*w, DecoderOptions{}, MicroBatching{}, adam);
  return actor.update_policy(samples, PolicyObjectiveConfig{}, LossAggMode::TokenMean, 1.0f, RolloutCorrection{},
                             1e-3f);
}

}  // namespace response_mask_test

using namespace response_mask_test;

TEST(ResponseMask, MaskedTokensCarryNoLossAndAreNotCounted) {
  const UpdateStats a = policy_step(turns(0.0f)), b = policy_step(turns(100.0f));
  EXPECT_DOUBLE_EQ(a.pg_loss, b.pg_loss);
  EXPECT_DOUBLE_EQ(a.grad_norm, b.grad_norm);
  // unmasked, the same tokens change the update (the test can fail)
  std::vector<TrainSample> open = turns(100.0f);
  open[0].response_mask.clear();
  const UpdateStats c = policy_step(open);
  EXPECT_GT(std::abs(c.grad_norm - b.grad_norm), 1e-3 * b.grad_norm);
  EXPECT_EQ(turns(0.0f)[0].model_tokens(), 6);
  EXPECT_EQ(turns(0.0f)[1].model_tokens(), 10);
}

TEST(ResponseMask, SftSkipsMaskedTokens) {
  auto sft_step = [](const std::vector<TrainSample>& s) {
    auto w = ModelWeights::load(test::kReferenceModels + "qwen3");
    Actor actor(*w, DecoderOptions{}, MicroBatching{}, AdamWConfig{});
    return actor.update_sft(s, 1e-3f);
  };
  std::vector<TrainSample> masked = turns(0.0f);
  const UpdateStats a = sft_step(masked);
  masked[0].tokens[6 + 4] = 90;  // an inserted token's identity is context for later tokens only
  masked[0].tokens[6 + 5] = 91;
  const UpdateStats b = sft_step(masked);
  EXPECT_NE(a.loss, b.loss);  // the tokens after them see other context
  std::vector<TrainSample> all = turns(0.0f);
  all[0].response_mask.clear();
  const UpdateStats c = sft_step(all);
  EXPECT_GT(std::abs(c.loss - a.loss), 1e-6);
}
