// Multi-turn rollouts over the real decoder (the reference qwen3 model): with a deterministic tool that
// answers every turn, the log-probs the engine reports for the sampled tokens of every turn equal those of
// the training decoder's one pass over the whole conversation (prompt, turns and inserted replies), so the
// importance ratio at the start of an update is 1 (f32 within 1e-4; bf16 within the bf16 bound).
#include <gtest/gtest.h>

#include <cmath>
#include <future>

#include "model/decoder.h"
#include "rollout/decoder_model.h"
#include "rollout/engine.h"
#include "rollout/turns.h"
#include "test_util.h"

using namespace grpo;

namespace multi_turn_rollout_test {

// Every turn gets a reply of four tokens that depend on the turn (a deterministic "tool").
class EchoTool : public rollout::TurnHandler {
 public:
  std::future<rollout::TurnReply> on_turn_end(const rollout::TurnEnd& t) override {
    std::promise<rollout::TurnReply> p;
    rollout::TurnReply r;
    r.tokens = {7, static_cast<int32_t>(100 + t.turn_tokens.size()), t.turn_tokens.front(), 9};
    r.tool_calls = 1;
    p.set_value(std::move(r));
    return p.get_future();
  }
};

void expect_turn_logprobs_match_one_pass(ComputeMode mode, double tolerance) {
  auto w = ModelWeights::load(test::kReferenceModels + "qwen3");
  rollout::EngineConfig ec;
  ec.kv_memory_bytes = 16 << 20;
  rollout::DecoderRolloutModel model(*w, mode, ec.block_size);
  const int64_t V = w->config().vocab_size;
  rollout::Engine engine(model, ec, [](std::span<const int32_t> ids) { return std::string(ids.size(), 'x'); });
  std::vector<rollout::Request> reqs;
  for (int i = 0; i < 3; ++i) {
    rollout::Request r;
    r.prompt = {1, 5, 9, 2, 7, static_cast<int32_t>(3 + i), 3, 8};
    r.n = 3;
    r.sampling.temperature = 1.0f;
    r.max_new_tokens = 48;
    for (int32_t s = 0; s < V; s += 9) r.stop_token_ids.push_back(s);  // a turn ends every ~9 tokens
    r.seed = 3;
    r.id = static_cast<uint64_t>(i);
    reqs.push_back(r);
  }
  EchoTool tool;
  const auto out = engine.generate(reqs, {}, rollout::MultiTurn{&tool, /*max_assistant_turns=*/4});
  DecoderOptions dopt;
  dopt.mode = mode;  // the trainer's pass in the rollout's precision
  Decoder dec(*w, dopt);
  int64_t replies = 0;
  for (size_t i = 0; i < reqs.size(); ++i)
    for (const rollout::SampleResult& s : out[i].samples) {
      replies += s.turns.user_turns;
      std::vector<int32_t> full = reqs[i].prompt;
      full.insert(full.end(), s.tokens.begin(), s.tokens.end());
      PackedBatch b = PackedBatch::from_sequences({full});
      std::vector<float> lp(b.T()), ent(b.T());
      dec.forward(b, lp.data(), ent.data());
      const size_t P = reqs[i].prompt.size();
      for (size_t t = 0; t < s.tokens.size(); ++t) {
        if (!s.response_mask[t]) continue;
        EXPECT_NEAR(s.logprobs[t], lp[P - 1 + t], tolerance) << "request " << i << " token " << t;
      }
    }
  EXPECT_GT(replies, 3) << "the samples must have several turns";
}

}  // namespace multi_turn_rollout_test

TEST(MultiTurnRollout, TurnLogProbsMatchOnePassOverTheConversation) {
  multi_turn_rollout_test::expect_turn_logprobs_match_one_pass(ComputeMode::F32, 1e-4);
}

// bf16 (GEMM inputs rounded to 8 mantissa bits in both passes, summed in other orders): within the bf16
// bound of the reference cases (tests/train_ref/test_reference_cases.cpp: 2% of values).
TEST(MultiTurnRollout, TurnLogProbsMatchOnePassOverTheConversationInBf16) {
  multi_turn_rollout_test::expect_turn_logprobs_match_one_pass(ComputeMode::BF16, 2e-2);
}
