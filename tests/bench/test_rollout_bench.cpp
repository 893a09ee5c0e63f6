// `grpo bench rollout`'s measures (rollout/rollout_bench.h): the bytes a single-sequence decode step reads
// (the bandwidth bound's numerator) and the prefill rate over the time spent on prefill.
#include <gtest/gtest.h>

#include "model/init.h"
#include "model/presets.h"
#include "bench/rollout_bench.h"

using namespace grpo;

TEST(RolloutBench, DecodeBytesCountAnUntiedEmbeddingTableOnlyOnceAsLmHead) {
  ModelConfig tied = preset_config("qwen3", "tiny");
  ModelConfig untied = tied;
  untied.tie_word_embeddings = false;
  const ModelWeights wt(tied), wu(untied);
  const int64_t C = tied.hidden_size;
  ASSERT_GT(wu.num_parameters(), wt.num_parameters());  // the untied model has a second V x C table
  // f32, tied: every parameter once (the table as lm_head) plus one embedding row
  EXPECT_EQ(rollout::decode_weight_bytes(wt, ComputeMode::F32), 4 * wt.num_parameters() + 4 * C);
  // untied: the input table is read one row per token, so the same bytes
  EXPECT_EQ(rollout::decode_weight_bytes(wu, ComputeMode::F32), rollout::decode_weight_bytes(wt, ComputeMode::F32));
  // bf16 matmul weights: a bit more than half (norms and the embedding row stay f32)
  const int64_t bf = rollout::decode_weight_bytes(wt, ComputeMode::BF16);
  EXPECT_GT(bf, 2 * wt.num_parameters());
  EXPECT_LT(bf, 2 * wt.num_parameters() + 4 * C * (2 * tied.num_hidden_layers + 3));
}

TEST(RolloutBench, PrefillRateIsOverPrefillTime) {
  ModelWeights w(preset_config("qwen3", "tiny"));
  init_parameters(w, 3);
  rollout::RolloutBenchOptions o;
  o.prompts = 2;
  o.n = 2;
  o.prompt_len = 24;
  o.max_new_tokens = 16;
  o.mode = ComputeMode::F32;
  const rollout::RolloutBenchResult r = rollout::run_rollout_bench(w, o, true);
  EXPECT_EQ(r.prefilled, 2 * 24);
  EXPECT_EQ(r.generated, 2 * 2 * 16);
  // the prefill time is a part of the run: the rate over it is above the rate over the whole run
  EXPECT_GT(r.prefill_tokens_per_s, r.prefilled / r.seconds);
  EXPECT_GT(r.gen_tokens_per_s, 0);
}
