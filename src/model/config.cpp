// config.json parsing and writing (see config.h). Defaults for absent optional fields are those of the
// transformers config classes (Qwen3Config, Qwen2Config, LlamaConfig); fields that would change the
// model's math in ways this engine does not implement (o_proj/mlp biases, sliding windows, other rope
// types, other activations) are errors rather than silently ignored.
#include "model/config.h"

#include "core/error.h"
#include "core/files.h"
#include "model/config_fields.h"

namespace grpo {

using config_detail::FieldReader;

namespace {

struct ArchInfo {
  const char* architecture;
  const char* model_type;
  int64_t default_max_positions;
};
constexpr ArchInfo kArchs[] = {
    {"Qwen3ForCausalLM", "qwen3", 32768},
    {"Qwen2ForCausalLM", "qwen2", 32768},
    {"LlamaForCausalLM", "llama", 2048},
    {"Qwen3VLForConditionalGeneration", "qwen3_vl", 128000},
};

const ArchInfo& read_architecture(const FieldReader& r) {
  std::string arch;
  if (r.has("architectures")) {
    const nlohmann::json& a = r.at("architectures");
    if (!a.is_array() || a.empty() || !a[0].is_string()) r.bad("architectures", "a list like [\"Qwen3ForCausalLM\"]");
    arch = a[0].get<std::string>();
  }
  std::string model_type = r.string("model_type", "");
  if (arch.empty() && model_type.empty())
    r.bad("architectures", "[\"Qwen3ForCausalLM\"], [\"Qwen2ForCausalLM\"], [\"LlamaForCausalLM\"] or "
                           "[\"Qwen3VLForConditionalGeneration\"] (or a model_type)");
  for (const ArchInfo& a : kArchs) {
    bool arch_match = arch == a.architecture, type_match = model_type == a.model_type;
    if (arch.empty() ? type_match : arch_match) {
      if (!model_type.empty() && !type_match)
        r.bad("model_type", cat("\"", a.model_type, "\" for architecture ", a.architecture));
      return a;
    }
  }
  if (!arch.empty())
    fail("[config] ", r.source(), ": field \"architectures\": unsupported architecture \"", arch,
         "\" (expected Qwen3ForCausalLM, Qwen2ForCausalLM, LlamaForCausalLM or Qwen3VLForConditionalGeneration)");
  fail("[config] ", r.source(), ": field \"model_type\": unsupported model type \"", model_type,
       "\" (expected qwen3, qwen2, llama or qwen3_vl)");
}

// Qwen3-VL's interleaved M-RoPE keys of the rope field: mrope_section [t, h, w] (default [24, 20, 20], as
// transformers) and mrope_interleaved (transformers always interleaves Qwen3-VL's sections; false is refused).
void read_mrope(const FieldReader& sr, ModelConfig& c) {
  c.mrope_section = {24, 20, 20};
  if (sr.has("mrope_section")) {
    const nlohmann::json& m = sr.at("mrope_section");
    if (!m.is_array() || m.size() != 3) sr.bad("mrope_section", "a list of 3 non-negative integers [t, h, w]");
    for (size_t i = 0; i < 3; ++i) {
      if (!m[i].is_number_integer() || m[i].get<int64_t>() < 0 || m[i].get<int64_t>() > c.head_dim / 2)
        sr.bad("mrope_section", cat("a list of 3 integers in [0, head_dim / 2 = ", c.head_dim / 2, "]"));
      c.mrope_section[i] = m[i].get<int64_t>();
    }
  }
  if (!sr.boolean("mrope_interleaved", true))
    sr.bad("mrope_interleaved", "true (Qwen3-VL interleaves the M-RoPE sections; the contiguous layout of "
                                "Qwen2-VL is not supported)");
}

// rope_scaling (transformers v4) or rope_parameters (v5, which also holds rope_theta).
void read_rope(const FieldReader& r, ModelConfig& c, bool mrope) {
  const bool v5 = r.has("rope_parameters");
  const char* field = v5 ? "rope_parameters" : "rope_scaling";
  const std::string path = r.prefix() + field;
  c.rope_theta = r.positive_number("rope_theta", mrope ? 5000000.0 : 10000.0);
  if (!r.has(field)) {
    if (mrope) c.mrope_section = {24, 20, 20};
    return;
  }
  const nlohmann::json& s = r.at(field);
  if (!s.is_object()) r.bad(field, "null or an object {rope_type, factor, ...}");
  FieldReader sr(s, r.source(), path + ".");
  for (const auto& [key, _] : s.items()) {
    const bool known = key == "rope_type" || key == "type" || key == "factor" ||
                       key == "original_max_position_embeddings" || key == "beta_fast" || key == "beta_slow" ||
                       key == "attention_factor" || key == "rope_theta" ||
                       (mrope && (key == "mrope_section" || key == "mrope_interleaved"));
    if (!known)
      fail("[config] ", r.source(), ": field \"", path, ".", key,
           "\": not supported (expected rope_type, factor, original_max_position_embeddings, beta_fast, "
           "beta_slow, attention_factor, rope_theta", mrope ? ", mrope_section, mrope_interleaved" : "", ")");
  }
  if (s.contains("rope_theta")) c.rope_theta = sr.positive_number("rope_theta", c.rope_theta);
  std::string type = sr.string("rope_type", sr.string("type", "default"));
  if (mrope) {
    if (type != "default")
      fail("[config] ", r.source(), ": field \"", path, ".rope_type\": unsupported rope type \"", type,
           "\" with M-RoPE (expected default)");
    read_mrope(sr, c);
  }
  if (type != "default" && type != "linear" && type != "yarn")
    fail("[config] ", r.source(), ": field \"", path, ".rope_type\": unsupported rope type \"", type,
         "\" (expected default, linear or yarn)");
  c.rope_scaling.type = type;
  if (type == "default") return;
  if (!sr.has("factor")) sr.bad("factor", "a positive number");
  c.rope_scaling.factor = sr.positive_number("factor", 1.0);
  c.rope_scaling.original_max_position_embeddings = sr.positive_int_or("original_max_position_embeddings", 0);
  c.rope_scaling.beta_fast = sr.positive_number("beta_fast", 32);
  c.rope_scaling.beta_slow = sr.positive_number("beta_slow", 1);
  c.rope_scaling.attention_factor = sr.positive_number("attention_factor", 0);
}

void read_special_tokens(const FieldReader& r, ModelConfig& c) {
  if (r.has("eos_token_id")) {
    const nlohmann::json& e = r.at("eos_token_id");
    if (e.is_array()) {
      for (const nlohmann::json& v : e) c.eos_token_ids.push_back(r.token_id(v, "eos_token_id"));
    } else {
      c.eos_token_ids.push_back(r.token_id(e, "eos_token_id"));
    }
  }
  if (r.has("bos_token_id")) c.bos_token_id = r.token_id(r.at("bos_token_id"), "bos_token_id");
  for (int64_t id : c.eos_token_ids)
    if (id >= c.vocab_size) r.bad("eos_token_id", cat("token ids below vocab_size ", c.vocab_size));
  if (c.bos_token_id >= c.vocab_size) r.bad("bos_token_id", cat("a token id below vocab_size ", c.vocab_size));
}

// Fields whose non-default values this engine does not implement.
void reject_unsupported(const FieldReader& r, const ModelConfig& c) {
  if (r.string("hidden_act", "silu") != "silu") r.bad("hidden_act", "\"silu\"");
  if (c.model_type != "qwen2" && r.boolean("attention_bias", false))
    r.bad("attention_bias", "false (q/k/v/o projection biases are not supported for this architecture)");
  if (r.boolean("mlp_bias", false)) r.bad("mlp_bias", "false (MLP biases are not supported)");
  if (r.boolean("use_sliding_window", false)) r.bad("use_sliding_window", "false (sliding-window attention is not supported)");
  if (r.has("layer_types")) {
    const nlohmann::json& lt = r.at("layer_types");
    if (!lt.is_array()) r.bad("layer_types", "a list of \"full_attention\"");
    for (const nlohmann::json& v : lt)
      if (v != "full_attention") r.bad("layer_types", "only \"full_attention\" layers");
  }
}

}  // namespace

namespace config_detail {

void read_dtype(const FieldReader& r, ModelConfig& c) {
  const char* field = r.has("dtype") ? "dtype" : "torch_dtype";
  std::string d = r.string(field, "float32");
  if (d == "float32" || d == "float16") c.dtype = DType::F32;
  else if (d == "bfloat16") c.dtype = DType::BF16;
  else r.bad(field, "\"float32\", \"bfloat16\" or \"float16\"");
}

void read_text_fields(const FieldReader& r, ModelConfig& c, int64_t default_max_positions, bool mrope) {
  const bool qwen3_like = c.model_type == "qwen3" || c.model_type == "qwen3_vl";
  c.vocab_size = r.positive_int("vocab_size");
  c.hidden_size = r.positive_int("hidden_size", int64_t{1} << 20);
  c.intermediate_size = r.positive_int("intermediate_size", int64_t{1} << 22);
  c.num_hidden_layers = r.positive_int("num_hidden_layers", int64_t{1} << 12);
  c.num_attention_heads = r.positive_int("num_attention_heads", int64_t{1} << 12);
  c.num_key_value_heads = r.positive_int_or("num_key_value_heads", c.num_attention_heads, int64_t{1} << 12);
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    r.bad("num_key_value_heads", cat("a divisor of num_attention_heads ", c.num_attention_heads));
  if (r.has("head_dim")) {
    c.head_dim = r.positive_int("head_dim", int64_t{1} << 14);
  } else if (qwen3_like) {
    c.head_dim = 128;  // Qwen3Config's (and Qwen3VLTextConfig's) default: never derived from hidden_size
  } else {
    if (c.hidden_size % c.num_attention_heads != 0)
      r.bad("hidden_size", cat("a multiple of num_attention_heads ", c.num_attention_heads,
                               " (head_dim is derived as hidden_size / num_attention_heads)"));
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  if (c.head_dim % 2 != 0) r.bad("head_dim", cat("an even number (RoPE rotates halves), derived ", c.head_dim));
  c.max_position_embeddings = r.positive_int_or("max_position_embeddings", default_max_positions);
  c.rms_norm_eps = r.positive_number("rms_norm_eps", 1e-6);
  c.initializer_range = r.positive_number("initializer_range", 0.02);
  c.tie_word_embeddings = r.boolean("tie_word_embeddings", false);
  c.qkv_bias = c.model_type == "qwen2";
  c.qk_norm = qwen3_like;
  read_rope(r, c, mrope);
  read_dtype(r, c);
  read_special_tokens(r, c);
  reject_unsupported(r, c);
}

void write_dtype(nlohmann::json& j, const ModelConfig& c) {
  // Keep the file's spelling (v5 "dtype", v4 "torch_dtype", or both) and a float16 that computes as f32.
  auto write = [&](const char* key) {
    const bool was_f16 = j.contains(key) && j[key] == "float16";
    j[key] = c.dtype == DType::BF16 ? "bfloat16" : (was_f16 ? "float16" : "float32");
  };
  const bool has_v5 = j.contains("dtype"), has_v4 = j.contains("torch_dtype");
  if (has_v5) write("dtype");
  if (has_v4 || !has_v5) write("torch_dtype");
}

void write_text_fields(nlohmann::json& j, const ModelConfig& c) {
  const bool qwen3_like = c.model_type == "qwen3" || c.model_type == "qwen3_vl";
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_key_value_heads"] = c.num_key_value_heads;
  if (qwen3_like || j.contains("head_dim") || c.head_dim * c.num_attention_heads != c.hidden_size)
    j["head_dim"] = c.head_dim;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["initializer_range"] = c.initializer_range;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["hidden_act"] = "silu";
  if (c.model_type != "qwen2") j["attention_bias"] = false;
  write_dtype(j, c);

  nlohmann::json scaling = nullptr;
  if (c.has_vision()) {
    scaling = {{"mrope_interleaved", true},
               {"mrope_section", {c.mrope_section[0], c.mrope_section[1], c.mrope_section[2]}},
               {"rope_type", "default"}};
  } else if (c.rope_scaling.type != "default") {
    const RopeScaling& s = c.rope_scaling;
    scaling = {{"rope_type", s.type}, {"factor", s.factor}};
    if (s.type == "yarn") {
      if (s.original_max_position_embeddings > 0)
        scaling["original_max_position_embeddings"] = s.original_max_position_embeddings;
      scaling["beta_fast"] = s.beta_fast;
      scaling["beta_slow"] = s.beta_slow;
      if (s.attention_factor > 0) scaling["attention_factor"] = s.attention_factor;
    }
  }
  if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) {
    nlohmann::json p = scaling.is_null() ? nlohmann::json{{"rope_type", "default"}} : scaling;
    p["rope_theta"] = c.rope_theta;
    j["rope_parameters"] = p;
    j.erase("rope_theta");
    j.erase("rope_scaling");
  } else {
    j["rope_theta"] = c.rope_theta;
    j["rope_scaling"] = scaling;
  }

  if (c.eos_token_ids.size() == 1) j["eos_token_id"] = c.eos_token_ids[0];
  else if (c.eos_token_ids.empty()) j["eos_token_id"] = nullptr;
  else j["eos_token_id"] = c.eos_token_ids;
  j["bos_token_id"] = c.bos_token_id >= 0 ? nlohmann::json(c.bos_token_id) : nlohmann::json(nullptr);
}

}  // namespace config_detail

ModelConfig parse_model_config(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) fail("[config] ", source, ": expected a JSON object, got ", j.type_name());
  FieldReader r(j, source);
  const ArchInfo& arch = read_architecture(r);
  if (std::string(arch.model_type) == "qwen3_vl") return config_detail::parse_vl_config(j, source);
  ModelConfig c;
  c.architecture = arch.architecture;
  c.model_type = arch.model_type;
  config_detail::read_text_fields(r, c, arch.default_max_positions, /*mrope=*/false);
  c.raw = j;
  return c;
}

ModelConfig load_model_config(const std::string& path) {
  std::string text = read_file(path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail("[config] ", path, ": not valid JSON: ", e.what());
  }
  return parse_model_config(j, path);
}

nlohmann::json model_config_to_json(const ModelConfig& c) {
  if (c.has_vision()) return config_detail::vl_config_to_json(c);
  nlohmann::json j = c.raw.is_object() ? c.raw : nlohmann::json::object();
  j["architectures"] = {c.architecture};
  j["model_type"] = c.model_type;
  config_detail::write_text_fields(j, c);
  return j;
}

std::vector<TensorSpec> expected_tensors(const ModelConfig& c) {
  const int64_t C = c.hidden_size, H = c.num_attention_heads, K = c.num_key_value_heads, D = c.head_dim,
                F = c.intermediate_size, V = c.vocab_size;
  const std::string model = c.text_prefix();
  std::vector<TensorSpec> t;
  t.push_back({model + "embed_tokens.weight", {V, C}});
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = cat(model, "layers.", i, ".");
    t.push_back({p + "self_attn.q_proj.weight", {H * D, C}});
    if (c.qkv_bias) t.push_back({p + "self_attn.q_proj.bias", {H * D}});
    t.push_back({p + "self_attn.k_proj.weight", {K * D, C}});
    if (c.qkv_bias) t.push_back({p + "self_attn.k_proj.bias", {K * D}});
    t.push_back({p + "self_attn.v_proj.weight", {K * D, C}});
    if (c.qkv_bias) t.push_back({p + "self_attn.v_proj.bias", {K * D}});
    t.push_back({p + "self_attn.o_proj.weight", {C, H * D}});
    if (c.qk_norm) {
      t.push_back({p + "self_attn.q_norm.weight", {D}});
      t.push_back({p + "self_attn.k_norm.weight", {D}});
    }
    t.push_back({p + "mlp.gate_proj.weight", {F, C}});
    t.push_back({p + "mlp.up_proj.weight", {F, C}});
    t.push_back({p + "mlp.down_proj.weight", {C, F}});
    t.push_back({p + "input_layernorm.weight", {C}});
    t.push_back({p + "post_attention_layernorm.weight", {C}});
  }
  t.push_back({model + "norm.weight", {C}});
  if (!c.tie_word_embeddings) t.push_back({"lm_head.weight", {V, C}});
  for (TensorSpec& v : vision_tensors(c)) t.push_back(std::move(v));
  return t;
}

int64_t parameter_count(const ModelConfig& c) {
  int64_t n = 0;
  for (const TensorSpec& t : expected_tensors(c)) {
    int64_t m = 1;
    for (int64_t d : t.shape) m *= d;
    n += m;
  }
  return n;
}

}  // namespace grpo
