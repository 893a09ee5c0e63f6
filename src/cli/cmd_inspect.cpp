// `grpo inspect DIR`: validates a Hugging Face checkpoint folder and prints its architecture, key config
// values (and a Qwen3-VL model's vision tower, DeepStack, M-RoPE and vision token ids), parameter count,
// dtypes and tensor list; exits non-zero with the error when it is invalid.
#include <cstdio>
#include <map>

#include "cli/command.h"
#include "model/checkpoint.h"

namespace grpo::cli {

namespace {

struct InspectOptions {
  std::string dir;
  bool no_tensors = false;
};

void run_inspect(const InspectOptions& o) {
  Checkpoint ck = Checkpoint::open(o.dir);
  const ModelConfig& c = ck.config();
  std::printf("checkpoint:   %s\n", ck.dir().c_str());
  std::printf("architecture: %s (model_type %s)\n", c.architecture.c_str(), c.model_type.c_str());
  std::printf("shape:        vocab %lld, hidden %lld, ffn %lld, layers %lld, heads %lld / kv %lld, head_dim %lld\n",
              (long long)c.vocab_size, (long long)c.hidden_size, (long long)c.intermediate_size,
              (long long)c.num_hidden_layers, (long long)c.num_attention_heads, (long long)c.num_key_value_heads,
              (long long)c.head_dim);
  std::printf("features:     tied embeddings %s, q/k/v bias %s, q/k norm %s\n", c.tie_word_embeddings ? "yes" : "no",
              c.qkv_bias ? "yes" : "no", c.qk_norm ? "yes" : "no");
  std::printf("rope:         theta %g, scaling %s", c.rope_theta, c.rope_scaling.type.c_str());
  if (c.rope_scaling.type != "default") std::printf(" (factor %g)", c.rope_scaling.factor);
  std::printf(", max positions %lld, rms_norm_eps %g\n", (long long)c.max_position_embeddings, c.rms_norm_eps);
  std::string eos;
  for (int64_t id : c.eos_token_ids) eos += (eos.empty() ? "" : ", ") + std::to_string(id);
  std::printf("tokens:       eos [%s], bos %lld; config dtype %s\n", eos.c_str(), (long long)c.bos_token_id,
              std::string(dtype_name(c.dtype)).c_str());
  const int64_t params = parameter_count(c);
  std::printf("parameters:   %lld (%.2f M)\n", (long long)params, params / 1e6);
  if (c.has_vision()) {
    const VisionConfig& v = c.vision;
    int64_t vparams = 0;
    for (const TensorSpec& t : vision_tensors(c)) vparams += st_numel(t.shape);
    std::string ds;
    for (int64_t i : v.deepstack_visual_indexes) ds += (ds.empty() ? "" : ", ") + std::to_string(i);
    std::printf("vision:       depth %lld, hidden %lld, heads %lld (head_dim %lld), ffn %lld, patch %lldx%lld x %lld "
                "frames x %lld channels, merge %lldx%lld, position table %lldx%lld, out %lld\n",
                (long long)v.depth, (long long)v.hidden_size, (long long)v.num_heads, (long long)v.head_dim(),
                (long long)v.intermediate_size, (long long)v.patch_size, (long long)v.patch_size,
                (long long)v.temporal_patch_size, (long long)v.in_channels, (long long)v.spatial_merge_size,
                (long long)v.spatial_merge_size, (long long)v.grid_side(), (long long)v.grid_side(),
                (long long)v.out_hidden_size);
    if (v.deepstack_visual_indexes.empty())
      std::printf("deepstack:    none\n");
    else
      std::printf("deepstack:    vision blocks [%s] -> added after text layers 0..%zu\n", ds.c_str(),
                  v.deepstack_visual_indexes.size() - 1);
    std::printf("m-rope:       interleaved, sections [%lld, %lld, %lld] (t, h, w)\n", (long long)c.mrope_section[0],
                (long long)c.mrope_section[1], (long long)c.mrope_section[2]);
    std::printf("vision ids:   image_pad %lld, video_pad %lld, vision_start %lld, vision_end %lld\n",
                (long long)c.image_token_id, (long long)c.video_token_id, (long long)c.vision_start_token_id,
                (long long)c.vision_end_token_id);
    std::printf("split:        language model %lld (%.2f M), vision tower %lld (%.2f M)\n", (long long)(params - vparams),
                (params - vparams) / 1e6, (long long)vparams, vparams / 1e6);
  }
  std::map<std::string, int> dtypes;
  size_t name_width = 0;
  for (const std::string& n : ck.names()) {
    ++dtypes[std::string(st_dtype_name(ck.find(n)->dtype))];
    name_width = std::max(name_width, n.size());
  }
  std::string dt;
  for (const auto& [d, count] : dtypes) dt += (dt.empty() ? "" : ", ") + d + " x " + std::to_string(count);
  std::printf("dtypes:       %s\n", dt.c_str());
  std::printf("files:        %zu\n", ck.files().size());
  for (const std::string& f : ck.files()) std::printf("  %s\n", f.c_str());
  for (const std::string& n : ck.notes()) std::printf("note:         %s\n", n.c_str());
  if (o.no_tensors) return;
  std::printf("tensors:      %zu\n", ck.names().size());
  for (const std::string& n : ck.names()) {
    const StTensor* t = ck.find(n);
    std::printf("  %-*s %-5s %s\n", static_cast<int>(name_width), n.c_str(), std::string(st_dtype_name(t->dtype)).c_str(),
                st_shape_str(t->shape).c_str());
  }
}

void setup_inspect(CLI::App& app) {
  auto o = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand("inspect", "Validate a Hugging Face checkpoint folder and describe it");
  cmd->add_option("dir", o->dir, "Checkpoint folder (config.json + model.safetensors or shards)")->required();
  cmd->add_flag("--no-tensors", o->no_tensors, "Do not list the tensors");
  cmd->callback([o] { run_inspect(*o); });
}

}  // namespace

GRPO_REGISTER_COMMAND(setup_inspect);

}  // namespace grpo::cli
