// Tests of config.json parsing: the shared reference models (explicit vs derived head_dim, tied
// embeddings, Qwen2 biases), transformers v4/v5 spellings, rope scaling, round trip through
// model_config_to_json, presets, and every invalid-config case with an error naming file and field.
#include <gtest/gtest.h>

#include "core/error.h"
#include "model/config.h"
#include "model/presets.h"
#include "test_util.h"

using namespace grpo;
using nlohmann::json;

namespace {

using grpo::test::kReferenceModels;

json qwen3_json() {
  return json::parse(R"({
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": 512, "hidden_size": 64,
    "intermediate_size": 160, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "head_dim": 32, "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "tie_word_embeddings": false,
    "max_position_embeddings": 4096, "hidden_act": "silu", "attention_bias": false, "torch_dtype": "float32"})");
}

// Parses j and expects a grpo::Error mentioning the file name and every needle.
void expect_bad(const json& j, std::initializer_list<const char*> needles) {
  try {
    parse_model_config(j, "cfg.json");
    ADD_FAILURE() << "accepted " << j.dump();
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("cfg.json"), std::string::npos) << msg;
    for (const char* n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "missing \"" << n << "\" in: " << msg;
  }
}

}  // namespace

TEST(Config, ReferenceQwen3HasExplicitHeadDimAndQkNorm) {
  ModelConfig c = load_model_config(kReferenceModels + "qwen3/config.json");
  EXPECT_EQ(c.architecture, "Qwen3ForCausalLM");
  EXPECT_EQ(c.model_type, "qwen3");
  EXPECT_EQ(c.head_dim, 32);  // != hidden / heads = 16
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.num_attention_heads, 4);
  EXPECT_EQ(c.num_key_value_heads, 2);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.intermediate_size, 160);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_EQ(c.rope_theta, 10000.0);
  EXPECT_EQ(c.rope_scaling.type, "default");
  EXPECT_EQ(c.dtype, DType::F32);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-6);
  std::vector<TensorSpec> t = expected_tensors(c);
  EXPECT_EQ(t.front().name, "model.embed_tokens.weight");
  EXPECT_EQ(t.back().name, "lm_head.weight");
  EXPECT_EQ(t.size(), 25u);  // embed + 2 x 11 + norm + lm_head
  EXPECT_EQ(t[1].name, "model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(t[1].shape, (std::vector<int64_t>{128, 64}));
  EXPECT_EQ(t[4].shape, (std::vector<int64_t>{64, 128}));  // o_proj [C, H*D]
}

TEST(Config, ReferenceQwen3TiedHasNoLmHead) {
  ModelConfig c = load_model_config(kReferenceModels + "qwen3-tied/config.json");
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.num_attention_heads / c.num_key_value_heads, 3);
  EXPECT_EQ(c.rope_theta, 1e6);
  for (const TensorSpec& t : expected_tensors(c)) EXPECT_NE(t.name, "lm_head.weight");
}

TEST(Config, ReferenceQwen2DerivesHeadDimAndHasBiases) {
  ModelConfig c = load_model_config(kReferenceModels + "qwen2/config.json");
  EXPECT_EQ(c.architecture, "Qwen2ForCausalLM");
  EXPECT_EQ(c.head_dim, 8);  // 64 / 8
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_FALSE(c.qk_norm);
  int biases = 0;
  for (const TensorSpec& t : expected_tensors(c)) {
    if (t.name.find("_proj.bias") != std::string::npos) ++biases;
    EXPECT_EQ(t.name.find("q_norm"), std::string::npos);
  }
  EXPECT_EQ(biases, 6);  // q, k, v in each of 2 layers
}

TEST(Config, AcceptsTransformersV5Spellings) {
  json j = qwen3_json();
  j.erase("rope_theta");
  j.erase("torch_dtype");
  j["dtype"] = "bfloat16";
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1e6}};
  j["num_key_value_heads"] = nullptr;
  ModelConfig c = parse_model_config(j, "v5.json");
  EXPECT_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(c.dtype, DType::BF16);
  EXPECT_EQ(c.num_key_value_heads, 4);  // null -> heads
  json out = model_config_to_json(c);
  EXPECT_EQ(out["dtype"], "bfloat16");
  EXPECT_FALSE(out.contains("torch_dtype"));
  EXPECT_EQ(out["rope_parameters"]["rope_theta"], 1e6);
  EXPECT_FALSE(out.contains("rope_theta"));
}

TEST(Config, ParsesYarnAndLinearRopeScaling) {
  json j = qwen3_json();
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}};
  ModelConfig c = parse_model_config(j, "yarn.json");
  EXPECT_EQ(c.rope_scaling.type, "yarn");
  EXPECT_EQ(c.rope_scaling.factor, 4.0);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 32768);
  EXPECT_EQ(c.rope_scaling.beta_fast, 32);
  EXPECT_EQ(c.rope_scaling.beta_slow, 1);
  ModelConfig back = parse_model_config(model_config_to_json(c), "back.json");
  EXPECT_EQ(back.rope_scaling.type, "yarn");
  EXPECT_EQ(back.rope_scaling.original_max_position_embeddings, 32768);
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};  // old spelling of the type
  EXPECT_EQ(parse_model_config(j, "lin.json").rope_scaling.type, "linear");
  j["rope_scaling"] = nullptr;
  EXPECT_EQ(parse_model_config(j, "none.json").rope_scaling.type, "default");
}

TEST(Config, RoundTripsThroughJsonKeepingUnknownFields) {
  json j = qwen3_json();
  j["eos_token_id"] = json::array({151645, 151643});
  j["bos_token_id"] = 151643;
  j["vocab_size"] = 151936;
  j["transformers_version"] = "4.51.0";
  ModelConfig c = parse_model_config(j, "a.json");
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{151645, 151643}));
  EXPECT_EQ(c.bos_token_id, 151643);
  json out = model_config_to_json(c);
  EXPECT_EQ(out["transformers_version"], "4.51.0");
  ModelConfig d = parse_model_config(out, "b.json");
  EXPECT_EQ(model_config_to_json(d), out);
  EXPECT_EQ(d.head_dim, 32);
  EXPECT_EQ(d.eos_token_ids, c.eos_token_ids);
  j["eos_token_id"] = 7;
  EXPECT_EQ(parse_model_config(j, "c.json").eos_token_ids, (std::vector<int64_t>{7}));
  // Both dtype spellings present: both are rewritten, so neither contradicts the saved dtype.
  j["dtype"] = "float32";
  ModelConfig both = parse_model_config(j, "d.json");
  both.dtype = DType::BF16;
  json written = model_config_to_json(both);
  EXPECT_EQ(written["dtype"], "bfloat16");
  EXPECT_EQ(written["torch_dtype"], "bfloat16");
  EXPECT_EQ(parse_model_config(written, "e.json").dtype, DType::BF16);
}

TEST(Config, Qwen3WithoutHeadDimUsesTransformersDefault128) {
  json j = qwen3_json();
  j.erase("head_dim");
  EXPECT_EQ(parse_model_config(j, "q.json").head_dim, 128);
  j["architectures"] = {"LlamaForCausalLM"};
  j["model_type"] = "llama";
  EXPECT_EQ(parse_model_config(j, "l.json").head_dim, 16);
}

TEST(Config, RejectsMissingFieldsAndWrongTypes) {
  for (const char* f : {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads"}) {
    json j = qwen3_json();
    j.erase(f);
    expect_bad(j, {"missing field", f});
  }
  json j = qwen3_json();
  j["hidden_size"] = "64";
  expect_bad(j, {"\"hidden_size\"", "positive integer", "\"64\""});
  j = qwen3_json();
  j["num_hidden_layers"] = 2.5;
  expect_bad(j, {"\"num_hidden_layers\""});
  j = qwen3_json();
  j["vocab_size"] = -5;
  expect_bad(j, {"\"vocab_size\""});
  j = qwen3_json();
  j["tie_word_embeddings"] = "yes";
  expect_bad(j, {"\"tie_word_embeddings\"", "true or false"});
  j = qwen3_json();
  j["rms_norm_eps"] = 0;
  expect_bad(j, {"\"rms_norm_eps\"", "positive number"});
  j = qwen3_json();
  j["hidden_size"] = int64_t{1} << 40;
  expect_bad(j, {"\"hidden_size\"", "<="});
  j = qwen3_json();
  j["eos_token_id"] = "</s>";
  expect_bad(j, {"\"eos_token_id\""});
  j = qwen3_json();
  j["eos_token_id"] = 512;
  expect_bad(j, {"\"eos_token_id\"", "vocab_size 512"});
  j = qwen3_json();
  j["torch_dtype"] = "int8";
  expect_bad(j, {"\"torch_dtype\"", "bfloat16"});
  expect_bad(json::array({1, 2}), {"JSON object"});
}

TEST(Config, RejectsUnsupportedArchitecturesAndFeatures) {
  json j = qwen3_json();
  j["architectures"] = {"MistralForCausalLM"};
  expect_bad(j, {"\"architectures\"", "MistralForCausalLM", "Qwen3ForCausalLM"});
  j = qwen3_json();
  j["model_type"] = "qwen2";
  expect_bad(j, {"\"model_type\""});
  j = qwen3_json();
  j.erase("architectures");
  j.erase("model_type");
  expect_bad(j, {"\"architectures\""});
  j = qwen3_json();
  j["hidden_act"] = "gelu";
  expect_bad(j, {"\"hidden_act\"", "silu"});
  j = qwen3_json();
  j["attention_bias"] = true;
  expect_bad(j, {"\"attention_bias\""});
  j = qwen3_json();
  j["use_sliding_window"] = true;
  expect_bad(j, {"\"use_sliding_window\""});
  j = qwen3_json();
  j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
  expect_bad(j, {"rope_scaling.rope_type", "llama3"});
  j = qwen3_json();
  j["rope_scaling"] = {{"rope_type", "yarn"}};
  expect_bad(j, {"rope_scaling.factor"});
  j = qwen3_json();
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 2.0}, {"mscale", 1.0}};
  expect_bad(j, {"rope_scaling.mscale"});
  j = qwen3_json();
  j["layer_types"] = {"full_attention", "sliding_attention"};
  expect_bad(j, {"\"layer_types\""});
}

TEST(Config, RejectsIndivisibleHeads) {
  json j = qwen3_json();
  j["num_key_value_heads"] = 3;
  expect_bad(j, {"\"num_key_value_heads\"", "divisor", "4"});
  j = qwen3_json();
  j["architectures"] = {"Qwen2ForCausalLM"};
  j["model_type"] = "qwen2";
  j.erase("head_dim");
  j["hidden_size"] = 66;
  expect_bad(j, {"\"hidden_size\"", "multiple of num_attention_heads"});
  j = qwen3_json();
  j["head_dim"] = 31;
  expect_bad(j, {"\"head_dim\"", "even"});
}

TEST(Config, MalformedJsonFileNamesThePath) {
  const std::string path = ::testing::TempDir() + "/grpo_bad_config.json";
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs("{\"vocab_size\": 12,", f);
  std::fclose(f);
  try {
    load_model_config(path);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

TEST(Presets, ShapesAndParameterCounts) {
  ModelConfig tiny = preset_config("qwen3", "tiny");
  EXPECT_EQ(tiny.hidden_size, 128);
  EXPECT_EQ(tiny.head_dim, 32);
  EXPECT_TRUE(tiny.tie_word_embeddings);
  EXPECT_EQ(tiny.vocab_size, 384);
  // embed 384*128 + 4 layers x (q 128*128 + k,v 2*64*128 + o 128*128 + norms 2*32 + mlp 3*384*128 + 2*128) + 128
  EXPECT_EQ(parameter_count(tiny), 384 * 128 + 4 * (128 * 128 * 2 + 2 * 64 * 128 + 64 + 3 * 384 * 128 + 256) + 128);
  ModelConfig small = preset_config("qwen3", "small");
  EXPECT_NEAR(static_cast<double>(parameter_count(small)), 25e6, 5e6);
  ModelConfig real = preset_config("qwen3", "qwen3-0.6b");
  EXPECT_EQ(real.vocab_size, 151936);
  EXPECT_EQ(real.head_dim, 128);
  EXPECT_EQ(real.num_hidden_layers, 28);
  EXPECT_NEAR(static_cast<double>(parameter_count(real)), 596e6, 5e6);  // Qwen3-0.6B: 0.6B incl. embeddings
  // The real Qwen3-1.7B (1.72B with the tied embedding counted once) and Qwen3-4B (4.02B) shapes.
  ModelConfig q17 = preset_config("qwen3", "qwen3-1.7b");
  EXPECT_EQ(q17.hidden_size, 2048);
  EXPECT_EQ(q17.intermediate_size, 6144);
  EXPECT_EQ(q17.num_hidden_layers, 28);
  EXPECT_TRUE(q17.tie_word_embeddings);
  EXPECT_NEAR(static_cast<double>(parameter_count(q17)), 1.72e9, 0.01e9);
  ModelConfig q4 = preset_config("qwen3", "qwen3-4b");
  EXPECT_EQ(q4.hidden_size, 2560);
  EXPECT_EQ(q4.intermediate_size, 9728);
  EXPECT_EQ(q4.num_hidden_layers, 36);
  EXPECT_EQ(q4.num_attention_heads, 32);
  EXPECT_EQ(q4.num_key_value_heads, 8);
  EXPECT_EQ(q4.head_dim, 128);
  EXPECT_EQ(q4.vocab_size, 151936);
  EXPECT_TRUE(q4.tie_word_embeddings);
  EXPECT_NEAR(static_cast<double>(parameter_count(q4)), 4.02e9, 0.01e9);
  EXPECT_THROW(preset_config("qwen2", "qwen3-4b"), Error);
  ModelConfig q2 = preset_config("qwen2", "tiny");
  EXPECT_TRUE(q2.qkv_bias);
  EXPECT_FALSE(q2.qk_norm);
  EXPECT_EQ(q2.head_dim, 32);
  ModelConfig ll = preset_config("llama", "small");
  EXPECT_FALSE(ll.qkv_bias || ll.qk_norm);
  EXPECT_EQ(ll.head_dim, 64);
  EXPECT_THROW(preset_config("gpt2", "tiny"), Error);
  EXPECT_THROW(preset_config("qwen3", "huge"), Error);
  for (const std::string& a : preset_archs())
    for (const std::string& p : preset_names()) {
      if (!preset_exists(a, p)) {
        EXPECT_THROW(preset_config(a, p), Error) << a << "/" << p;
        continue;
      }
      ModelConfig c = preset_config(a, p);
      EXPECT_EQ(parse_model_config(model_config_to_json(c), "rt").hidden_size, c.hidden_size);
    }
}
