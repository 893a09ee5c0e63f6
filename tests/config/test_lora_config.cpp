// The LoRA keys of the run configuration: verl's defaults, target_modules given as one name or a list,
// the YAML written back loading to the same values, the refusal of an adapter path with LoRA off, and the
// adapters built from the keys (PEFT's selection, init with B zero).
#include <gtest/gtest.h>

#include "error_of.h"
#include "config/config.h"
#include "config/part_options.h"
#include "model/weights.h"
#include "temp_dir.h"
#include "test_util.h"

using namespace grpo;

namespace {

const char* kLoraMinimal =
    "data:\n"
    "  train_files: train.jsonl\n"
    "actor_rollout_ref:\n"
    "  model:\n"
    "    path: models/tiny\n";

TEST(LoraConfig, KeysDefaultsAndRoundTrip) {
  test::TempDir dir;
  const std::string path = dir.write("c.yaml", kLoraMinimal);
  Config c = load_config(path);
  const ModelSection& m = c.actor_rollout_ref.model;
  EXPECT_EQ(m.lora_rank, 0);
  EXPECT_EQ(m.lora_alpha, 16);
  EXPECT_EQ(m.target_modules, std::vector<std::string>{"all-linear"});
  EXPECT_TRUE(m.exclude_modules.empty());
  EXPECT_FALSE(m.use_rslora);
  c = load_config(path, {"actor_rollout_ref.model.lora_rank=8", "actor_rollout_ref.model.target_modules=q_proj",
                         "actor_rollout_ref.model.exclude_modules=[layers.0.self_attn.q_proj]",
                         "actor_rollout_ref.model.use_rslora=true", "actor_rollout_ref.model.lora_alpha=32"});
  EXPECT_EQ(c.actor_rollout_ref.model.target_modules, std::vector<std::string>{"q_proj"});  // one name: a list of one
  const Config back = load_config(dir.write("back.yaml", config_to_yaml(c)));
  EXPECT_EQ(back.actor_rollout_ref.model.lora_rank, 8);
  EXPECT_EQ(back.actor_rollout_ref.model.lora_alpha, 32);
  EXPECT_TRUE(back.actor_rollout_ref.model.use_rslora);
  EXPECT_EQ(back.actor_rollout_ref.model.target_modules, std::vector<std::string>{"q_proj"});
  EXPECT_EQ(back.actor_rollout_ref.model.exclude_modules, std::vector<std::string>{"layers.0.self_attn.q_proj"});
  EXPECT_TRUE(test::contains(config_help(), "actor_rollout_ref.model.lora_rank"));
}

TEST(LoraConfig, AdapterPathWithRankZeroIsRefused) {
  test::TempDir dir;
  const std::string e = test::error_of([&] {
    load_config(dir.write("c.yaml", kLoraMinimal), {"actor_rollout_ref.model.lora_adapter_path=adapters/a"});
  });
  EXPECT_TRUE(test::contains(e, "lora_adapter_path") && test::contains(e, "lora_rank = 0")) << e;
}

TEST(LoraConfig, AdaptersFromTheKeys) {
  test::TempDir dir;
  auto w = ModelWeights::load(test::kReferenceModels + "qwen3");
  Config c = load_config(dir.write("c.yaml", kLoraMinimal));
  EXPECT_EQ(make_lora_adapters(c, w->config()), nullptr);  // lora_rank 0: full fine-tuning
  c = load_config(dir.write("c.yaml", kLoraMinimal), {"actor_rollout_ref.model.lora_rank=4",
                                                      "actor_rollout_ref.model.target_modules=[q_proj,v_proj]",
                                                      "actor_rollout_ref.model.exclude_modules=[layers.1.self_attn.v_proj]"});
  auto lora = make_lora_adapters(c, w->config());
  ASSERT_NE(lora, nullptr);
  const int64_t L = w->config().num_hidden_layers;
  EXPECT_EQ(lora->modules().size(), static_cast<size_t>(2 * L - 1));
  EXPECT_FLOAT_EQ(lora->scale(), 16.0f / 4.0f);
  const LoraPair& q = lora->tensors().layers[0].slot[static_cast<int>(LoraSlot::Q)];
  ASSERT_TRUE(q.A && q.B);
  EXPECT_NE(q.A[0], 0.0f);
  EXPECT_EQ(q.B[0], 0.0f);
  EXPECT_EQ(lora->tensors().layers[1].slot[static_cast<int>(LoraSlot::V)].A, nullptr);
  c = load_config(dir.write("c.yaml", kLoraMinimal),
                  {"actor_rollout_ref.model.lora_rank=4", "actor_rollout_ref.model.target_modules=[nope_proj]"});
  const std::string e = test::error_of([&] { make_lora_adapters(c, w->config()); });
  EXPECT_TRUE(test::contains(e, "\"nope_proj\" matches no linear module") &&
              test::contains(e, "actor_rollout_ref.model"))
      << e;
}

}  // namespace
