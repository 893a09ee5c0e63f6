// LoRA on the Qwen3-VL vision tower, on the reference tiny Qwen3-VL model and its case (a batch with
// pictures). No PyTorch reference holds tower adapters, so the oracles are independent: the gradient of every
// tower adapter's A and B against central finite differences of the loss (both A and B random, so that
// neither gradient is trivially zero), with activation checkpointing on and off, and with a selection that
// starts above block 0 (the frozen blocks below get no backward); bf16 compute near f32; the frozen base gets
// no gradient; all-linear takes the tower's blocks and mergers, freeze_vision_tower none of them; the adapter
// saved in PEFT's layout loads back key for key and bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/files.h"
#include "core/rng.h"
#include "core/threads.h"
#include "error_of.h"
#include "model/lora.h"
#include "train/case_eval.h"
#include "test_util.h"

using namespace grpo;
using namespace grpo::train;
using grpo::test::contains;
using grpo::test::error_of;
using grpo::test::kReferenceVl;

namespace {

constexpr const char* kTowerKey = "base_model.model.model.visual.";

// Rank-4 adapters on `target` (JSON), A as PEFT initialises it and B uniform in +-0.3 (a trained-looking B).
std::unique_ptr<LoraAdapters> random_adapters(const ModelConfig& c, const nlohmann::json& target, bool frozen = false,
                                              uint64_t seed = 5) {
  LoraConfig cfg;
  cfg.rank = 4;
  cfg.alpha = 8;
  cfg.target = ModuleSelector::from_json(target, "test");
  auto a = std::make_unique<LoraAdapters>(c, cfg, "test", frozen);
  a->init_default(seed);
  Rng rng({seed, 99});
  for (const auto& [name, view] : a->params().entries())
    if (contains(name, "lora_B"))
      for (int64_t i = 0; i < view.numel(); ++i) view.f32()[i] = static_cast<float>(0.6 * rng.uniform() - 0.3);
  return a;
}

// The case's loss (mean cross-entropy of its targets), summed in double from the log-probs.
double case_loss(const CaseOutputs& out) {
  const std::vector<float>& lp = out.at("token_logprobs").data;
  double s = 0;
  for (float v : lp) s -= v;
  return s / static_cast<double>(lp.size());
}

// Each tower adapter tensor's gradient g against the loss's central difference along u = g / |g| (whose
// derivative is |g|), Richardson-extrapolated from steps h and h/2 so that the h^2 term cancels.
void check_tower_gradients(ModelWeights& w, LoraAdapters& a, bool ckpt, const std::string& what) {
  SCOPED_TRACE(what);
  const SafetensorsFile ref = SafetensorsFile::open(kReferenceVl + "vl_case.safetensors");
  CaseOptions opt;
  opt.lora = &a;
  opt.checkpoint_activations = ckpt;
  const CaseOutputs out = evaluate_case(w, ref, nullptr, opt);
  int checked = 0;
  for (const auto& [name, view] : a.params().entries()) {
    if (name.rfind(kTowerKey, 0) != 0) continue;
    const std::vector<float>& g = out.at("grad." + name).data;
    ASSERT_EQ(static_cast<int64_t>(g.size()), view.numel()) << name;
    double gg = 0;
    for (float x : g) gg += static_cast<double>(x) * x;
    const double norm = std::sqrt(gg);
    ASSERT_GT(norm, 1e-6) << name << ": no gradient";
    float* p = view.f32();
    const std::vector<float> keep(p, p + view.numel());
    auto loss_at = [&](double step) {
      for (int64_t i = 0; i < view.numel(); ++i) p[i] = static_cast<float>(keep[i] + step * g[i] / norm);
      CaseOptions fwd = opt;
      return case_loss(evaluate_case(w, ref, nullptr, fwd));
    };
    const double h = 2e-3 * std::sqrt(static_cast<double>(view.numel()));  // entries move by ~2e-3
    const double d1 = (loss_at(h) - loss_at(-h)) / (2 * h), d2 = (loss_at(h / 2) - loss_at(-h / 2)) / h;
    std::copy(keep.begin(), keep.end(), p);
    const double fd = (4 * d2 - d1) / 3;
    if (std::getenv("GRPO_PRINT_ERRORS")) std::printf("%s |g| %.4g fd %.4g\n", name.c_str(), norm, fd);
    EXPECT_NEAR(fd, norm, 5e-3 * norm + 1e-5) << name << " (h " << h << ": " << d1 << ", h/2: " << d2 << ")";
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

// The names of the tower's adapted modules (adapter keys without the lora_A / lora_B suffix).
int tower_tensors(const LoraAdapters& a) {
  int n = 0;
  for (const auto& [name, view] : a.params().entries()) n += name.rfind(kTowerKey, 0) == 0;
  return n;
}

}  // namespace

// One thread: the tiny model's GEMMs are too small to share, and the finite differences run many passes.
class LoraTower : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { set_num_threads(1); }
};

// all-linear on Qwen3-VL: every linear of the language model and of the tower (blocks, merger, DeepStack
// mergers), each with PEFT's key and shape.
TEST_F(LoraTower, AllLinearTakesTheTowerUnlessFrozen) {
  auto w = ModelWeights::load(kReferenceVl);
  const ModelConfig& c = w->config();
  const VisionConfig& v = c.vision;
  const int64_t mergers = 1 + static_cast<int64_t>(v.deepstack_visual_indexes.size());
  auto a = random_adapters(c, "all-linear");
  EXPECT_TRUE(a->has_tower());
  EXPECT_EQ(a->first_tower_block(), 0);
  EXPECT_EQ(static_cast<int64_t>(a->modules().size()), 7 * c.num_hidden_layers + 4 * v.depth + 2 * mergers);
  const int64_t D = v.hidden_size, F = v.intermediate_size, M = v.merged_dim(), O = v.out_hidden_size;
  auto shape = [&](const std::string& key) {
    const TensorView t = a->params().view(key);
    return std::vector<int64_t>(t.shape.dims.begin(), t.shape.dims.begin() + t.shape.ndim);
  };
  const std::string b1 = "base_model.model.model.visual.blocks.1.";
  EXPECT_EQ(shape(b1 + "attn.qkv.lora_A.weight"), (std::vector<int64_t>{4, D}));
  EXPECT_EQ(shape(b1 + "attn.qkv.lora_B.weight"), (std::vector<int64_t>{3 * D, 4}));
  EXPECT_EQ(shape(b1 + "attn.proj.lora_B.weight"), (std::vector<int64_t>{D, 4}));
  EXPECT_EQ(shape(b1 + "mlp.linear_fc1.lora_B.weight"), (std::vector<int64_t>{F, 4}));
  EXPECT_EQ(shape(b1 + "mlp.linear_fc2.lora_A.weight"), (std::vector<int64_t>{4, F}));
  EXPECT_EQ(shape("base_model.model.model.visual.merger.linear_fc1.lora_A.weight"), (std::vector<int64_t>{4, M}));
  EXPECT_EQ(shape("base_model.model.model.visual.merger.linear_fc2.lora_B.weight"), (std::vector<int64_t>{O, 4}));
  EXPECT_EQ(shape("base_model.model.model.visual.deepstack_merger_list.1.linear_fc2.lora_B.weight"),
            (std::vector<int64_t>{O, 4}));
  // A frozen tower: no tower module, and an adapter of the tower is refused with the reason.
  auto f = random_adapters(c, "all-linear", /*frozen=*/true);
  EXPECT_FALSE(f->has_tower());
  EXPECT_EQ(tower_tensors(*f), 0);
  EXPECT_EQ(f->tensors().tower.size(), static_cast<size_t>(v.depth));
  const std::string dir = grpo::test::fresh_temp_dir("lora_tower", "frozen");
  a->save(dir, "qwen3-vl");
  const std::string e = error_of([&] { LoraAdapters::load(c, dir, /*vision_frozen=*/true); });
  EXPECT_TRUE(contains(e, "model.visual.") && contains(e, "freeze_vision_tower")) << e;
  // A list entry naming only tower modules still matches (nothing to adapt is the error, not "no match").
  const std::string e2 = error_of([&] { random_adapters(c, nlohmann::json::array({"qkv"}), /*frozen=*/true); });
  EXPECT_TRUE(contains(e2, "selects no linear module")) << e2;
  // A name that exists nowhere lists the tower's names as adaptable.
  const std::string e3 = error_of([&] { random_adapters(c, nlohmann::json::array({"out_proj"})); });
  EXPECT_TRUE(contains(e3, "matches no linear module") && contains(e3, "model.visual.blocks.0.attn.qkv")) << e3;
  // The patch embedding (a Conv3d that PEFT would adapt when "proj" names it) is refused, unless excluded.
  const std::string e4 = error_of([&] { random_adapters(c, nlohmann::json::array({"proj"})); });
  EXPECT_TRUE(contains(e4, "model.visual.patch_embed.proj") && contains(e4, "exclude_modules")) << e4;
  LoraConfig pc;
  pc.rank = 2;
  pc.target = ModuleSelector::from_json(nlohmann::json::array({"proj"}), "test");
  pc.exclude = ModuleSelector::from_json(nlohmann::json::array({"patch_embed.proj"}), "test");
  EXPECT_EQ(LoraAdapters(c, pc, "test").modules().size(), static_cast<size_t>(v.depth));  // each block's attn.proj
}

TEST_F(LoraTower, GradientsMatchFiniteDifferences) {
  auto w = ModelWeights::load(kReferenceVl);
  auto a = random_adapters(w->config(), "all-linear");
  check_tower_gradients(*w, *a, /*ckpt=*/false, "all-linear");
  EXPECT_EQ(tower_tensors(*a), 2 * (4 * 3 + 2 * 3));
}

// Adapters from block 1 up and on DeepStack merger 0 (fed by block 0): the backward stops at block 1 but
// still reaches merger 0; with checkpointing the same gradients as without.
TEST_F(LoraTower, PartialSelectionAndCheckpointing) {
  auto w = ModelWeights::load(kReferenceVl);
  const nlohmann::json target = "model\\.visual\\.(blocks\\.[12]\\..*|deepstack_merger_list\\.0\\.linear_fc1)|.*\\.v_proj";
  auto a = random_adapters(w->config(), target);
  EXPECT_EQ(a->first_tower_block(), 1);
  EXPECT_EQ(tower_tensors(*a), 2 * (4 * 2 + 1));
  check_tower_gradients(*w, *a, /*ckpt=*/true, "blocks 1-2 + DeepStack merger 0, checkpointed");
  const SafetensorsFile ref = SafetensorsFile::open(kReferenceVl + "vl_case.safetensors");
  CaseOptions opt;
  opt.lora = a.get();
  const CaseOutputs plain = evaluate_case(*w, ref, nullptr, opt);
  opt.checkpoint_activations = true;
  const CaseOutputs ckpt = evaluate_case(*w, ref, nullptr, opt);
  int grads = 0;
  for (const auto& [name, t] : plain) {
    if (name.rfind("grad.", 0) != 0) continue;
    EXPECT_TRUE(contains(name, ".lora_A.weight") || contains(name, ".lora_B.weight")) << name;
    EXPECT_EQ(t.data, ckpt.at(name).data) << name;
    ++grads;
  }
  EXPECT_EQ(grads, static_cast<int>(a->params().entries().size()));
  // bf16 compute (bf16 GEMM inputs for the base, f32 adapters): near f32.
  opt.checkpoint_activations = false;
  opt.mode = ComputeMode::BF16;
  const CaseOutputs bf = evaluate_case(*w, ref, nullptr, opt);
  EXPECT_LE(grpo::test::rel_err(bf.at("token_logprobs").data, plain.at("token_logprobs").data), 2e-2);
  for (const auto& [name, t] : plain) {
    if (name.rfind("grad." + std::string(kTowerKey), 0) != 0) continue;
    EXPECT_LE(grpo::test::rel_err(bf.at(name).data, t.data), 6e-2) << name;
  }
}

// Saved in PEFT's layout (the tower's keys under base_model.model.model.visual.*, target_modules by base
// name when they select exactly the adapted modules, else by full name) and loaded back bit for bit.
TEST_F(LoraTower, SaveLoadRoundTripInPeftLayout) {
  auto w = ModelWeights::load(kReferenceVl);
  const ModelConfig& c = w->config();
  for (const nlohmann::json& target : {nlohmann::json("all-linear"),
                                       nlohmann::json::array({"model.visual.blocks.2.attn.qkv",
                                                              "model.visual.deepstack_merger_list.1.linear_fc2",
                                                              "model.language_model.layers.0.mlp.down_proj"})}) {
    SCOPED_TRACE(target.dump());
    auto a = random_adapters(c, target);
    const std::string dir = grpo::test::fresh_temp_dir("lora_tower", "roundtrip");
    a->save(dir, "qwen3-vl");
    const nlohmann::json j = nlohmann::json::parse(read_file(dir + "/adapter_config.json"));
    if (target.is_string())  // by base name "proj" would also take the patch embedding in PEFT: full names
      EXPECT_EQ(j["target_modules"], nlohmann::json(a->modules()));
    else
      EXPECT_EQ(j["target_modules"], nlohmann::json::array({"model.language_model.layers.0.mlp.down_proj",
                                                            "model.visual.blocks.2.attn.qkv",
                                                            "model.visual.deepstack_merger_list.1.linear_fc2"}));
    const SafetensorsFile f = SafetensorsFile::open(dir + "/adapter_model.safetensors");
    ASSERT_EQ(f.tensors().size(), a->params().entries().size());
    for (const auto& [name, view] : a->params().entries()) {
      const StTensor* t = f.find(name);
      ASSERT_TRUE(t) << name;
      EXPECT_EQ(t->shape, std::vector<int64_t>(view.shape.dims.begin(), view.shape.dims.begin() + view.shape.ndim));
    }
    auto b = LoraAdapters::load(c, dir);
    EXPECT_EQ(a->modules(), b->modules());
    ASSERT_EQ(a->params().numel(), b->params().numel());
    EXPECT_EQ(0, std::memcmp(a->params().flat().f32(), b->params().flat().f32(), a->params().numel() * sizeof(float)));
  }
}
