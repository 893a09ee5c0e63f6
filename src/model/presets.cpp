// Preset model configurations (see presets.h), built as config.json objects and parsed, so that a preset
// is validated exactly like a file and its `raw` JSON round-trips.
#include "model/presets.h"

#include "core/error.h"

namespace grpo {

namespace {

struct Shape {
  int64_t vocab, hidden, ffn, layers, heads, kv, head_dim, max_positions;
  const char* dtype;
  int64_t bos, eos_im_end, eos_endoftext;
};

// Byte-tokenizer special ids: 256 <|endoftext|>, 257 <|im_start|>, 258 <|im_end|>.
constexpr Shape kTiny{384, 128, 384, 4, 4, 2, 32, 4096, "float32", 256, 258, 256};
constexpr Shape kSmall{384, 512, 1536, 8, 8, 4, 64, 4096, "float32", 256, 258, 256};
constexpr Shape kQwen3_06B{151936, 1024, 3072, 28, 16, 8, 128, 40960, "bfloat16", 151643, 151645, 151643};

}  // namespace

const std::vector<std::string>& preset_archs() {
  static const std::vector<std::string> archs{"qwen3", "qwen2", "llama"};
  return archs;
}

const std::vector<std::string>& preset_names() {
  static const std::vector<std::string> names{"tiny", "small", "qwen3-0.6b"};
  return names;
}

ModelConfig preset_config(const std::string& arch, const std::string& preset) {
  const Shape* s = preset == "tiny" ? &kTiny : preset == "small" ? &kSmall : preset == "qwen3-0.6b" ? &kQwen3_06B : nullptr;
  if (!s) fail("[presets] unknown preset \"", preset, "\" (expected tiny, small or qwen3-0.6b)");
  const char* architecture = arch == "qwen3" ? "Qwen3ForCausalLM"
                             : arch == "qwen2" ? "Qwen2ForCausalLM"
                             : arch == "llama" ? "LlamaForCausalLM"
                                               : nullptr;
  if (!architecture) fail("[presets] unknown architecture \"", arch, "\" (expected qwen3, qwen2 or llama)");
  nlohmann::json j = {
      {"architectures", {architecture}},
      {"model_type", arch},
      {"vocab_size", s->vocab},
      {"hidden_size", s->hidden},
      {"intermediate_size", s->ffn},
      {"num_hidden_layers", s->layers},
      {"num_attention_heads", s->heads},
      {"num_key_value_heads", s->kv},
      {"max_position_embeddings", s->max_positions},
      {"rms_norm_eps", 1e-6},
      {"rope_theta", 1e6},
      {"rope_scaling", nullptr},
      {"tie_word_embeddings", true},
      {"hidden_act", "silu"},
      {"initializer_range", 0.02},
      {"torch_dtype", s->dtype},
      {"bos_token_id", s->bos},
      {"eos_token_id", {s->eos_im_end, s->eos_endoftext}},
  };
  // Qwen3 states head_dim; Qwen2 and LLaMA derive it as hidden / heads (64 for the 0.6b shape).
  if (arch == "qwen3") j["head_dim"] = s->head_dim;
  if (arch != "qwen2") j["attention_bias"] = false;
  if (arch != "llama") j["use_sliding_window"] = false;
  return parse_model_config(j, cat("preset ", arch, "/", preset));
}

}  // namespace grpo
