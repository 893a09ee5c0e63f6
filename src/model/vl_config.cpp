// Qwen3-VL config.json (Qwen3VLForConditionalGeneration): the text decoder's fields from text_config (a
// Qwen3 decoder with interleaved M-RoPE), the vision tower's from vision_config (absent keys take the
// defaults of transformers' Qwen3VLVisionConfig), the special token ids at the top level; written back with
// the file's own spellings; and the vision tower's tensor list (model.visual.*).
#include <cmath>

#include "core/error.h"
#include "model/config_fields.h"

namespace grpo {

using config_detail::FieldReader;

int64_t VisionConfig::grid_side() const {
  return static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(num_position_embeddings))));
}

namespace {

void read_vision(const FieldReader& r, const nlohmann::json& vj, ModelConfig& c) {
  VisionConfig& v = c.vision;
  v.depth = r.positive_int_or("depth", 27, 1 << 10);
  v.hidden_size = r.positive_int_or("hidden_size", 1152, int64_t{1} << 16);
  v.intermediate_size = r.positive_int_or("intermediate_size", 4304, int64_t{1} << 18);
  v.num_heads = r.positive_int_or("num_heads", 16, 1 << 10);
  v.in_channels = r.positive_int_or("in_channels", 3, 16);
  v.patch_size = r.positive_int_or("patch_size", 16, 1 << 10);
  v.temporal_patch_size = r.positive_int_or("temporal_patch_size", 2, 16);
  v.spatial_merge_size = r.positive_int_or("spatial_merge_size", 2, 16);
  v.out_hidden_size = r.positive_int_or("out_hidden_size", 3584, int64_t{1} << 20);
  v.num_position_embeddings = r.positive_int_or("num_position_embeddings", 2304, int64_t{1} << 24);
  v.initializer_range = r.positive_number("initializer_range", 0.02);
  if (v.hidden_size % v.num_heads != 0) r.bad("num_heads", cat("a divisor of vision hidden_size ", v.hidden_size));
  if (v.head_dim() % 4 != 0)
    r.bad("num_heads", cat("heads of a size divisible by 4 (the 2D rotary gives a quarter of each head to rows and a "
                           "quarter to columns), got head size ", v.head_dim()));
  if (v.grid_side() * v.grid_side() != v.num_position_embeddings)
    r.bad("num_position_embeddings", "a square number (the learned position table is a square grid)");
  if (r.string("hidden_act", "gelu_pytorch_tanh") != "gelu_pytorch_tanh") r.bad("hidden_act", "\"gelu_pytorch_tanh\"");
  v.deepstack_visual_indexes = {8, 16, 24};
  if (r.has("deepstack_visual_indexes")) {
    const nlohmann::json& d = vj["deepstack_visual_indexes"];
    const std::string expected = cat("a list of increasing vision block indexes below depth ", v.depth,
                                     ", at most num_hidden_layers ", c.num_hidden_layers, " of them");
    if (!d.is_array()) r.bad("deepstack_visual_indexes", expected);
    v.deepstack_visual_indexes.clear();
    for (const nlohmann::json& e : d) {
      if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() >= v.depth ||
          (!v.deepstack_visual_indexes.empty() && e.get<int64_t>() <= v.deepstack_visual_indexes.back()))
        r.bad("deepstack_visual_indexes", expected);
      v.deepstack_visual_indexes.push_back(e.get<int64_t>());
    }
  }
  for (int64_t i : v.deepstack_visual_indexes)
    if (i >= v.depth)
      r.bad("deepstack_visual_indexes", cat("vision block indexes below depth ", v.depth));
  if (static_cast<int64_t>(v.deepstack_visual_indexes.size()) > c.num_hidden_layers)
    r.bad("deepstack_visual_indexes", cat("at most num_hidden_layers ", c.num_hidden_layers, " entries"));
  if (v.out_hidden_size != c.hidden_size)
    r.bad("out_hidden_size", cat("text_config.hidden_size ", c.hidden_size, " (image features replace token embeddings)"));
}

int64_t special_id(const FieldReader& r, const char* field, int64_t dflt, int64_t vocab) {
  const int64_t id = r.has(field) ? r.token_id(r.at(field), field) : dflt;
  if (id >= vocab) r.bad(field, cat("a token id below text_config.vocab_size ", vocab));
  return id;
}

}  // namespace

namespace config_detail {

ModelConfig parse_vl_config(const nlohmann::json& j, const std::string& source) {
  FieldReader top(j, source);
  if (!top.has("text_config") || !j["text_config"].is_object())
    top.bad("text_config", "an object with the text decoder's fields (vocab_size, hidden_size, ...)");
  const nlohmann::json& tj = j["text_config"];
  FieldReader text(tj, source, "text_config.");
  if (text.string("model_type", "qwen3_vl_text") != "qwen3_vl_text") text.bad("model_type", "\"qwen3_vl_text\"");
  ModelConfig c;
  c.architecture = "Qwen3VLForConditionalGeneration";
  c.model_type = "qwen3_vl";
  read_text_fields(text, c, 128000, /*mrope=*/true);
  if (top.has("dtype") || top.has("torch_dtype")) read_dtype(top, c);
  c.tie_word_embeddings = top.boolean("tie_word_embeddings", c.tie_word_embeddings);
  c.image_token_id = special_id(top, "image_token_id", 151655, c.vocab_size);
  c.video_token_id = special_id(top, "video_token_id", 151656, c.vocab_size);
  c.vision_start_token_id = special_id(top, "vision_start_token_id", 151652, c.vocab_size);
  c.vision_end_token_id = special_id(top, "vision_end_token_id", 151653, c.vocab_size);
  const int64_t ids[4] = {c.image_token_id, c.video_token_id, c.vision_start_token_id, c.vision_end_token_id};
  for (int a = 0; a < 4; ++a)
    for (int b = a + 1; b < 4; ++b)
      if (ids[a] == ids[b])
        fail("[config] ", source, ": image_token_id, video_token_id, vision_start_token_id and vision_end_token_id "
             "must be four different ids, two are ", ids[a]);
  static const nlohmann::json kEmpty = nlohmann::json::object();
  if (top.has("vision_config") && !j["vision_config"].is_object())
    top.bad("vision_config", "an object with the vision tower's fields");
  const nlohmann::json& vj = top.has("vision_config") ? j["vision_config"] : kEmpty;
  read_vision(FieldReader(vj, source, "vision_config."), vj, c);
  c.raw = j;
  return c;
}

nlohmann::json vl_config_to_json(const ModelConfig& c) {
  nlohmann::json j = c.raw.is_object() ? c.raw : nlohmann::json::object();
  j["architectures"] = {c.architecture};
  j["model_type"] = c.model_type;
  j["image_token_id"] = c.image_token_id;
  j["video_token_id"] = c.video_token_id;
  j["vision_start_token_id"] = c.vision_start_token_id;
  j["vision_end_token_id"] = c.vision_end_token_id;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  write_dtype(j, c);
  if (!j.contains("text_config") || !j["text_config"].is_object()) j["text_config"] = nlohmann::json::object();
  nlohmann::json& t = j["text_config"];
  t["model_type"] = "qwen3_vl_text";
  write_text_fields(t, c);
  if (!j.contains("vision_config") || !j["vision_config"].is_object()) j["vision_config"] = nlohmann::json::object();
  nlohmann::json& v = j["vision_config"];
  const VisionConfig& vc = c.vision;
  v["model_type"] = v.value("model_type", "qwen3_vl");
  v["depth"] = vc.depth;
  v["hidden_size"] = vc.hidden_size;
  v["intermediate_size"] = vc.intermediate_size;
  v["num_heads"] = vc.num_heads;
  v["in_channels"] = vc.in_channels;
  v["patch_size"] = vc.patch_size;
  v["temporal_patch_size"] = vc.temporal_patch_size;
  v["spatial_merge_size"] = vc.spatial_merge_size;
  v["out_hidden_size"] = vc.out_hidden_size;
  v["num_position_embeddings"] = vc.num_position_embeddings;
  v["deepstack_visual_indexes"] = vc.deepstack_visual_indexes;
  v["hidden_act"] = "gelu_pytorch_tanh";
  v["initializer_range"] = vc.initializer_range;
  return j;
}

}  // namespace config_detail

std::vector<TensorSpec> vision_tensors(const ModelConfig& c) {
  std::vector<TensorSpec> t;
  if (!c.has_vision()) return t;
  const VisionConfig& v = c.vision;
  const int64_t D = v.hidden_size, F = v.intermediate_size, M = v.merged_dim(), O = v.out_hidden_size;
  t.push_back({"model.visual.patch_embed.proj.weight",
               {D, v.in_channels, v.temporal_patch_size, v.patch_size, v.patch_size}});
  t.push_back({"model.visual.patch_embed.proj.bias", {D}});
  t.push_back({"model.visual.pos_embed.weight", {v.num_position_embeddings, D}});
  for (int64_t i = 0; i < v.depth; ++i) {
    const std::string p = cat("model.visual.blocks.", i, ".");
    t.push_back({p + "norm1.weight", {D}});
    t.push_back({p + "norm1.bias", {D}});
    t.push_back({p + "attn.qkv.weight", {3 * D, D}});
    t.push_back({p + "attn.qkv.bias", {3 * D}});
    t.push_back({p + "attn.proj.weight", {D, D}});
    t.push_back({p + "attn.proj.bias", {D}});
    t.push_back({p + "norm2.weight", {D}});
    t.push_back({p + "norm2.bias", {D}});
    t.push_back({p + "mlp.linear_fc1.weight", {F, D}});
    t.push_back({p + "mlp.linear_fc1.bias", {F}});
    t.push_back({p + "mlp.linear_fc2.weight", {D, F}});
    t.push_back({p + "mlp.linear_fc2.bias", {D}});
  }
  auto merger = [&](const std::string& p, int64_t norm_dim) {
    t.push_back({p + "norm.weight", {norm_dim}});
    t.push_back({p + "norm.bias", {norm_dim}});
    t.push_back({p + "linear_fc1.weight", {M, M}});
    t.push_back({p + "linear_fc1.bias", {M}});
    t.push_back({p + "linear_fc2.weight", {O, M}});
    t.push_back({p + "linear_fc2.bias", {O}});
  };
  merger("model.visual.merger.", D);
  for (size_t k = 0; k < v.deepstack_visual_indexes.size(); ++k)
    merger(cat("model.visual.deepstack_merger_list.", k, "."), M);
  return t;
}

}  // namespace grpo
