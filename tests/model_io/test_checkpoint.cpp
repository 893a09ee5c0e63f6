// Tests of checkpoint folders: loading the shared reference models, save/load round trips (single file,
// sharded, bf16), atomic saves (a crashed or failed save never replaces the old checkpoint), and
// rejection of missing/misshapen tensors and inconsistent shard indexes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/files.h"
#include "model/checkpoint.h"
#include "model/presets.h"
#include "test_util.h"

using namespace grpo;
namespace fs = std::filesystem;

namespace {

using grpo::test::kReferenceModels;

using grpo::test::fresh_temp_dir;

// Deterministic f32 values for every parameter of c; `salt` changes them.
struct Params {
  std::vector<std::vector<float>> data;
  std::vector<NamedF32> named;
  Params(const ModelConfig& c, float salt) {
    std::vector<TensorSpec> specs = expected_tensors(c);
    data.resize(specs.size());
    for (size_t i = 0; i < specs.size(); ++i) {
      data[i].resize(static_cast<size_t>(st_numel(specs[i].shape)));
      for (size_t k = 0; k < data[i].size(); ++k) data[i][k] = salt + 0.001f * static_cast<float>((k * 7 + i) % 1000);
      named.push_back({specs[i].name, specs[i].shape, data[i].data()});
    }
  }
};

std::vector<float> read_f32(const Checkpoint& ck, const std::string& name) {
  const StTensor* t = ck.find(name);
  EXPECT_NE(t, nullptr) << name;
  std::vector<float> v(static_cast<size_t>(st_numel(t->shape)));
  tensor_to_f32(*t, v.data(), static_cast<int64_t>(v.size()), ck.file_of(name));
  return v;
}

void expect_open_fails(const std::string& dir, std::initializer_list<const char*> needles) {
  try {
    Checkpoint::open(dir);
    ADD_FAILURE() << "opened a bad checkpoint " << dir;
  } catch (const Error& e) {
    for (const char* n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << "missing \"" << n << "\" in: " << e.what();
  }
}

ModelConfig small_qwen2() {  // tiny shapes with biases, fast to write
  ModelConfig c = preset_config("qwen2", "tiny");
  c.num_hidden_layers = 2;
  c.tie_word_embeddings = false;
  return parse_model_config(model_config_to_json(c), "test");
}

}  // namespace

TEST(Checkpoint, OpensEveryReferenceModel) {
  Checkpoint q3 = Checkpoint::open(kReferenceModels + "qwen3");
  EXPECT_EQ(q3.config().head_dim, 32);
  EXPECT_FALSE(q3.config().tie_word_embeddings);
  ASSERT_NE(q3.find("lm_head.weight"), nullptr);
  EXPECT_EQ(q3.find("model.layers.1.self_attn.q_norm.weight")->shape, (std::vector<int64_t>{32}));
  EXPECT_EQ(q3.names().size(), 25u);
  EXPECT_TRUE(q3.notes().empty());

  Checkpoint tied = Checkpoint::open(kReferenceModels + "qwen3-tied");
  EXPECT_TRUE(tied.config().tie_word_embeddings);
  EXPECT_EQ(tied.find("lm_head.weight"), nullptr);

  Checkpoint q2 = Checkpoint::open(kReferenceModels + "qwen2");
  EXPECT_TRUE(q2.config().qkv_bias);
  EXPECT_EQ(q2.find("model.layers.0.self_attn.k_proj.bias")->shape, (std::vector<int64_t>{32}));
  for (const std::string& n : q2.names()) EXPECT_NE(q2.find(n), nullptr) << n;
}

TEST(Checkpoint, SaveThenOpenRoundTripsSingleFile) {
  const std::string root = fresh_temp_dir("ckpt", "single");
  ModelConfig c = small_qwen2();
  Params p(c, 0.5f);
  save_checkpoint(root + "/ck", c, p.named, DType::F32);
  EXPECT_TRUE(fs::exists(root + "/ck/model.safetensors"));
  EXPECT_FALSE(fs::exists(root + "/ck/model.safetensors.index.json"));
  EXPECT_FALSE(fs::exists(root + "/ck.partial"));
  Checkpoint ck = Checkpoint::open(root + "/ck");
  EXPECT_EQ(ck.config().hidden_size, c.hidden_size);
  EXPECT_TRUE(ck.config().qkv_bias);
  for (size_t i = 0; i < p.named.size(); ++i) EXPECT_EQ(read_f32(ck, p.named[i].name), p.data[i]) << p.named[i].name;
  // A trailing slash names the same folder; the temp folder is still its sibling.
  save_checkpoint(root + "/ck/", c, p.named, DType::F32);
  EXPECT_FALSE(fs::exists(root + "/ck/.partial"));
  EXPECT_EQ(read_f32(Checkpoint::open(root + "/ck"), "model.norm.weight"), p.data[p.data.size() - 2]);
  fs::remove_all(root);
}

TEST(Checkpoint, ShardedBf16SaveRoundTrips) {
  const std::string root = fresh_temp_dir("ckpt", "sharded");
  ModelConfig c = small_qwen2();
  Params p(c, -1.25f);
  save_checkpoint(root + "/ck", c, p.named, DType::BF16, /*max_shard_bytes=*/60000);
  ASSERT_TRUE(fs::exists(root + "/ck/model.safetensors.index.json"));
  EXPECT_FALSE(fs::exists(root + "/ck/model.safetensors"));
  Checkpoint ck = Checkpoint::open(root + "/ck");
  EXPECT_GT(ck.files().size(), 2u);
  EXPECT_EQ(ck.config().dtype, DType::BF16);
  for (const std::string& f : ck.files()) {
    SafetensorsFile shard = SafetensorsFile::open(f);
    int64_t bytes = 0;
    for (const StTensor& t : shard.tensors()) bytes += static_cast<int64_t>(t.nbytes);
    EXPECT_TRUE(bytes <= 60000 || shard.tensors().size() == 1) << f;
  }
  for (size_t i = 0; i < p.named.size(); ++i) {
    EXPECT_EQ(ck.find(p.named[i].name)->dtype, StDType::BF16);
    std::vector<float> back = read_f32(ck, p.named[i].name);
    for (size_t k = 0; k < back.size(); ++k) ASSERT_EQ(back[k], bf16_to_f32(f32_to_bf16(p.data[i][k])));
  }
  nlohmann::json index = nlohmann::json::parse(read_file(root + "/ck/model.safetensors.index.json"));
  int64_t total = 0;
  for (const NamedF32& t : p.named) total += 2 * st_numel(t.shape);
  EXPECT_EQ(index["metadata"]["total_size"], total);
  fs::remove_all(root);
}

TEST(Checkpoint, CrashedSaveNeverReplacesTheOldCheckpoint) {
  const std::string root = fresh_temp_dir("ckpt", "atomic");
  const std::string dir = root + "/ck";
  ModelConfig c = small_qwen2();
  Params old_params(c, 1.0f), new_params(c, 2.0f);
  save_checkpoint(dir, c, old_params.named, DType::F32);
  // A "crash" mid-save leaves a half-written temp folder next to the checkpoint.
  fs::create_directories(dir + ".partial");
  write_file_atomic(dir + ".partial/model.safetensors", "garbage");
  Checkpoint still_old = Checkpoint::open(dir);
  EXPECT_EQ(read_f32(still_old, "model.norm.weight"), old_params.data[old_params.data.size() - 2]);

  // A save that fails after writing the weights (missing extra file) leaves the old checkpoint and no temp.
  EXPECT_THROW(save_checkpoint(dir, c, new_params.named, DType::F32, 0, {root + "/no_such_tokenizer.json"}), Error);
  EXPECT_FALSE(fs::exists(dir + ".partial"));
  EXPECT_EQ(read_f32(Checkpoint::open(dir), "model.embed_tokens.weight"), old_params.data[0]);

  // A successful save replaces it, cleans up the leftovers and copies extra files.
  write_file_atomic(root + "/tokenizer.json", "{}");
  save_checkpoint(dir, c, new_params.named, DType::F32, 0, {root + "/tokenizer.json"});
  EXPECT_EQ(read_f32(Checkpoint::open(dir), "model.embed_tokens.weight"), new_params.data[0]);
  EXPECT_TRUE(fs::exists(dir + "/tokenizer.json"));
  EXPECT_FALSE(fs::exists(dir + ".partial"));
  EXPECT_FALSE(fs::exists(dir + ".old"));
  // Re-saving sharded over a single-file checkpoint leaves no stale model.safetensors behind.
  save_checkpoint(dir, c, new_params.named, DType::F32, 60000);
  EXPECT_FALSE(fs::exists(dir + "/model.safetensors"));
  EXPECT_FALSE(fs::exists(dir + "/tokenizer.json"));
  EXPECT_NO_THROW(Checkpoint::open(dir));
  fs::remove_all(root);
}

TEST(Checkpoint, SaveRefusesBadInputsAndNonCheckpointFolders) {
  const std::string root = fresh_temp_dir("ckpt", "refuse");
  ModelConfig c = small_qwen2();
  Params p(c, 0.f);
  std::vector<NamedF32> missing(p.named.begin() + 1, p.named.end());
  EXPECT_THROW(save_checkpoint(root + "/a", c, missing, DType::F32), Error);
  std::vector<NamedF32> wrong = p.named;
  wrong[0].shape = {1, 1};
  EXPECT_THROW(save_checkpoint(root + "/a", c, wrong, DType::F32), Error);
  std::vector<NamedF32> extra = p.named;
  extra.push_back({"extra.weight", {1}, p.data[0].data()});
  EXPECT_THROW(save_checkpoint(root + "/a", c, extra, DType::F32), Error);
  EXPECT_THROW(save_checkpoint(root + "/a", c, p.named, DType::I32), Error);
  EXPECT_FALSE(fs::exists(root + "/a"));
  write_file_atomic(root + "/notes.txt", "mine");
  try {
    save_checkpoint(root, c, p.named, DType::F32);  // root holds notes.txt and no config.json
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a checkpoint"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::exists(root + "/notes.txt"));
  fs::remove_all(root);
}

TEST(Checkpoint, RejectsMissingAndMisshapenTensors) {
  const std::string root = fresh_temp_dir("ckpt", "misshapen");
  ModelConfig c = small_qwen2();
  Params p(c, 0.f);
  save_checkpoint(root + "/ck", c, p.named, DType::F32);
  const std::string dir = root + "/ck";
  // Rewrite the weights with one tensor missing.
  std::vector<StTensorOut> outs;
  for (const NamedF32& t : p.named)
    if (t.name != "model.layers.1.mlp.up_proj.weight") outs.push_back({t.name, StDType::F32, t.shape, t.data});
  write_safetensors(dir + "/model.safetensors", outs);
  expect_open_fails(dir, {"missing tensor \"model.layers.1.mlp.up_proj.weight\""});
  // One tensor with the wrong shape.
  outs.clear();
  for (const NamedF32& t : p.named) {
    std::vector<int64_t> shape = t.shape;
    if (t.name == "model.layers.0.self_attn.q_proj.bias") shape = {shape[0] / 2, 2};
    outs.push_back({t.name, StDType::F32, shape, t.data});
  }
  write_safetensors(dir + "/model.safetensors", outs);
  expect_open_fails(dir, {"model.safetensors", "q_proj.bias", "has shape [64, 2], expected [128]"});
  // A wrong dtype.
  outs.clear();
  for (const NamedF32& t : p.named)
    outs.push_back({t.name, t.name == "model.norm.weight" ? StDType::I32 : StDType::F32, t.shape, t.data});
  write_safetensors(dir + "/model.safetensors", outs);
  expect_open_fails(dir, {"model.norm.weight", "dtype I32"});
  // An unknown tensor.
  outs.clear();
  for (const NamedF32& t : p.named) outs.push_back({t.name, StDType::F32, t.shape, t.data});
  outs.push_back({"model.layers.0.self_attn.o_proj.bias", StDType::F32, {128}, p.data[0].data()});
  write_safetensors(dir + "/model.safetensors", outs);
  expect_open_fails(dir, {"unexpected tensor \"model.layers.0.self_attn.o_proj.bias\""});
  // No weights at all, and no config.
  fs::remove(dir + "/model.safetensors");
  expect_open_fails(dir, {"no model.safetensors"});
  fs::remove(dir + "/config.json");
  expect_open_fails(dir, {"no config.json"});
  fs::remove_all(root);
}

TEST(Checkpoint, ToleratesDuplicateTiedLmHeadAndMissingUntiedLmHead) {
  const std::string root = fresh_temp_dir("ckpt", "lmhead");
  ModelConfig untied = small_qwen2();
  Params p(untied, 0.f);  // includes lm_head.weight
  ModelConfig tied = untied;
  tied.tie_word_embeddings = true;
  // Tied config + lm_head.weight present: ignored with a note.
  std::vector<StTensorOut> outs;
  for (const NamedF32& t : p.named) outs.push_back({t.name, StDType::F32, t.shape, t.data});
  fs::create_directories(root + "/a");
  write_file_atomic(root + "/a/config.json", model_config_to_json(tied).dump());
  write_safetensors(root + "/a/model.safetensors", outs);
  Checkpoint a = Checkpoint::open(root + "/a");
  EXPECT_EQ(a.find("lm_head.weight"), nullptr);
  EXPECT_EQ(a.notes().size(), 1u);
  // Untied config without lm_head.weight: treated as tied.
  outs.pop_back();
  ASSERT_EQ(p.named.back().name, "lm_head.weight");
  fs::create_directories(root + "/b");
  write_file_atomic(root + "/b/config.json", model_config_to_json(untied).dump());
  write_safetensors(root + "/b/model.safetensors", outs);
  Checkpoint b = Checkpoint::open(root + "/b");
  EXPECT_TRUE(b.config().tie_word_embeddings);
  EXPECT_EQ(b.notes().size(), 1u);
  fs::remove_all(root);
}

TEST(Checkpoint, RejectsInconsistentShardIndexes) {
  const std::string root = fresh_temp_dir("ckpt", "index");
  const std::string dir = root + "/ck";
  ModelConfig c = small_qwen2();
  Params p(c, 0.f);
  save_checkpoint(dir, c, p.named, DType::F32, 60000);
  const std::string index_path = dir + "/model.safetensors.index.json";
  const nlohmann::json good = nlohmann::json::parse(read_file(index_path));
  auto with_index = [&](const nlohmann::json& j) { write_file_atomic(index_path, j.dump()); };

  nlohmann::json j = good;
  j["weight_map"]["model.norm.weight"] = "model-00009-of-00009.safetensors";
  with_index(j);
  expect_open_fails(dir, {"shard \"model-00009-of-00009.safetensors\" does not exist"});

  j = good;
  const std::string first_file = good["weight_map"]["model.embed_tokens.weight"];
  j["weight_map"]["model.norm.weight"] = first_file;  // listed in the wrong shard
  with_index(j);
  expect_open_fails(dir, {"\"model.norm.weight\" is listed in shard", "but absent"});

  j = good;
  j["weight_map"].erase("model.norm.weight");  // present in a shard but not listed
  with_index(j);
  expect_open_fails(dir, {"\"model.norm.weight\" is not listed"});

  j = good;
  j["weight_map"]["model.norm.weight"] = "../escape.safetensors";
  with_index(j);
  expect_open_fails(dir, {"not a plain file name"});

  with_index(nlohmann::json::array());
  expect_open_fails(dir, {"weight_map"});
  write_file_atomic(index_path, "{not json");
  expect_open_fails(dir, {"model.safetensors.index.json", "not valid JSON"});

  with_index(good);
  EXPECT_NO_THROW(Checkpoint::open(dir));
  fs::remove_all(root);
}
