// Parameter layout, loading from checkpoints and the bf16 shadow (see weights.h).
#include "model/weights.h"

#include "core/profiler.h"
#include "kernels/ops.h"

namespace grpo {

namespace {
std::string layer_prefix(int64_t i) { return "model.layers." + std::to_string(i) + "."; }
}  // namespace

void declare_parameters(const ModelConfig& c, Arena& a) {
  const int64_t C = c.hidden_size, H = c.num_attention_heads, K = c.num_key_value_heads, D = c.head_dim,
                F = c.intermediate_size, V = c.vocab_size;
  a.add("model.embed_tokens.weight", Shape{V, C});
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    std::string p = layer_prefix(i);
    a.add(p + "input_layernorm.weight", Shape{C});
    a.add(p + "self_attn.q_proj.weight", Shape{H * D, C});
    a.add(p + "self_attn.k_proj.weight", Shape{K * D, C}, /*pack=*/true);
    a.add(p + "self_attn.v_proj.weight", Shape{K * D, C}, /*pack=*/true);
    if (c.qkv_bias) {
      a.add(p + "self_attn.q_proj.bias", Shape{H * D});
      a.add(p + "self_attn.k_proj.bias", Shape{K * D}, true);
      a.add(p + "self_attn.v_proj.bias", Shape{K * D}, true);
    }
    if (c.qk_norm) {
      a.add(p + "self_attn.q_norm.weight", Shape{D});
      a.add(p + "self_attn.k_norm.weight", Shape{D});
    }
    a.add(p + "self_attn.o_proj.weight", Shape{C, H * D});
    a.add(p + "post_attention_layernorm.weight", Shape{C});
    a.add(p + "mlp.gate_proj.weight", Shape{F, C});
    a.add(p + "mlp.up_proj.weight", Shape{F, C}, true);
    a.add(p + "mlp.down_proj.weight", Shape{C, F});
  }
  a.add("model.norm.weight", Shape{C});
  if (!c.tie_word_embeddings) a.add("lm_head.weight", Shape{V, C});
}

bool is_gemm_weight(const std::string& name) {
  for (const char* suffix : {"q_proj.weight", "k_proj.weight", "v_proj.weight", "o_proj.weight", "gate_proj.weight",
                             "up_proj.weight", "down_proj.weight"})
    if (name.ends_with(suffix)) return true;
  return name == "lm_head.weight";
}

std::string first_layer_tensor(int64_t layer) { return layer_prefix(layer) + "input_layernorm.weight"; }

ModelTensors resolve_tensors(const ModelConfig& c, const Arena& a) {
  ModelTensors m;
  auto v = [&](const std::string& n) { return a.view(n).data; };
  m.embed = v("model.embed_tokens.weight");
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    std::string p = layer_prefix(i);
    LayerTensors l{};
    l.attn_norm = v(p + "input_layernorm.weight");
    l.wqkv = v(p + "self_attn.q_proj.weight");
    l.bqkv = c.qkv_bias ? v(p + "self_attn.q_proj.bias") : nullptr;
    l.q_norm = c.qk_norm ? v(p + "self_attn.q_norm.weight") : nullptr;
    l.k_norm = c.qk_norm ? v(p + "self_attn.k_norm.weight") : nullptr;
    l.wo = v(p + "self_attn.o_proj.weight");
    l.mlp_norm = v(p + "post_attention_layernorm.weight");
    l.wgu = v(p + "mlp.gate_proj.weight");
    l.wdown = v(p + "mlp.down_proj.weight");
    m.layers.push_back(l);
  }
  m.final_norm = v("model.norm.weight");
  m.lm_head = c.tie_word_embeddings ? m.embed : v("lm_head.weight");
  return m;
}

ModelWeights::ModelWeights(const ModelConfig& c) : config_(c), params_(DType::F32) {
  declare_parameters(config_, params_);
  params_.allocate();
  f32_ = resolve_tensors(config_, params_);
}

std::unique_ptr<ModelWeights> ModelWeights::load(const std::string& dir) {
  Checkpoint ck = Checkpoint::open(dir);
  auto w = std::make_unique<ModelWeights>(ck.config());
  w->load_from(ck);
  return w;
}

void ModelWeights::load_from(const Checkpoint& ck) {
  GRPO_PROFILE("load_weights");
  for (const auto& [name, view] : params_.entries()) {
    const StTensor* t = ck.find(name);
    GRPO_CHECK(t, "[checkpoint] ", ck.dir(), ": missing tensor \"", name, "\"");
    tensor_to_f32(*t, view.f32(), view.numel(), ck.dir());
  }
  if (bf16_arena_) refresh_bf16();
}

std::vector<NamedF32> ModelWeights::named_tensors() const {
  std::vector<NamedF32> out;
  for (const auto& [name, view] : params_.entries()) {
    std::vector<int64_t> shape(view.shape.dims.begin(), view.shape.dims.begin() + view.shape.ndim);
    out.push_back({name, shape, view.f32()});
  }
  return out;
}

const ModelTensors& ModelWeights::bf16() {
  if (!bf16_arena_) {
    bf16_arena_ = std::make_unique<Arena>(DType::BF16);
    declare_parameters(config_, *bf16_arena_);
    bf16_arena_->allocate();
    bf16_ = resolve_tensors(config_, *bf16_arena_);
    refresh_bf16();
  }
  return bf16_;
}

void ModelWeights::refresh_bf16() {
  GRPO_PROFILE("refresh_bf16");
  if (!bf16_arena_) return;
  const auto& dst = bf16_arena_->entries();
  const auto& src = params_.entries();
  for (size_t i = 0; i < src.size(); ++i)
    ops::f32_to_bf16(dst[i].second.as<bf16_t>(), src[i].second.f32(), src[i].second.numel());
}

}  // namespace grpo
