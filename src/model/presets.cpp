// Preset model configurations (see presets.h), built as config.json objects and parsed, so that a preset
// is validated exactly like a file and its `raw` JSON round-trips.
#include "model/presets.h"

#include "core/error.h"
#include "core/files.h"

namespace grpo {

namespace {

struct PresetShape {
  int64_t vocab, hidden, ffn, layers, heads, kv, head_dim, max_positions;
  const char* dtype;
  int64_t bos, eos_im_end, eos_endoftext;
  bool tied = true;  // tie_word_embeddings
};

// Byte-tokenizer special ids: 256 <|endoftext|>, 257 <|im_start|>, 258 <|im_end|>.
constexpr PresetShape kTiny{384, 128, 384, 4, 4, 2, 32, 4096, "float32", 256, 258, 256};
constexpr PresetShape kSmall{384, 512, 1536, 8, 8, 4, 64, 4096, "float32", 256, 258, 256};
constexpr PresetShape kQwen3_06B{151936, 1024, 3072, 28, 16, 8, 128, 40960, "bfloat16", 151643, 151645, 151643};
// The real Qwen3-1.7B and Qwen3-4B shapes (tied embeddings, rope_theta 1e6, 40960 positions).
constexpr PresetShape kQwen3_17B{151936, 2048, 6144, 28, 16, 8, 128, 40960, "bfloat16", 151643, 151645, 151643};
constexpr PresetShape kQwen3_4B{151936, 2560, 9728, 36, 32, 8, 128, 40960, "bfloat16", 151643, 151645, 151643};
// Qwen3-VL-2B's text decoder (tied embeddings, rope_theta 5e6, 262144 positions).
constexpr PresetShape kQwen3VL_2B{151936, 2048, 6144, 28, 16, 8, 128, 262144, "bfloat16", 151643, 151645, 151643};
// Qwen3-VL-8B's text decoder (Qwen/Qwen3-VL-8B-Instruct config.json: untied lm_head, 36 layers).
constexpr PresetShape kQwen3VL_8B{151936, 4096, 12288, 36, 32, 8, 128, 262144, "bfloat16", 151643, 151645, 151643, false};

struct VisionShape {
  int64_t depth, hidden, ffn, heads, positions;
  std::vector<int64_t> deepstack;
};
// Vision special ids: the byte tokenizer's with vision (261..264) for tiny/small, Qwen's for the 2B shape.
struct VisionIds {
  int64_t start, end, image, video;
};
constexpr VisionIds kByteVisionIds{261, 262, 263, 264};
constexpr VisionIds kQwenVisionIds{151652, 151653, 151655, 151656};

nlohmann::json text_json(const PresetShape& s, const std::string& arch) {
  nlohmann::json j = {
      {"vocab_size", s.vocab},
      {"hidden_size", s.hidden},
      {"intermediate_size", s.ffn},
      {"num_hidden_layers", s.layers},
      {"num_attention_heads", s.heads},
      {"num_key_value_heads", s.kv},
      {"max_position_embeddings", s.max_positions},
      {"rms_norm_eps", 1e-6},
      {"rope_theta", 1e6},
      {"rope_scaling", nullptr},
      {"tie_word_embeddings", s.tied},
      {"hidden_act", "silu"},
      {"initializer_range", 0.02},
      {"torch_dtype", s.dtype},
      {"bos_token_id", s.bos},
      {"eos_token_id", {s.eos_im_end, s.eos_endoftext}},
  };
  // Qwen3 states head_dim; Qwen2 and LLaMA derive it as hidden / heads (64 for the 0.6b shape).
  if (arch == "qwen3" || arch == "qwen3-vl") j["head_dim"] = s.head_dim;
  if (arch != "qwen2") j["attention_bias"] = false;
  if (arch != "llama") j["use_sliding_window"] = false;
  return j;
}

// Qwen3-VL: the text decoder with interleaved M-RoPE in text_config, the tower in vision_config.
nlohmann::json vl_json(const PresetShape& s, const VisionShape& v, const VisionIds& ids) {
  nlohmann::json text = text_json(s, "qwen3-vl");
  text["model_type"] = "qwen3_vl_text";
  text["rope_theta"] = 5e6;
  text["rope_scaling"] = {{"mrope_interleaved", true}, {"mrope_section", {24, 20, 20}}, {"rope_type", "default"}};
  if (s.head_dim != 128) {  // sections over head_dim / 2 frequencies in Qwen3-VL's proportions (24:20:20)
    const int64_t half = s.head_dim / 2, hw = half * 20 / 64;
    text["rope_scaling"]["mrope_section"] = {half - 2 * hw, hw, hw};
  }
  nlohmann::json vision = {
      {"model_type", "qwen3_vl"},       {"depth", v.depth},
      {"hidden_size", v.hidden},        {"intermediate_size", v.ffn},
      {"num_heads", v.heads},           {"in_channels", 3},
      {"patch_size", 16},               {"temporal_patch_size", 2},
      {"spatial_merge_size", 2},        {"out_hidden_size", s.hidden},
      {"num_position_embeddings", v.positions}, {"deepstack_visual_indexes", v.deepstack},
      {"hidden_act", "gelu_pytorch_tanh"}, {"initializer_range", 0.02},
  };
  return {{"architectures", {"Qwen3VLForConditionalGeneration"}},
          {"model_type", "qwen3_vl"},
          {"image_token_id", ids.image},
          {"video_token_id", ids.video},
          {"vision_start_token_id", ids.start},
          {"vision_end_token_id", ids.end},
          {"tie_word_embeddings", s.tied},
          {"torch_dtype", s.dtype},
          {"text_config", text},
          {"vision_config", vision}};
}

}  // namespace

const std::vector<std::string>& preset_archs() {
  static const std::vector<std::string> archs{"qwen3", "qwen2", "llama", "qwen3-vl"};
  return archs;
}

const std::vector<std::string>& preset_names() {
  static const std::vector<std::string> names{"tiny",     "small",       "qwen3-0.6b", "qwen3-1.7b",
                                              "qwen3-4b", "qwen3-vl-2b", "qwen3-vl-8b"};
  return names;
}

bool preset_exists(const std::string& arch, const std::string& preset) {
  if (preset == "qwen3-0.6b") return arch == "qwen3" || arch == "qwen2" || arch == "llama";
  if (preset == "qwen3-1.7b" || preset == "qwen3-4b") return arch == "qwen3";
  if (preset == "qwen3-vl-2b" || preset == "qwen3-vl-8b") return arch == "qwen3-vl";
  return preset == "tiny" || preset == "small";
}

ModelConfig preset_config(const std::string& arch, const std::string& preset) {
  bool known_arch = false;
  for (const std::string& a : preset_archs()) known_arch = known_arch || a == arch;
  if (!known_arch) fail("[presets] unknown architecture \"", arch, "\" (expected qwen3, qwen2, llama or qwen3-vl)");
  bool known_preset = false;
  for (const std::string& p : preset_names()) known_preset = known_preset || p == preset;
  if (!known_preset)
    fail("[presets] unknown preset \"", preset,
         "\" (expected tiny, small, qwen3-0.6b, qwen3-1.7b, qwen3-4b, qwen3-vl-2b or qwen3-vl-8b)");
  if (!preset_exists(arch, preset))
    fail("[presets] preset \"", preset, "\" is not a shape of ", arch, " (",
         arch == "qwen3-vl" ? "tiny, small, qwen3-vl-2b or qwen3-vl-8b"
         : arch == "qwen3"  ? "tiny, small, qwen3-0.6b, qwen3-1.7b or qwen3-4b"
                            : "tiny, small or qwen3-0.6b",
         ")");
  const std::string source = cat("preset ", arch, "/", preset);
  if (arch == "qwen3-vl") {
    if (preset == "tiny") return parse_model_config(vl_json(kTiny, {2, 64, 256, 2, 576, {0}}, kByteVisionIds), source);
    if (preset == "small") return parse_model_config(vl_json(kSmall, {4, 256, 1024, 4, 2304, {1, 2}}, kByteVisionIds), source);
    if (preset == "qwen3-vl-8b")
      return parse_model_config(vl_json(kQwen3VL_8B, {27, 1152, 4304, 16, 2304, {8, 16, 24}}, kQwenVisionIds), source);
    return parse_model_config(vl_json(kQwen3VL_2B, {24, 1024, 4096, 16, 2304, {5, 11, 17}}, kQwenVisionIds), source);
  }
  const PresetShape* s = preset == "tiny"         ? &kTiny
                         : preset == "small"      ? &kSmall
                         : preset == "qwen3-1.7b" ? &kQwen3_17B
                         : preset == "qwen3-4b"   ? &kQwen3_4B
                                                  : &kQwen3_06B;
  const char* architecture = arch == "qwen3" ? "Qwen3ForCausalLM" : arch == "qwen2" ? "Qwen2ForCausalLM" : "LlamaForCausalLM";
  nlohmann::json j = text_json(*s, arch);
  j["architectures"] = {architecture};
  j["model_type"] = arch;
  return parse_model_config(j, source);
}

void write_preprocessor_config(const std::string& path, const ModelConfig& c) {
  const VisionConfig& v = c.vision;
  const int64_t factor = v.patch_size * v.spatial_merge_size;
  const bool real = c.vocab_size > 100000;
  const nlohmann::json j = {
      {"size", {{"longest_edge", real ? 16777216 : 256 * 256 * 4}, {"shortest_edge", real ? 65536 : factor * factor * 4}}},
      {"patch_size", v.patch_size},
      {"temporal_patch_size", v.temporal_patch_size},
      {"merge_size", v.spatial_merge_size},
      {"image_mean", {0.5, 0.5, 0.5}},
      {"image_std", {0.5, 0.5, 0.5}},
      {"processor_class", "Qwen3VLProcessor"},
      {"image_processor_type", "Qwen2VLImageProcessorFast"}};
  write_file_atomic(path, j.dump(2) + "\n");
}

}  // namespace grpo
