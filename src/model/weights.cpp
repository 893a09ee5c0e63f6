// Parameter layout, loading from checkpoints and the bf16 shadow (see weights.h).
#include "model/weights.h"

#include <algorithm>
#include <cstring>

#include "core/profiler.h"
#include "kernels/ops.h"

namespace grpo {

namespace {

std::string layer_prefix(const ModelConfig& c, int64_t i) { return c.text_prefix() + "layers." + std::to_string(i) + "."; }

Shape shape_of(const std::vector<int64_t>& dims) {
  GRPO_CHECK(static_cast<int>(dims.size()) <= kMaxDims, "[weights] tensor of rank ", dims.size());
  Shape s;
  for (int64_t d : dims) s.dims[s.ndim++] = d;
  return s;
}

// Vision tensors in vision_tensors() order; q/k/v is already one tensor in the checkpoints.
void declare_vision(const ModelConfig& c, Arena& a) {
  for (const TensorSpec& t : vision_tensors(c)) a.add(t.name, shape_of(t.shape));
}

MergerTensors resolve_merger(const Arena& a, const std::string& p) {
  auto v = [&](const std::string& n) { return a.view(p + n).data; };
  return {v("norm.weight"), v("norm.bias"), v("linear_fc1.weight"), v("linear_fc1.bias"), v("linear_fc2.weight"),
          v("linear_fc2.bias")};
}

VisionTensors resolve_vision(const ModelConfig& c, const Arena& a) {
  VisionTensors t{};
  auto v = [&](const std::string& n) { return a.view(n).data; };
  t.patch_w = v("model.visual.patch_embed.proj.weight");
  t.patch_b = v("model.visual.patch_embed.proj.bias");
  t.pos_embed = v("model.visual.pos_embed.weight");
  for (int64_t i = 0; i < c.vision.depth; ++i) {
    const std::string p = "model.visual.blocks." + std::to_string(i) + ".";
    t.blocks.push_back({v(p + "norm1.weight"), v(p + "norm1.bias"), v(p + "attn.qkv.weight"), v(p + "attn.qkv.bias"),
                        v(p + "attn.proj.weight"), v(p + "attn.proj.bias"), v(p + "norm2.weight"),
                        v(p + "norm2.bias"), v(p + "mlp.linear_fc1.weight"), v(p + "mlp.linear_fc1.bias"),
                        v(p + "mlp.linear_fc2.weight"), v(p + "mlp.linear_fc2.bias")});
  }
  t.merger = resolve_merger(a, "model.visual.merger.");
  for (size_t k = 0; k < c.vision.deepstack_visual_indexes.size(); ++k)
    t.deepstack.push_back(resolve_merger(a, "model.visual.deepstack_merger_list." + std::to_string(k) + "."));
  return t;
}

}  // namespace

void declare_parameters(const ModelConfig& c, Arena& a, bool with_vision) {
  const int64_t C = c.hidden_size, H = c.num_attention_heads, K = c.num_key_value_heads, D = c.head_dim,
                F = c.intermediate_size, V = c.vocab_size;
  a.add(c.text_prefix() + "embed_tokens.weight", Shape{V, C});
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    std::string p = layer_prefix(c, i);
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
  a.add(c.text_prefix() + "norm.weight", Shape{C});
  if (!c.tie_word_embeddings) a.add("lm_head.weight", Shape{V, C});
  if (with_vision && c.has_vision()) declare_vision(c, a);
}

bool is_gemm_weight(const std::string& name) {
  for (const char* suffix : {"q_proj.weight", "k_proj.weight", "v_proj.weight", "o_proj.weight", "gate_proj.weight",
                             "up_proj.weight", "down_proj.weight"})
    if (name.ends_with(suffix)) return true;
  return name == "lm_head.weight";
}

bool is_frozen_bf16_only(const std::string& name) {
  if (is_gemm_weight(name)) return true;
  if (!name.starts_with("model.visual.")) return false;
  for (const char* suffix : {"patch_embed.proj.weight", "attn.qkv.weight", "attn.proj.weight", "linear_fc1.weight",
                             "linear_fc2.weight"})
    if (name.ends_with(suffix)) return true;
  return false;
}

std::string first_layer_tensor(const ModelConfig& c, int64_t layer) {
  return layer_prefix(c, layer) + "input_layernorm.weight";
}

ModelTensors resolve_tensors(const ModelConfig& c, const Arena& a) {
  ModelTensors m;
  auto v = [&](const std::string& n) { return a.view(n).data; };
  m.embed = v(c.text_prefix() + "embed_tokens.weight");
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    std::string p = layer_prefix(c, i);
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
  m.final_norm = v(c.text_prefix() + "norm.weight");
  m.lm_head = c.tie_word_embeddings ? m.embed : v("lm_head.weight");
  m.vision = {};
  if (c.has_vision() && a.has("model.visual.patch_embed.proj.weight")) m.vision = resolve_vision(c, a);
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

namespace {

// A Hugging Face checkpoint's tensors; each tensor's mapped pages are given back once it is read.
class CheckpointSource final : public ParameterSource {
 public:
  explicit CheckpointSource(const Checkpoint& ck) : ck_(ck) {}
  void read(const std::string& name, int64_t numel, int64_t first, int64_t count, float* dst) override {
    const StTensor* t = ck_.find(name);
    GRPO_CHECK(t, "[checkpoint] ", ck_.dir(), ": missing tensor \"", name, "\"");
    if (first == 0 && count == numel) {
      tensor_to_f32(*t, dst, numel, ck_.dir());
      return;
    }
    GRPO_CHECK(st_numel(t->shape) == numel, "[safetensors] ", ck_.dir(), ": tensor \"", name, "\": has ",
               st_numel(t->shape), " elements ", st_shape_str(t->shape), ", expected ", numel);
    tensor_range_to_f32(*t, first, count, dst, ck_.dir());
  }
  void done(const std::string& name) override { ck_.release(name); }

 private:
  const Checkpoint& ck_;
};

}  // namespace

std::unique_ptr<ModelWeights> ModelWeights::load_frozen_bf16(const std::string& dir) {
  Checkpoint ck = Checkpoint::open(dir);
  auto w = std::make_unique<ModelWeights>(ck.config());
  w->make_bf16_arena();
  CheckpointSource src(ck);
  w->load_through_shadow(src, is_frozen_bf16_only, 0, 0);  // bf16 only: the GEMM weights' f32 pages stay untouched
  w->frozen_bf16_ = true;
  return w;
}

void ModelWeights::shard_gemm_masters(int64_t lo, int64_t hi) {
  GRPO_CHECK(!frozen_bf16_, "[weights] a frozen bf16 base (LoRA) has no f32 GEMM weights to shard");
  GRPO_CHECK(0 <= lo && lo <= hi && hi <= params_.numel(), "[weights] master shard [", lo, ", ", hi,
             ") outside the layout's ", params_.numel(), " elements");
  if (!bf16_arena_) make_bf16_arena();
  gemm_masters_ = {lo, hi};
}

void ModelWeights::load_from(const Checkpoint& ck) {
  GRPO_CHECK(!frozen_bf16_, "[weights] ", ck.dir(), ": these weights are a frozen bf16 base (LoRA); they are not "
             "reloaded");
  CheckpointSource src(ck);
  load_from(src);
}

void ModelWeights::load_from(ParameterSource& src) {
  GRPO_CHECK(!frozen_bf16_, "[weights] these weights are a frozen bf16 base (LoRA); they are not reloaded");
  if (gemm_masters_) {
    load_through_shadow(src, is_gemm_weight, gemm_masters_->first, gemm_masters_->second);
    return;
  }
  GRPO_PROFILE("load_weights");
  for (const auto& [name, view] : params_.entries()) {
    src.read(name, view.numel(), 0, view.numel(), view.f32());
    src.done(name);
  }
  if (bf16_arena_) refresh_bf16();
}

void ModelWeights::load_from(ParameterSource& masters, const Checkpoint& model_files) {
  GRPO_CHECK(gemm_masters_.has_value(),
             "[weights] a load from two sources needs the GEMM masters sharded (shard_gemm_masters)");
  CheckpointSource shadow(model_files);
  load_through_shadow(masters, is_gemm_weight, gemm_masters_->first, gemm_masters_->second, &shadow);
}

void ModelWeights::load_through_shadow(ParameterSource& src, bool (*shadow_only)(const std::string&), int64_t lo,
                                       int64_t hi, ParameterSource* shadow) {
  GRPO_PROFILE("load_weights");
  constexpr int64_t kChunk = kLoadChunkElems;
  const auto& dst = bf16_arena_->entries();
  const auto& entries = params_.entries();
  std::vector<float> chunk;
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string& name = entries[i].first;
    const int64_t n = entries[i].second.numel();
    float* f32 = entries[i].second.f32();
    bf16_t* b16 = dst[i].second.as<bf16_t>();
    if (!shadow_only(name)) {
      src.read(name, n, 0, n, f32);
      ops::f32_to_bf16(b16, f32, n);
      src.done(name);
      continue;
    }
    // Piece by piece through one chunk: the shadow whole, the f32 master only inside [lo, hi).
    const int64_t off = params_.offset(name);
    chunk.resize(static_cast<size_t>(std::min(n, kChunk)));
    ParameterSource& whole = shadow ? *shadow : src;
    for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
      const int64_t c = std::min(kChunk, n - c0);
      whole.read(name, n, c0, c, chunk.data());
      ops::f32_to_bf16(b16 + c0, chunk.data(), c);
      const int64_t a = std::max(off + c0, lo), b = std::min(off + c0 + c, hi);
      if (a >= b) continue;
      if (shadow)
        src.read(name, n, a - off, b - a, f32 + (a - off));
      else
        std::memcpy(f32 + (a - off), chunk.data() + (a - off - c0), static_cast<size_t>(b - a) * sizeof(float));
    }
    src.done(name);
    if (shadow) shadow->done(name);
  }
}

void ModelWeights::write_file_part(const std::string& path, const ModelFilePart& part, DType dtype) const {
  GRPO_CHECK(dtype == DType::F32 || (dtype == DType::BF16 && bf16_arena_), "[checkpoint] ", path,
             ": model files are written from the f32 weights or the bf16 shadow, not as ", dtype_name(dtype));
  GRPO_CHECK(dtype == DType::BF16 || (!frozen_bf16_ && !gemm_masters_), "[checkpoint] ", path,
             ": these weights hold f32 GEMM weights only in part (a frozen bf16 base, or a rank's shard of the "
             "masters); write the bf16 shadow");
  const Arena& a = dtype == DType::BF16 ? *bf16_arena_ : params_;
  std::vector<StTensorOut> outs;
  for (const std::string& name : part.tensors) {
    const TensorView v = a.view(name);
    outs.push_back({name, dtype == DType::BF16 ? StDType::BF16 : StDType::F32,
                    std::vector<int64_t>(v.shape.dims.begin(), v.shape.dims.begin() + v.shape.ndim), v.data});
  }
  write_safetensors(path, outs, {{"format", "pt"}});
}

std::vector<NamedF32> ModelWeights::named_tensors() const {
  GRPO_CHECK(!frozen_bf16_, "[weights] a frozen bf16 base (LoRA) has no f32 GEMM weights to save");
  std::vector<NamedF32> out;
  for (const auto& [name, view] : params_.entries()) {
    std::vector<int64_t> shape(view.shape.dims.begin(), view.shape.dims.begin() + view.shape.ndim);
    out.push_back({name, shape, view.f32()});
  }
  return out;
}

const ModelTensors& ModelWeights::bf16() {
  if (!bf16_arena_) {
    make_bf16_arena();
    refresh_bf16();
  }
  return bf16_;
}

void ModelWeights::make_bf16_arena() {
  bf16_arena_ = std::make_unique<Arena>(DType::BF16);
  declare_parameters(config_, *bf16_arena_);
  bf16_arena_->allocate();
  bf16_ = resolve_tensors(config_, *bf16_arena_);
}

void ModelWeights::refresh_bf16() {
  GRPO_PROFILE("refresh_bf16");
  if (!bf16_arena_) return;
  GRPO_CHECK(!frozen_bf16_, "[weights] a frozen bf16 base (LoRA) has no f32 GEMM weights to refresh from");
  const auto& dst = bf16_arena_->entries();
  const auto& src = params_.entries();
  for (size_t i = 0; i < src.size(); ++i)
    ops::f32_to_bf16(dst[i].second.as<bf16_t>(), src[i].second.f32(), src[i].second.numel());
}

}  // namespace grpo
