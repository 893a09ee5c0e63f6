// Model configuration: Hugging Face config.json of Qwen3 / Qwen2 / LLaMA decoders and of Qwen3-VL
// (text_config + vision_config), fully validated (every error names the file, the field and what was
// expected), written back HF-compatibly, and the list of parameter tensors (HF names and shapes) such a
// model has.
#pragma once
#include <array>
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

// The vision tower of Qwen3-VL (vision_config). depth == 0: a text-only model.
struct VisionConfig {
  int64_t depth = 0, hidden_size = 0, intermediate_size = 0, num_heads = 0, in_channels = 0, patch_size = 0,
          temporal_patch_size = 0, spatial_merge_size = 0, out_hidden_size = 0, num_position_embeddings = 0;
  std::vector<int64_t> deepstack_visual_indexes;  // vision blocks whose output feeds DeepStack merger k
  double initializer_range = 0.02;
  double layer_norm_eps = 1e-6;  // fixed in transformers (nn.LayerNorm(..., eps=1e-6)), not a config field

  int64_t head_dim() const { return hidden_size / num_heads; }
  int64_t patch_dim() const { return in_channels * temporal_patch_size * patch_size * patch_size; }  // 1536
  int64_t merge_factor() const { return spatial_merge_size * spatial_merge_size; }                   // 4
  int64_t merged_dim() const { return hidden_size * merge_factor(); }                                // 4608
  int64_t grid_side() const;  // sqrt(num_position_embeddings): the learned table is grid_side^2 rows
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
  // Qwen3-VL (Qwen3VLForConditionalGeneration): the fields above are text_config's.
  VisionConfig vision;
  std::array<int64_t, 3> mrope_section{};  // interleaved M-RoPE (temporal, height, width) frequency counts
  int64_t image_token_id = -1, video_token_id = -1, vision_start_token_id = -1, vision_end_token_id = -1;
  nlohmann::json raw;         // the parsed file, kept for round-trip

  bool has_vision() const { return vision.depth > 0; }
  // Prefix of the text decoder's tensor names: "model." (causal LMs) or "model.language_model." (Qwen3-VL).
  std::string text_prefix() const { return has_vision() ? "model.language_model." : "model."; }
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
// norm; lm_head only if untied; then the vision tower's, see vision_tensors).
std::vector<TensorSpec> expected_tensors(const ModelConfig& c);
// The vision tower's tensors (model.visual.*) of a Qwen3-VL config, empty for a text model.
std::vector<TensorSpec> vision_tensors(const ModelConfig& c);
int64_t parameter_count(const ModelConfig& c);  // sum of expected_tensors numel

}  // namespace grpo
