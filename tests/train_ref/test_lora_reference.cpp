// LoRA against PyTorch + PEFT: every reference model folder that holds lora_case / lora_rs_case (a PEFT
// adapter folder each), logits, log-probs, entropy, loss and the gradients of every lora_A / lora_B, in f32
// (the README's tolerances) and bf16, with activation checkpointing on and off; the frozen base gets no
// gradient. Also: the adapter written back in PEFT's layout reloads bit for bit, merging it into the weights
// gives the adapted model's logits, and bad adapters get errors that name the module and the file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <functional>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/files.h"
#include "error_of.h"
#include "model/lora.h"
#include "train/case_eval.h"
#include "test_util.h"

using namespace grpo;
using namespace grpo::train;
using grpo::test::contains;
using grpo::test::error_of;
using grpo::test::kReferenceModels;
using grpo::test::rel_err;

namespace {

// f32: the README's bounds. bf16: the base GEMMs take bf16 inputs (2^-9 relative rounding per input) while
// the adapters' path stays f32, so the errors are those of the full-model bf16 tests (values ~1%, gradients
// a few % of a tensor's max). Measured on the three text models: values <= 0.9%, gradients <= 2.4%; bounds
// 2% and 6% as in test_reference_cases.cpp. GRPO_PRINT_ERRORS=1 prints every error.
constexpr double kF32Values = 1e-4, kF32Grads = 1e-3, kBF16Values = 2e-2, kBF16Grads = 6e-2;

// The model folders with LoRA cases (all of ../shared/reference/models that have them).
std::vector<std::string> lora_models() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(kReferenceModels))
    if (std::filesystem::exists(e.path() / "lora_case.safetensors")) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

void compare(const CaseOutputs& out, const SafetensorsFile& ref, bool f32, const std::string& what) {
  int grads = 0, ref_grads = 0;
  for (const StTensor& t : ref.tensors()) {
    const std::string& n = t.name;
    const bool is_grad = n.rfind("grad.", 0) == 0;
    const bool is_value = n == "logits" || n == "token_logprobs" || n == "entropy" || n == "loss";
    if (!is_grad && !is_value) continue;
    ref_grads += is_grad;
    auto it = out.find(n);
    ASSERT_NE(it, out.end()) << what << ": engine did not produce " << n;
    const std::vector<float> r = case_floats(ref, n);
    ASSERT_EQ(it->second.data.size(), r.size()) << what << ": " << n;
    const double e = rel_err(it->second.data, r);
    const double bound = is_grad ? (f32 ? kF32Grads : kBF16Grads) : (f32 ? kF32Values : kBF16Values);
    if (std::getenv("GRPO_PRINT_ERRORS")) std::printf("%s %s %.3g\n", what.c_str(), n.c_str(), e);
    EXPECT_LE(e, bound) << what << ": " << n << " relative error " << e;
    grads += is_grad;
  }
  EXPECT_GE(ref_grads, 4) << what << ": the case has too few adapter gradients";
  EXPECT_EQ(grads, ref_grads);
  // The base is frozen: every gradient written is an adapter's.
  for (const auto& [name, t] : out) {
    if (name.rfind("grad.", 0) != 0) continue;
    EXPECT_TRUE(contains(name, ".lora_A.weight") || contains(name, ".lora_B.weight")) << what << ": " << name;
  }
}

CaseOutputs run_case(const std::string& model, const std::string& kind, ComputeMode mode, bool ckpt) {
  auto w = ModelWeights::load(kReferenceModels + model);
  auto lora = LoraAdapters::load(w->config(), kReferenceModels + model + "/" + kind + "_adapter");
  SafetensorsFile ref = SafetensorsFile::open(kReferenceModels + model + "/" + kind + "_case.safetensors");
  CaseOptions opt;
  opt.mode = mode;
  opt.checkpoint_activations = ckpt;
  opt.lm_head_chunk = 7;
  opt.lora = lora.get();
  return evaluate_case(*w, ref, nullptr, opt);
}

TEST(LoraReference, EveryModelEveryMode) {
  const std::vector<std::string> models = lora_models();
  ASSERT_GE(models.size(), 3u);
  for (const std::string& m : models)
    for (const char* kind : {"lora", "lora_rs"})
      for (ComputeMode mode : {ComputeMode::F32, ComputeMode::BF16})
        for (bool ckpt : {false, true}) {
          const std::string what = m + " " + kind + (mode == ComputeMode::F32 ? " f32" : " bf16") + (ckpt ? " ckpt" : "");
          SafetensorsFile ref = SafetensorsFile::open(kReferenceModels + m + "/" + kind + "_case.safetensors");
          compare(run_case(m, kind, mode, ckpt), ref, mode == ComputeMode::F32, what);
        }
}

TEST(LoraReference, ScaleAndModules) {
  auto w = ModelWeights::load(kReferenceModels + "qwen3");
  auto plain = LoraAdapters::load(w->config(), kReferenceModels + "qwen3/lora_adapter");
  EXPECT_FLOAT_EQ(plain->scale(), 8.0f / 4.0f);
  EXPECT_EQ(plain->modules().size(), 7u * w->config().num_hidden_layers);
  auto rs = LoraAdapters::load(w->config(), kReferenceModels + "qwen3/lora_rs_adapter");
  EXPECT_FLOAT_EQ(rs->scale(), 16.0f / std::sqrt(8.0f));
  EXPECT_EQ(rs->modules().size(), 2u * w->config().num_hidden_layers);
  EXPECT_EQ(rs->modules()[0], "model.layers.0.self_attn.q_proj");
}

TEST(LoraReference, AllLinearAndExclude) {
  auto w = ModelWeights::load(kReferenceModels + "qwen3");
  LoraConfig cfg;
  cfg.rank = 2;
  cfg.target = ModuleSelector::from_json("all-linear", "test");
  cfg.exclude = ModuleSelector::from_json(nlohmann::json::array({"down_proj"}), "test");
  LoraAdapters a(w->config(), cfg, "test");
  EXPECT_EQ(a.modules().size(), 6u * w->config().num_hidden_layers);  // all-linear leaves lm_head out
  cfg.target = ModuleSelector::from_json(".*layers\\.1\\.self_attn\\.(q|v)_proj", "test");  // a regex: full match
  cfg.exclude = {};
  LoraAdapters b(w->config(), cfg, "test");
  ASSERT_EQ(b.modules().size(), 2u);
  EXPECT_EQ(b.modules()[1], "model.layers.1.self_attn.v_proj");
}

// Saved in PEFT's layout and loaded back: the same tensors bit for bit, the same selection.
TEST(LoraReference, SaveLoadRoundTrip) {
  auto w = ModelWeights::load(kReferenceModels + "qwen2");
  auto a = LoraAdapters::load(w->config(), kReferenceModels + "qwen2/lora_rs_adapter");
  const std::string dir = grpo::test::fresh_temp_dir("lora", "roundtrip");
  a->save(dir, "qwen2");
  nlohmann::json j = nlohmann::json::parse(read_file(dir + "/adapter_config.json"));
  EXPECT_EQ(j["peft_type"], "LORA");
  EXPECT_EQ(j["r"], 8);
  EXPECT_EQ(j["use_rslora"], true);
  EXPECT_EQ(j["target_modules"], nlohmann::json::array({"q_proj", "v_proj"}));
  auto b = LoraAdapters::load(w->config(), dir);
  ASSERT_EQ(a->params().numel(), b->params().numel());
  EXPECT_EQ(0, std::memcmp(a->params().flat().f32(), b->params().flat().f32(), a->params().numel() * sizeof(float)));
  EXPECT_EQ(a->modules(), b->modules());
  const SafetensorsFile f = SafetensorsFile::open(dir + "/adapter_model.safetensors");
  const SafetensorsFile ref = SafetensorsFile::open(kReferenceModels + "qwen2/lora_rs_adapter/adapter_model.safetensors");
  ASSERT_EQ(f.tensors().size(), ref.tensors().size());
  for (const StTensor& t : ref.tensors()) {
    const StTensor* o = f.find(t.name);
    ASSERT_TRUE(o) << t.name;
    EXPECT_EQ(o->shape, t.shape) << t.name;
  }
}

// W + s B A in the weights gives the adapted model's logits (f32).
TEST(LoraReference, MergeMatchesAdapter) {
  auto w = ModelWeights::load(kReferenceModels + "qwen3-tied");
  auto a = LoraAdapters::load(w->config(), kReferenceModels + "qwen3-tied/lora_adapter");
  SafetensorsFile ref = SafetensorsFile::open(kReferenceModels + "qwen3-tied/lora_case.safetensors");
  a->merge_into(*w);
  const CaseOutputs merged = evaluate_case(*w, ref, nullptr, CaseOptions{});
  EXPECT_LE(rel_err(merged.at("logits").data, case_floats(ref, "logits")), kF32Values);
  EXPECT_LE(rel_err(merged.at("token_logprobs").data, case_floats(ref, "token_logprobs")), kF32Values);
}

// PEFT's default initialisation: B zero (step 0 is the base model), A uniform in +-1/sqrt(in).
TEST(LoraReference, DefaultInitIsTheBaseModel) {
  auto w = ModelWeights::load(kReferenceModels + "qwen3");
  LoraConfig cfg;
  cfg.rank = 4;
  cfg.alpha = 8;
  cfg.target = ModuleSelector::from_json("all-linear", "test");
  LoraAdapters a(w->config(), cfg, "test");
  a.init_default(7);
  const LoraPair& q = a.tensors().layers[0].slot[0];
  const int64_t C = w->config().hidden_size;
  float amax = 0;
  for (int64_t i = 0; i < 4 * C; ++i) amax = std::max(amax, std::fabs(q.A[i]));
  EXPECT_GT(amax, 0.5f / std::sqrt(static_cast<float>(C)));
  EXPECT_LE(amax, 1.0f / std::sqrt(static_cast<float>(C)));
  SafetensorsFile ref = SafetensorsFile::open(kReferenceModels + "qwen3/lm_case.safetensors");
  CaseOptions opt;
  const CaseOutputs base = evaluate_case(*w, ref, nullptr, opt);
  opt.lora = &a;
  const CaseOutputs adapted = evaluate_case(*w, ref, nullptr, opt);
  EXPECT_EQ(base.at("logits").data, adapted.at("logits").data);
  // With B = 0, A gets no gradient and B does.
  double ga = 0, gb = 0;
  for (const auto& [name, t] : adapted) {
    if (contains(name, "lora_A")) for (float v : t.data) ga += std::fabs(v);
    if (contains(name, "lora_B")) for (float v : t.data) gb += std::fabs(v);
  }
  EXPECT_EQ(ga, 0.0);
  EXPECT_GT(gb, 0.0);
}

// A base frozen in bf16 (no f32 copy of its GEMM weights) gives the bf16 results of the full weights bit for
// bit, and refuses f32 compute and anything that would read the missing f32 copies.
TEST(LoraReference, FrozenBf16BaseMatchesAndRefusesF32) {
  const std::string dir = kReferenceModels + "qwen3";
  auto full = ModelWeights::load(dir);
  auto frozen = ModelWeights::load_frozen_bf16(dir);
  auto lora = LoraAdapters::load(full->config(), dir + "/lora_adapter");
  SafetensorsFile ref = SafetensorsFile::open(dir + "/lora_case.safetensors");
  CaseOptions opt;
  opt.mode = ComputeMode::BF16;
  opt.lora = lora.get();
  const CaseOutputs a = evaluate_case(*full, ref, nullptr, opt), b = evaluate_case(*frozen, ref, nullptr, opt);
  for (const auto& [name, t] : a) EXPECT_EQ(t.data, b.at(name).data) << name;
  EXPECT_TRUE(contains(error_of([&] { Decoder d(*frozen, DecoderOptions{}); }), "frozen in bf16"));
  EXPECT_TRUE(contains(error_of([&] { frozen->refresh_bf16(); }), "frozen bf16 base"));
  EXPECT_TRUE(contains(error_of([&] { lora->merge_into(*frozen); }), "frozen in bf16"));
}

// Qwen3-VL: a base frozen in bf16 holds the tower's GEMM weights in bf16 only too (their f32 pages are never
// written), and with adapters on the tower and the language model it gives the bf16 results of the full
// weights bit for bit.
TEST(LoraReference, FrozenBf16VisionBaseMatches) {
  auto full = ModelWeights::load(grpo::test::kReferenceVl);
  auto frozen = ModelWeights::load_frozen_bf16(grpo::test::kReferenceVl);
  for (const char* name : {"model.visual.blocks.0.attn.qkv.weight", "model.visual.merger.linear_fc2.weight",
                           "model.visual.patch_embed.proj.weight"}) {
    const TensorView v = frozen->params().view(name);
    EXPECT_TRUE(std::all_of(v.f32(), v.f32() + v.numel(), [](float x) { return x == 0.0f; })) << name;
  }
  const TensorView pos = frozen->params().view("model.visual.pos_embed.weight");
  EXPECT_EQ(std::memcmp(pos.f32(), full->params().view("model.visual.pos_embed.weight").f32(), pos.numel() * 4), 0);
  LoraConfig cfg;
  cfg.rank = 4;
  cfg.alpha = 8;
  cfg.target = ModuleSelector::from_json("all-linear", "test");
  cfg.exclude = ModuleSelector::from_json(nlohmann::json::array({"model.visual.patch_embed.proj"}), "test");
  LoraAdapters a(full->config(), cfg, "test");
  ASSERT_TRUE(a.has_tower());
  a.init_default(5);
  for (const auto& [name, view] : a.params().entries())
    if (contains(name, "lora_B"))
      for (int64_t i = 0; i < view.numel(); ++i) view.f32()[i] = 0.05f * std::sin(0.3f * static_cast<float>(i));
  SafetensorsFile ref = SafetensorsFile::open(grpo::test::kReferenceVl + "vl_case.safetensors");
  CaseOptions opt;
  opt.mode = ComputeMode::BF16;
  opt.lora = &a;
  const CaseOutputs x = evaluate_case(*full, ref, nullptr, opt), y = evaluate_case(*frozen, ref, nullptr, opt);
  ASSERT_FALSE(x.empty());
  for (const auto& [name, t] : x) EXPECT_EQ(t.data, y.at(name).data) << name;
}

// Qwen3-VL: the language model's linears take adapters (model.language_model.* keys) and the batch with pictures
// runs through them; all-linear reaches the tower's linears unless the tower is frozen (test_lora_tower.cpp
// tests those); the adapted model equals the merged one.
TEST(LoraReference, QwenVlLanguageModel) {
  auto w = ModelWeights::load(grpo::test::kReferenceVl);
  LoraConfig cfg;
  cfg.rank = 4;
  cfg.alpha = 8;
  cfg.target = ModuleSelector::from_json("all-linear", "test");
  EXPECT_TRUE(LoraAdapters(w->config(), cfg, "test").has_tower());
  LoraAdapters a(w->config(), cfg, "test", /*vision_frozen=*/true);
  EXPECT_FALSE(a.has_tower());
  ASSERT_EQ(a.modules().size(), 7u * w->config().num_hidden_layers);
  EXPECT_EQ(a.modules()[0], "model.language_model.layers.0.self_attn.q_proj");
  EXPECT_TRUE(a.params().has("base_model.model.model.language_model.layers.0.mlp.down_proj.lora_B.weight"));
  a.init_default(3);
  for (const auto& [name, view] : a.params().entries())  // a trained-looking B, so that the adapter matters
    if (contains(name, "lora_B"))
      for (int64_t i = 0; i < view.numel(); ++i) view.f32()[i] = 0.05f * std::sin(0.7f * static_cast<float>(i));
  SafetensorsFile ref = SafetensorsFile::open(grpo::test::kReferenceVl + "vl_case.safetensors");
  CaseOptions opt;
  opt.lora = &a;
  const CaseOutputs adapted = evaluate_case(*w, ref, nullptr, opt);
  int grads = 0;
  for (const auto& [name, t] : adapted) {
    if (name.rfind("grad.", 0) != 0) continue;
    EXPECT_TRUE(contains(name, ".lora_")) << name;
    ++grads;
  }
  EXPECT_EQ(grads, 2 * static_cast<int>(a.modules().size()));
  EXPECT_GT(rel_err(adapted.at("logits").data, case_floats(ref, "logits")), 1e-3) << "the adapter should matter";
  a.merge_into(*w);
  const CaseOutputs merged = evaluate_case(*w, ref, nullptr, CaseOptions{});
  EXPECT_LE(rel_err(adapted.at("logits").data, merged.at("logits").data), 1e-5);
}

// A copy of a reference adapter folder with its config edited by `edit` and its tensors by `tensors`.
std::string bad_adapter(const std::string& name, const std::function<void(nlohmann::json&)>& edit,
                        const std::string& tensors_from = kReferenceModels + "qwen3/lora_adapter") {
  const std::string dir = grpo::test::fresh_temp_dir("lora", name);
  nlohmann::json j = nlohmann::json::parse(read_file(kReferenceModels + "qwen3/lora_adapter/adapter_config.json"));
  edit(j);
  write_file_atomic(dir + "/adapter_config.json", j.dump(2));
  std::filesystem::copy_file(tensors_from + "/adapter_model.safetensors", dir + "/adapter_model.safetensors");
  return dir;
}

TEST(LoraReference, BadAdaptersNameModuleAndFile) {
  auto w = ModelWeights::load(kReferenceModels + "qwen3");
  const ModelConfig& c = w->config();
  // A target_modules entry that matches nothing.
  std::string d = bad_adapter("nomatch", [](nlohmann::json& j) { j["target_modules"].push_back("qkv_proj"); });
  std::string e = error_of([&] { LoraAdapters::load(c, d); });
  EXPECT_TRUE(contains(e, "qkv_proj") && contains(e, "matches no linear module") && contains(e, d)) << e;
  // Rank 0.
  d = bad_adapter("rank0", [](nlohmann::json& j) { j["r"] = 0; });
  e = error_of([&] { LoraAdapters::load(c, d); });
  EXPECT_TRUE(contains(e, "rank") && contains(e, d + "/adapter_config.json")) << e;
  // Shapes that do not match the model: the rank-8 tensors under a rank-4 config.
  d = bad_adapter("shape", [](nlohmann::json& j) { j["target_modules"] = {"q_proj", "v_proj"}; },
                  kReferenceModels + "qwen3/lora_rs_adapter");
  e = error_of([&] { LoraAdapters::load(c, d); });
  EXPECT_TRUE(contains(e, "model.layers.0.self_attn.q_proj.lora_A.weight") && contains(e, "has shape [8, 64]") &&
              contains(e, "adapter_model.safetensors"))
      << e;
  // A tensor of a module the config does not select.
  d = bad_adapter("extra", [](nlohmann::json& j) { j["target_modules"] = {"q_proj", "k_proj", "v_proj", "o_proj"}; });
  e = error_of([&] { LoraAdapters::load(c, d); });
  EXPECT_TRUE(contains(e, "mlp.") && contains(e, "belongs to no adapted module")) << e;
  // An adapter of another model: qwen2's shapes differ from qwen3's.
  e = error_of([&] { LoraAdapters::load(c, kReferenceModels + "qwen2/lora_adapter"); });
  EXPECT_TRUE(contains(e, "has shape") && contains(e, "qwen2/lora_adapter")) << e;
  // Features we do not implement are refused, not ignored.
  d = bad_adapter("dora", [](nlohmann::json& j) { j["use_dora"] = true; });
  e = error_of([&] { LoraAdapters::load(c, d); });
  EXPECT_TRUE(contains(e, "use_dora")) << e;
  // No folder.
  e = error_of([&] { LoraAdapters::load(c, "/nonexistent/adapter"); });
  EXPECT_TRUE(contains(e, "adapter_config.json") && contains(e, "/nonexistent/adapter")) << e;
}

}  // namespace
