// Qwen3-VL config.json and checkpoints: the reference tiny model (every field, 93 tensors with their real
// names), transformers v4 and v5 spellings, defaults of absent vision keys, round trips keeping unknown
// fields, presets, weights in one arena with the tower last (and a text-only arena of the same offsets),
// sharded bf16 save/load keeping every name, and every bad field named in a clear error.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "core/error.h"
#include "core/files.h"
#include "model/checkpoint.h"
#include "model/presets.h"
#include "model/weights.h"
#include "test_util.h"

using namespace grpo;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

using grpo::test::fresh_temp_dir;

const std::string kVl = std::string(GRPO_SHARED_DIR) + "/reference/models/qwen3-vl";

json vl_json() { return json::parse(read_file(kVl + "/config.json")); }

void expect_vl_refused(const json& j, std::initializer_list<const char*> needles) {
  try {
    parse_model_config(j, "vl.json");
    ADD_FAILURE() << "accepted " << j.dump();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("vl.json"), std::string::npos) << msg;
    for (const char* n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "missing \"" << n << "\" in: " << msg;
  }
}

}  // namespace

TEST(VlConfig, ReferenceTinyModel) {
  ModelConfig c = load_model_config(kVl + "/config.json");
  EXPECT_EQ(c.architecture, "Qwen3VLForConditionalGeneration");
  EXPECT_EQ(c.model_type, "qwen3_vl");
  EXPECT_TRUE(c.has_vision());
  EXPECT_EQ(c.vocab_size, 320);
  EXPECT_EQ(c.hidden_size, 32);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.num_hidden_layers, 3);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.rope_theta, 100.0);
  EXPECT_EQ(c.mrope_section, (std::array<int64_t, 3>{4, 2, 2}));
  EXPECT_EQ(c.image_token_id, 312);
  EXPECT_EQ(c.video_token_id, 313);
  EXPECT_EQ(c.vision_start_token_id, 309);
  EXPECT_EQ(c.vision_end_token_id, 310);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{302}));
  const VisionConfig& v = c.vision;
  EXPECT_EQ(v.depth, 3);
  EXPECT_EQ(v.hidden_size, 16);
  EXPECT_EQ(v.head_dim(), 8);
  EXPECT_EQ(v.intermediate_size, 32);
  EXPECT_EQ(v.patch_dim(), 1536);
  EXPECT_EQ(v.merged_dim(), 64);
  EXPECT_EQ(v.grid_side(), 5);
  EXPECT_EQ(v.out_hidden_size, 32);
  EXPECT_EQ(v.deepstack_visual_indexes, (std::vector<int64_t>{0, 1}));

  // The 93 tensors of the reference checkpoint, with their real names and shapes.
  SafetensorsFile st = SafetensorsFile::open(kVl + "/model.safetensors");
  std::vector<TensorSpec> specs = expected_tensors(c);
  EXPECT_EQ(specs.size(), 93u);
  EXPECT_EQ(specs.size(), st.tensors().size());
  for (const TensorSpec& s : specs) {
    const StTensor* t = st.find(s.name);
    ASSERT_NE(t, nullptr) << s.name;
    EXPECT_EQ(t->shape, s.shape) << s.name;
  }
  EXPECT_EQ(specs.front().name, "model.language_model.embed_tokens.weight");
  EXPECT_EQ(vision_tensors(c).front().shape, (std::vector<int64_t>{16, 3, 2, 16, 16}));
}

TEST(VlConfig, TransformersV5SpellingAndDefaults) {
  json j = vl_json();
  json& t = j["text_config"];
  t["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 250.0}, {"mrope_section", {2, 3, 3}},
                          {"mrope_interleaved", true}};
  t.erase("rope_theta");
  t.erase("rope_scaling");
  j.erase("torch_dtype");
  t.erase("torch_dtype");
  j["dtype"] = "bfloat16";
  for (const char* k : {"in_channels", "patch_size", "temporal_patch_size", "spatial_merge_size", "hidden_act"})
    j["vision_config"].erase(k);
  ModelConfig c = parse_model_config(j, "v5.json");
  EXPECT_EQ(c.rope_theta, 250.0);
  EXPECT_EQ(c.mrope_section, (std::array<int64_t, 3>{2, 3, 3}));
  EXPECT_EQ(c.dtype, DType::BF16);
  EXPECT_EQ(c.vision.patch_size, 16);  // Qwen3VLVisionConfig defaults
  EXPECT_EQ(c.vision.temporal_patch_size, 2);
  EXPECT_EQ(c.vision.spatial_merge_size, 2);
  EXPECT_EQ(c.vision.in_channels, 3);
  json out = model_config_to_json(c);
  EXPECT_EQ(out["dtype"], "bfloat16");
  EXPECT_EQ(out["text_config"]["rope_parameters"]["rope_theta"], 250.0);
  EXPECT_EQ(out["text_config"]["rope_parameters"]["mrope_section"], json({2, 3, 3}));
  EXPECT_FALSE(out["text_config"].contains("rope_scaling"));
  ModelConfig back = parse_model_config(out, "back.json");
  EXPECT_EQ(back.mrope_section, c.mrope_section);
  EXPECT_EQ(model_config_to_json(back), out);

  // Absent mrope keys: Qwen3-VL's [24, 20, 20], theta 5e6 (head_dim 128 has 64 frequencies).
  json k = vl_json();
  k["text_config"].erase("rope_scaling");
  k["text_config"].erase("rope_theta");
  k["text_config"]["head_dim"] = 128;
  ModelConfig d = parse_model_config(k, "d.json");
  EXPECT_EQ(d.mrope_section, (std::array<int64_t, 3>{24, 20, 20}));
  EXPECT_EQ(d.rope_theta, 5e6);
}

TEST(VlConfig, RoundTripKeepsUnknownFieldsAndSpellings) {
  json j = vl_json();
  j["transformers_version"] = "4.57.0";
  j["vision_config"]["something_new"] = 7;
  ModelConfig c = parse_model_config(j, "a.json");
  json out = model_config_to_json(c);
  EXPECT_EQ(out["transformers_version"], "4.57.0");
  EXPECT_EQ(out["vision_config"]["something_new"], 7);
  EXPECT_EQ(out["torch_dtype"], "float32");
  EXPECT_EQ(out["text_config"]["rope_scaling"]["mrope_section"], json({4, 2, 2}));
  EXPECT_EQ(out["text_config"]["model_type"], "qwen3_vl_text");
  ModelConfig d = parse_model_config(out, "b.json");
  EXPECT_EQ(model_config_to_json(d), out);
  EXPECT_EQ(expected_tensors(d).size(), 93u);
}

TEST(VlConfig, RejectsBadFieldsNamingThem) {
  auto edit = [](auto f) {
    json j = vl_json();
    f(j);
    return j;
  };
  expect_vl_refused(edit([](json& j) { j.erase("text_config"); }), {"text_config", "missing"});
  expect_vl_refused(edit([](json& j) { j["text_config"]["vocab_size"] = -1; }), {"text_config.vocab_size"});
  expect_vl_refused(edit([](json& j) { j["text_config"]["model_type"] = "qwen2"; }), {"text_config.model_type"});
  expect_vl_refused(edit([](json& j) { j["text_config"]["rope_scaling"]["mrope_section"] = {4, 2}; }),
             {"text_config.rope_scaling.mrope_section"});
  expect_vl_refused(edit([](json& j) { j["text_config"]["rope_scaling"]["mrope_interleaved"] = false; }),
             {"mrope_interleaved", "interleave"});
  expect_vl_refused(edit([](json& j) { j["text_config"]["rope_scaling"]["rope_type"] = "yarn"; }), {"rope_type"});
  expect_vl_refused(edit([](json& j) { j["vision_config"]["num_heads"] = 3; }), {"vision_config.num_heads"});
  expect_vl_refused(edit([](json& j) { j["vision_config"]["num_heads"] = 8; }), {"vision_config.num_heads", "divisible by 4"});
  expect_vl_refused(edit([](json& j) { j["vision_config"]["num_position_embeddings"] = 24; }),
             {"vision_config.num_position_embeddings", "square"});
  expect_vl_refused(edit([](json& j) { j["vision_config"]["deepstack_visual_indexes"] = {1, 0}; }),
             {"vision_config.deepstack_visual_indexes"});
  expect_vl_refused(edit([](json& j) { j["vision_config"]["deepstack_visual_indexes"] = {0, 3}; }),
             {"vision_config.deepstack_visual_indexes", "below depth 3"});
  expect_vl_refused(edit([](json& j) { j["vision_config"].erase("deepstack_visual_indexes"); }),
             {"vision_config.deepstack_visual_indexes"});  // defaults [8, 16, 24] do not fit depth 3
  expect_vl_refused(edit([](json& j) { j["vision_config"]["out_hidden_size"] = 64; }),
             {"vision_config.out_hidden_size", "text_config.hidden_size 32"});
  expect_vl_refused(edit([](json& j) { j["vision_config"]["hidden_act"] = "gelu"; }), {"vision_config.hidden_act"});
  expect_vl_refused(edit([](json& j) { j["vision_config"] = 5; }), {"vision_config"});
  expect_vl_refused(edit([](json& j) { j["image_token_id"] = 320; }), {"image_token_id", "vocab_size 320"});
  expect_vl_refused(edit([](json& j) { j["video_token_id"] = 312; }), {"four different ids"});
  expect_vl_refused(edit([](json& j) { j["architectures"] = {"Qwen2VLForConditionalGeneration"}; }),
             {"architectures", "Qwen3VLForConditionalGeneration"});
}

TEST(VlConfig, PresetsAndTheirParameterCounts) {
  ModelConfig tiny = preset_config("qwen3-vl", "tiny");
  EXPECT_TRUE(tiny.has_vision());
  EXPECT_EQ(tiny.image_token_id, 263);
  EXPECT_EQ(tiny.vision.out_hidden_size, tiny.hidden_size);
  EXPECT_EQ(tiny.mrope_section[0] + tiny.mrope_section[1] + tiny.mrope_section[2], tiny.head_dim / 2);
  ModelConfig real = preset_config("qwen3-vl", "qwen3-vl-2b");
  EXPECT_EQ(real.image_token_id, 151655);
  EXPECT_EQ(real.mrope_section, (std::array<int64_t, 3>{24, 20, 20}));
  EXPECT_EQ(real.vision.deepstack_visual_indexes, (std::vector<int64_t>{5, 11, 17}));
  int64_t vision = 0;
  for (const TensorSpec& t : vision_tensors(real)) vision += st_numel(t.shape);
  // From the 2B shapes: ~1.72B in the language model (tied embeddings), ~0.41B in the tower.
  EXPECT_NEAR(static_cast<double>(parameter_count(real)), 2.13e9, 0.03e9);
  EXPECT_NEAR(static_cast<double>(vision), 0.405e9, 0.02e9);
  EXPECT_THROW(preset_config("qwen3-vl", "qwen3-0.6b"), Error);
  EXPECT_THROW(preset_config("qwen3", "qwen3-vl-2b"), Error);
  // Qwen3-VL-8B-Instruct's shapes: untied output layer, ~7.6B in the decoder layers and embeddings, ~0.58B
  // in the tower (27 blocks of 1152, DeepStack after 8, 16, 24): 8.77B.
  ModelConfig eight = preset_config("qwen3-vl", "qwen3-vl-8b");
  EXPECT_FALSE(eight.tie_word_embeddings);
  EXPECT_EQ(eight.num_hidden_layers, 36);
  EXPECT_EQ(eight.intermediate_size, 12288);
  EXPECT_EQ(eight.vision.out_hidden_size, 4096);
  EXPECT_EQ(eight.vision.deepstack_visual_indexes, (std::vector<int64_t>{8, 16, 24}));
  int64_t eight_vision = 0;
  for (const TensorSpec& t : vision_tensors(eight)) eight_vision += st_numel(t.shape);
  EXPECT_NEAR(static_cast<double>(parameter_count(eight)), 8.767e9, 0.01e9);
  EXPECT_NEAR(static_cast<double>(eight_vision), 0.576e9, 0.01e9);
  for (const char* p : {"tiny", "small", "qwen3-vl-2b", "qwen3-vl-8b"}) {
    ModelConfig c = preset_config("qwen3-vl", p);
    ModelConfig back = parse_model_config(model_config_to_json(c), "rt");
    EXPECT_EQ(parameter_count(back), parameter_count(c)) << p;
  }
}

TEST(VlWeights, TowerIsTheLastPartOfTheArena) {
  ModelConfig c = load_model_config(kVl + "/config.json");
  Arena all(DType::F32), text(DType::F32);
  declare_parameters(c, all);
  declare_parameters(c, text, /*with_vision=*/false);
  all.allocate();
  text.allocate();
  ASSERT_LT(text.entries().size(), all.entries().size());
  for (size_t i = 0; i < text.entries().size(); ++i) {  // same names, same offsets
    EXPECT_EQ(all.entries()[i].first, text.entries()[i].first);
    EXPECT_EQ(static_cast<char*>(all.entries()[i].second.data) - static_cast<char*>(all.flat().data),
              static_cast<char*>(text.entries()[i].second.data) - static_cast<char*>(text.flat().data));
  }
  for (size_t i = text.entries().size(); i < all.entries().size(); ++i)
    EXPECT_EQ(all.entries()[i].first.rfind("model.visual.", 0), 0u) << all.entries()[i].first;
  const ModelTensors t = resolve_tensors(c, text);
  EXPECT_EQ(t.vision.patch_w, nullptr);
  const ModelTensors a = resolve_tensors(c, all);
  EXPECT_EQ(a.vision.blocks.size(), 3u);
  EXPECT_EQ(a.vision.deepstack.size(), 2u);
  EXPECT_EQ(a.vision.patch_w, all.view("model.visual.patch_embed.proj.weight").data);
}

TEST(VlWeights, LoadAndShardedBf16SaveKeepEveryName) {
  auto w = ModelWeights::load(kVl);
  const std::string root = fresh_temp_dir("vlcfg", "save");
  save_checkpoint(root + "/ck", w->config(), w->named_tensors(), DType::BF16, /*max_shard_bytes=*/100000);
  ASSERT_TRUE(fs::exists(root + "/ck/model.safetensors.index.json"));
  Checkpoint ck = Checkpoint::open(root + "/ck");
  std::set<std::string> names;
  for (const std::string& f : ck.files()) {
    const SafetensorsFile shard = SafetensorsFile::open(f);
    for (const StTensor& t : shard.tensors()) names.insert(t.name);
  }
  SafetensorsFile ref = SafetensorsFile::open(kVl + "/model.safetensors");
  EXPECT_EQ(names.size(), ref.tensors().size());
  for (const StTensor& t : ref.tensors()) {
    EXPECT_TRUE(names.count(t.name)) << t.name;
    EXPECT_EQ(ck.find(t.name)->shape, t.shape) << t.name;
  }
  auto back = ModelWeights::load(root + "/ck");
  EXPECT_TRUE(back->config().has_vision());
  EXPECT_EQ(back->config().image_token_id, 312);
  const float* a = w->params().view("model.visual.blocks.2.attn.qkv.weight").f32();
  const float* b = back->params().view("model.visual.blocks.2.attn.qkv.weight").f32();
  for (int64_t i = 0; i < 48 * 16; ++i) ASSERT_EQ(b[i], bf16_to_f32(f32_to_bf16(a[i])));
  fs::remove_all(root);
}
