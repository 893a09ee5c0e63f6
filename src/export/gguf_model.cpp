// Model -> GGUF (gguf_model.h): hyper-parameter keys per architecture, HF -> llama.cpp tensor names and
// types, LLaMA's RoPE row permutation, and the file's assembly with the tokenizer metadata.
#include "export/gguf_model.h"

#include <cstring>

#include "core/error.h"
#include "export/gguf_vocab.h"

namespace grpo::gguf {
namespace {

constexpr uint32_t kQuantizationVersion = 2;  // ggml's GGML_QNT_VERSION

// general.file_type: llama.cpp's llama_ftype of the file's main type.
uint32_t file_type_id(GgmlType t) {
  switch (t) {
    case GgmlType::F32:
      return 0;
    case GgmlType::F16:
      return 1;
    case GgmlType::Q8_0:
      return 7;
    case GgmlType::BF16:
      return 32;
  }
  return 0;
}

// The per-layer suffixes: HF name after "layers.N." -> llama.cpp name after "blk.N.".
struct LayerName {
  const char* hf;
  const char* gguf;
};
constexpr LayerName kLayerNames[] = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.q_proj.bias", "attn_q.bias"},
    {"self_attn.k_proj.bias", "attn_k.bias"},
    {"self_attn.v_proj.bias", "attn_v.bias"},
    {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
};

void add_hparams(Writer& w, const ModelConfig& c, GgmlType file_type, const std::string& name) {
  const std::string a = c.model_type;
  const auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
  w.add_string("general.architecture", a);
  w.add_string("general.name", name);
  w.add_u32("general.file_type", file_type_id(file_type));
  w.add_u32("general.quantization_version", kQuantizationVersion);
  w.add_u32("general.alignment", kDefaultAlignment);
  w.add_u32(a + ".context_length", u32(c.max_position_embeddings));
  w.add_u32(a + ".embedding_length", u32(c.hidden_size));
  w.add_u32(a + ".block_count", u32(c.num_hidden_layers));
  w.add_u32(a + ".feed_forward_length", u32(c.intermediate_size));
  w.add_u32(a + ".attention.head_count", u32(c.num_attention_heads));
  w.add_u32(a + ".attention.head_count_kv", u32(c.num_key_value_heads));
  w.add_u32(a + ".attention.key_length", u32(c.head_dim));
  w.add_u32(a + ".attention.value_length", u32(c.head_dim));
  w.add_f32(a + ".rope.freq_base", static_cast<float>(c.rope_theta));
  w.add_f32(a + ".attention.layer_norm_rms_epsilon", static_cast<float>(c.rms_norm_eps));
  if (c.model_type == "llama") {  // llama.cpp requires n_rot == head_dim for llama
    w.add_u32(a + ".rope.dimension_count", u32(c.head_dim));
    w.add_u32(a + ".vocab_size", u32(c.vocab_size));
  }
  if (c.rope_scaling.type == "linear") {
    w.add_string(a + ".rope.scaling.type", "linear");
    w.add_f32(a + ".rope.scaling.factor", static_cast<float>(c.rope_scaling.factor));
  }
}

}  // namespace

GgmlType parse_file_type(const std::string& name) {
  if (const std::optional<GgmlType> t = kGgmlTypeNames.find(name)) return *t;
  fail("[gguf] type \"", name, "\": expected ", kGgmlTypeNames.listing());
}

void check_exportable(const ModelConfig& c, const std::string& source) {
  GRPO_CHECK(!c.has_vision(), "[gguf] ", source, " is a Qwen3-VL model (", c.architecture,
             "): llama.cpp runs it from two files, the text decoder and a separate multimodal projector "
             "(mmproj GGUF: the vision tower and its mergers, for llama-mtmd-cli --mmproj); this export writes "
             "text decoders only (Qwen3, Qwen2, LLaMA) and no projector file");
  GRPO_CHECK(c.model_type == "qwen3" || c.model_type == "qwen2" || c.model_type == "llama", "[gguf] ", source,
             ": model_type \"", c.model_type, "\": expected qwen3, qwen2 or llama");
  GRPO_CHECK(c.rope_scaling.type == "default" || c.rope_scaling.type == "linear", "[gguf] ", source,
             ": rope_scaling type \"", c.rope_scaling.type,
             "\": the export writes default and linear RoPE only (yarn's llama.cpp keys are not written)");
  GRPO_CHECK(c.model_type != "qwen2" || c.head_dim * c.num_attention_heads == c.hidden_size, "[gguf] ", source,
             ": llama.cpp's qwen2 needs heads x head_dim == hidden_size, got ", c.num_attention_heads, " x ",
             c.head_dim, " != ", c.hidden_size);
}

std::string tensor_name(const ModelConfig& c, const std::string& hf_name) {
  const std::string p = c.text_prefix();
  if (hf_name == p + "embed_tokens.weight") return "token_embd.weight";
  if (hf_name == p + "norm.weight") return "output_norm.weight";
  if (hf_name == "lm_head.weight") return "output.weight";
  const std::string lp = p + "layers.";
  if (hf_name.starts_with(lp)) {
    const size_t dot = hf_name.find('.', lp.size());
    if (dot != std::string::npos) {
      const std::string layer = hf_name.substr(lp.size(), dot - lp.size()), rest = hf_name.substr(dot + 1);
      for (const auto& n : kLayerNames)
        if (rest == n.hf) return "blk." + layer + "." + n.gguf;
    }
  }
  fail("[gguf] tensor ", hf_name, " has no llama.cpp name for model type ", c.model_type);
}

GgmlType tensor_type(const std::string& gguf_name, const std::vector<int64_t>& shape, GgmlType file_type) {
  if (shape.size() <= 1 || gguf_name.ends_with("_norm.weight")) return GgmlType::F32;
  if (file_type == GgmlType::Q8_0 && shape.back() % kQ8BlockSize != 0) return GgmlType::F16;
  return file_type;
}

std::vector<float> permute_rope_rows(const float* w, int64_t heads, int64_t head_dim, int64_t cols) {
  GRPO_CHECK(head_dim % 2 == 0, "[gguf] RoPE head_dim ", head_dim, " is odd");
  std::vector<float> out(static_cast<size_t>(heads * head_dim * cols));  // [heads * D, C]
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t i = 0; i < half; ++i)
        std::memcpy(&out[static_cast<size_t>((h * head_dim + 2 * i + j) * cols)],
                    w + (h * head_dim + j * half + i) * cols, static_cast<size_t>(cols) * sizeof(float));
  return out;
}

ExportSummary write_gguf(const ModelWeights& weights, const std::string& tokenizer_dir, const std::string& path,
                         GgmlType file_type, const std::string& name) {
  const ModelConfig& c = weights.config();
  check_exportable(c, tokenizer_dir);
  const Vocab vocab = read_vocab(tokenizer_dir, c);
  Writer w;
  add_hparams(w, c, file_type, name);
  add_vocab(w, vocab);
  ExportSummary s;
  for (const NamedF32& t : weights.named_tensors()) {
    const std::string gname = tensor_name(c, t.name);
    const GgmlType type = tensor_type(gname, t.shape, file_type);
    s.quantized += type == GgmlType::Q8_0;
    s.f16_fallback += file_type == GgmlType::Q8_0 && type == GgmlType::F16;
    const bool rope_rows = c.model_type == "llama" && t.shape.size() == 2 &&
                           (gname.ends_with("attn_q.weight") || gname.ends_with("attn_k.weight"));
    if (rope_rows)
      w.add_tensor(gname, t.shape, type, permute_rope_rows(t.data, t.shape[0] / c.head_dim, c.head_dim, t.shape[1]));
    else
      w.add_tensor(gname, t.shape, type, t.data);
  }
  w.write(path);
  s.tensors = w.tensor_count();
  s.kv = w.kv_count();
  return s;
}

}  // namespace grpo::gguf
