// The actor on Qwen3-VL samples with pictures: an SFT update through the packed micro-batches changes the
// vision tower (its gradient equals the one the whole batch gives: micro-batching is exact), and with
// actor_rollout_ref.actor.freeze_vision_tower the tower has neither gradients nor optimizer moments, keeps its
// weights bit for bit, while the language model still learns.
#include <gtest/gtest.h>

#include "model/picture.h"
#include "train/actor.h"
#include "train/case_eval.h"
#include "test_util.h"

using namespace grpo;
using namespace grpo::train;

namespace {

using grpo::test::kReferenceVl;

std::vector<TrainSample> samples_with_pictures() {
  SafetensorsFile f = SafetensorsFile::open(kReferenceVl + "vl_case.safetensors");
  const std::vector<float> px = case_floats(f, "pixel_values");
  auto rows = [&](int64_t r0, int64_t r1) {
    return std::vector<float>(px.begin() + r0 * 1536, px.begin() + r1 * 1536);
  };
  const PicturePtr a = make_picture({1, 4, 6}, rows(0, 24), 1536), b = make_picture({1, 2, 2}, rows(24, 28), 1536);
  TrainSample s1;
  s1.tokens = {301, 10, 12, 309, 312, 312, 312, 312, 312, 312, 310, 7, 8, 302, 12, 301, 11, 12, 50, 51, 52, 302};
  s1.prompt_len = 18;
  s1.pictures = {a};
  TrainSample s2;
  s2.tokens = {301, 10, 12, 309, 312, 310, 9, 302, 12, 301, 11, 12, 60, 61, 302};
  s2.prompt_len = 12;
  s2.pictures = {b};
  TrainSample s3;  // text only
  s3.tokens = {301, 10, 12, 5, 6, 302, 12, 301, 11, 12, 70, 302};
  s3.prompt_len = 10;
  return {s1, s2, s3};
}

std::vector<float> tensor(const ModelWeights& w, const std::string& name) {
  const TensorView v = w.params().view(name);
  return std::vector<float>(v.f32(), v.f32() + v.numel());
}

}  // namespace

TEST(VlActor, SftUpdateReachesTheTowerAndMicroBatchingIsExact) {
  const std::vector<TrainSample> samples = samples_with_pictures();
  AdamWConfig adam;
  adam.weight_decay = 0;
  std::vector<double> norms;
  for (int64_t budget : {1000, 25}) {  // one micro-batch, or one per sample
    auto w = ModelWeights::load(kReferenceVl);
    const auto before = tensor(*w, "model.visual.blocks.1.mlp.linear_fc1.weight");
    MicroBatching mb;
    mb.max_tokens = budget;
    Actor actor(*w, DecoderOptions{}, mb, adam);
    const UpdateStats st = actor.update_sft(samples, 1e-3f);
    ASSERT_FALSE(st.skipped);
    EXPECT_EQ(st.micro_batches, budget == 1000 ? 1 : 3);
    EXPECT_NE(tensor(*w, "model.visual.blocks.1.mlp.linear_fc1.weight"), before);
    norms.push_back(st.grad_norm);
  }
  EXPECT_NEAR(norms[0], norms[1], 1e-5 * norms[0]);
}

TEST(VlActor, FrozenTowerHasNoGradientsNoMomentsAndKeepsItsWeights) {
  auto w = ModelWeights::load(kReferenceVl);
  const auto tower = tensor(*w, "model.visual.merger.linear_fc1.weight");
  const auto patch = tensor(*w, "model.visual.patch_embed.proj.weight");
  const auto lm = tensor(*w, "model.language_model.layers.0.mlp.up_proj.weight");
  Actor actor(*w, DecoderOptions{}, MicroBatching{}, AdamWConfig{}, /*comm=*/nullptr, DataParallel{},
              /*freeze_vision_tower=*/true);
  // The moments cover the text part, a prefix of the layout; the tower's tensors lie after it.
  Arena text_only(DType::F32);
  declare_parameters(w->config(), text_only, /*with_vision=*/false);
  EXPECT_EQ(actor.optimizer().begin(), 0);
  EXPECT_EQ(actor.optimizer().end(), text_only.numel());
  EXPECT_EQ(actor.trained_numel(), text_only.numel());
  EXPECT_GE(w->params().offset("model.visual.merger.linear_fc1.weight"), text_only.numel());
  EXPECT_EQ(w->params().offset("model.language_model.layers.0.mlp.up_proj.weight"),
            text_only.offset("model.language_model.layers.0.mlp.up_proj.weight"));
  for (int step = 0; step < 2; ++step) {
    const UpdateStats st = actor.update_sft(samples_with_pictures(), 1e-3f);
    ASSERT_FALSE(st.skipped);
  }
  EXPECT_EQ(tensor(*w, "model.visual.merger.linear_fc1.weight"), tower);
  EXPECT_EQ(tensor(*w, "model.visual.patch_embed.proj.weight"), patch);
  EXPECT_NE(tensor(*w, "model.language_model.layers.0.mlp.up_proj.weight"), lm);
}
