// Model configuration: Hugging Face config.json of Qwen3 / Qwen2 / LLaMA decoders, fully validated
// (every error names the file, the field and what was expected), written back HF-compatibly, and the
// list of parameter tensors (HF names and shapes) such a model has.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace grpo {

struct RopeScaling {
  std::string type = "default";  // "default" | "linear" | "yarn"
  double factor = 1.0;
  int64_t original_max_position_embeddings = 0;  // 0: max_position_embeddings
  double beta_fast = 32, beta_slow = 1;
  double attention_factor = 0;  // 0: derived (0.1 ln(factor) + 1 for yarn)
};

struct ModelConfig {
  std::string architecture, model_type;  // "Qwen3ForCausalLM", "qwen3"
  int64_t vocab_size = 0, hidden_size = 0, intermediate_size = 0, num_hidden_layers = 0,
          num_attention_heads = 0, num_key_value_heads = 0, head_dim = 0, max_position_embeddings = 0;
  double rms_norm_eps = 1e-6, rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool qkv_bias = false;  // Qwen2: q/k/v projections have biases
  bool qk_norm = false;   // Qwen3: per-head RMSNorm of q and k
  DType dtype = DType::F32;  // torch_dtype / dtype: float32 or bfloat16 (float16 -> F32 compute)
  double initializer_range = 0.02;
  std::vector<int64_t> eos_token_ids;
  int64_t bos_token_id = -1;  // -1: none
  nlohmann::json raw;         // the parsed file, kept for round-trip
};

// Validates and reads a config.json object; `source` (the file name) prefixes every error.
ModelConfig parse_model_config(const nlohmann::json& j, const std::string& source);
ModelConfig load_model_config(const std::string& path);
// HF-compatible config.json content: `raw` with every field of `c` written over it.
nlohmann::json model_config_to_json(const ModelConfig& c);

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
};
// Parameter tensors in HF order (embed, per layer: attention, norms of q/k, mlp, layer norms; final
// norm; lm_head only if untied).
std::vector<TensorSpec> expected_tensors(const ModelConfig& c);
int64_t parameter_count(const ModelConfig& c);  // sum of expected_tensors numel

}  // namespace grpo
