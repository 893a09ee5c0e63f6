// Model parameters in one flat arena, named with Hugging Face tensor names, laid out so that the
// fused GEMMs read contiguous matrices: q/k/v projections (and biases) form one [(H+2K)D, C] matrix,
// gate/up form one [2F, C] matrix. The same layout serves gradients and AdamW moments (one flat
// buffer each), and a bf16 shadow of the GEMM weights for mixed precision, refreshed in place.
// Qwen3-VL: the vision tower's tensors follow the text decoder's, so the text part is a prefix of the
// arena: a frozen tower's gradients and moments are arenas of the text part alone, with the same offsets.
// A frozen base under mixed precision (LoRA) is loaded by load_frozen_bf16: its GEMM weights exist only in
// the bf16 shadow (the f32 arena's pages for them are reserved, never touched, so they cost no memory).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/arena.h"
#include "model/checkpoint.h"
#include "model/config.h"

namespace grpo {

// Pointers into one arena (f32 or bf16) in the decoder's terms. Shapes (PyTorch order):
struct LayerTensors {
  void* attn_norm;  // [C]
  void* wqkv;       // [(H+2K)D, C]   q_proj rows, then k_proj, then v_proj
  void* bqkv;       // [(H+2K)D] or null (Qwen2 biases)
  void* q_norm;     // [D] or null (Qwen3)
  void* k_norm;     // [D] or null
  void* wo;         // [C, H*D]
  void* mlp_norm;   // [C]
  void* wgu;        // [2F, C]        gate_proj rows, then up_proj
  void* wdown;      // [C, F]
};
// Vision tower (Dv vision hidden, Fv its ffn, M = 4 Dv merged rows, O = C out_hidden_size, Pd = 1536).
struct VisionBlockTensors {
  void *norm1_w, *norm1_b;  // [Dv]
  void *wqkv, *bqkv;        // [3Dv, Dv], [3Dv]  q rows, then k, then v (each head-major)
  void *wproj, *bproj;      // [Dv, Dv], [Dv]
  void *norm2_w, *norm2_b;  // [Dv]
  void *wfc1, *bfc1;        // [Fv, Dv], [Fv]
  void *wfc2, *bfc2;        // [Dv, Fv], [Dv]
};
struct MergerTensors {
  void *norm_w, *norm_b;  // [Dv] (the main merger, before the 2x2 concat) or [M] (DeepStack, after it)
  void *wfc1, *bfc1;      // [M, M], [M]
  void *wfc2, *bfc2;      // [O, M], [O]
};
struct VisionTensors {
  void *patch_w, *patch_b;  // [Dv, Pd] (the Conv3d kernel [Dv, 3, 2, 16, 16] viewed as a matrix), [Dv]
  void* pos_embed;          // [grid_side^2, Dv]
  std::vector<VisionBlockTensors> blocks;
  MergerTensors merger;
  std::vector<MergerTensors> deepstack;
};
struct ModelTensors {
  void* embed;       // [V, C]
  std::vector<LayerTensors> layers;
  void* final_norm;  // [C]
  void* lm_head;     // [V, C] (== embed when tied)
  VisionTensors vision;  // all null for a text model, or in an arena declared without the tower
  template <typename T>
  static T* as(void* p) { return static_cast<T*>(p); }
};

// Declares the parameter tensors of `c` into `arena` (HF names; q/k/v and gate/up packed), the vision
// tower's last unless with_vision is false (a frozen tower has neither gradients nor optimizer moments).
void declare_parameters(const ModelConfig& c, Arena& arena, bool with_vision = true);
// Resolves the decoder pointers of an allocated arena declared by declare_parameters (vision pointers
// null when the arena has no tower).
ModelTensors resolve_tensors(const ModelConfig& c, const Arena& arena);
// Whether a parameter is read only as a GEMM weight (so in bf16 mode only through the bf16 shadow): the
// q/k/v/o, gate/up/down projections and an untied lm_head. Norms, biases and the embedding are read in f32.
bool is_gemm_weight(const std::string& name);
// What a frozen base under bf16 compute holds in bf16 only: the language model's GEMM weights and the
// Qwen3-VL tower's (patch embedding, each block's qkv / proj / fc1 / fc2, the mergers' fc1 / fc2), which the
// tower in bf16 mode reads only through the bf16 shadow. Norms, biases, the embedding and the tower's
// position embeddings are read in f32.
bool is_frozen_bf16_only(const std::string& name);
// Name of the first tensor of layer `layer` in declare_parameters' order (the layer's tensors follow it).
std::string first_layer_tensor(const ModelConfig& c, int64_t layer);

// Where a load reads the parameters from: a Hugging Face checkpoint, or the f32 master shards of a run
// checkpoint written by several ranks (loop/flat_shards.h).
class ParameterSource {
 public:
  virtual ~ParameterSource() = default;
  // Elements [first, first + count) of parameter `name` (of `numel` elements, C order) as f32 into dst;
  // errors name the file and the tensor.
  virtual void read(const std::string& name, int64_t numel, int64_t first, int64_t count, float* dst) = 0;
  // The parameter has been read: what holds its bytes may give them back.
  virtual void done(const std::string& name) = 0;
};

class ModelWeights {
 public:
  explicit ModelWeights(const ModelConfig& c);
  static std::unique_ptr<ModelWeights> load(const std::string& dir);  // Hugging Face folder
  // A frozen base for bf16 compute: GEMM weights (is_frozen_bf16_only) converted straight into the bf16
  // shadow, the other tensors (norms, biases, embedding, position embeddings) in f32 and bf16. No f32 copy of the GEMM
  // weights is ever written: peak memory is the bf16 model plus one chunk (kLoadChunkElems). Such weights refuse what
  // would read or rewrite the missing f32 copies (f32 compute, refresh_bf16, load_from, named_tensors).
  static std::unique_ptr<ModelWeights> load_frozen_bf16(const std::string& dir);
  bool frozen_bf16() const { return frozen_bf16_; }

  const ModelConfig& config() const { return config_; }
  Arena& params() { return params_; }  // f32 master weights
  const Arena& params() const { return params_; }
  const ModelTensors& f32() const { return f32_; }
  int64_t num_parameters() const { return params_.declared_numel(); }

  // Copies the checkpoint's tensors (f32/bf16/f16) into the f32 master weights (and the bf16 shadow when
  // there is one). After shard_gemm_masters, the GEMM weights' f32 elements only inside its shard.
  void load_from(const Checkpoint& ck);
  void load_from(ParameterSource& src);
  // After shard_gemm_masters: the GEMM weights' shadow from `model_files` (a run checkpoint's bf16 model
  // files, which hold exactly the shadow the masters round to) and only this rank's f32 elements of them from
  // `masters` (its master shards), the other tensors whole from `masters`: a resuming rank reads its own
  // slices of the masters, not every rank's.
  void load_from(ParameterSource& masters, const Checkpoint& model_files);
  bool gemm_masters_sharded() const { return gemm_masters_.has_value(); }
  // Mixed precision on several ranks (ZeRO): a rank updates the f32 masters of its shard [lo, hi) of the
  // layout only, and the other ranks' GEMM weights (is_gemm_weight) reach it in bf16 (train/param_sync.h),
  // so their f32 copies are never read. Makes the bf16 shadow (not filled); from then on every load_from
  // writes the shadow whole and a GEMM weight's f32 elements only inside [lo, hi), one chunk at a time: the
  // other pages of the f32 arena are never touched and cost no memory, so no rank holds the whole f32
  // model. Norms, biases and the embedding stay whole in f32 (they are read in f32). Call before loading.
  void shard_gemm_masters(int64_t lo, int64_t hi);
  // Elements converted at a time by the loaders that write the bf16 shadow straight from the checkpoint.
  static constexpr int64_t kLoadChunkElems = int64_t{1} << 20;
  // (name, shape, data) of every parameter in HF order, for save_checkpoint.
  std::vector<NamedF32> named_tensors() const;
  // Writes the tensors of `part` (model_file_parts) to `path` as they are, atomically: from the bf16
  // shadow (which must be whole), or with dtype F32 from the f32 weights (which must be whole).
  void write_file_part(const std::string& path, const ModelFilePart& part, DType dtype) const;

  // bf16 shadow of every parameter (GEMM weights read it in bf16 mode). Created on first call.
  const ModelTensors& bf16();
  // Re-converts the master weights into the bf16 shadow in place (after each optimizer step). Every master
  // must be there: with sharded GEMM masters, only after they were gathered whole (ParamSync::gather_masters).
  void refresh_bf16();
  bool has_bf16() const { return bf16_arena_ != nullptr; }
  Arena* bf16_arena() { return bf16_arena_.get(); }  // null until bf16() was called

 private:
  void make_bf16_arena();  // declared and allocated, not filled
  // Every tensor into the bf16 shadow; those for which shadow_only(name) holds are converted one chunk at a
  // time and get f32 elements only inside [lo, hi), the others are written whole in f32 too.
  // With `shadow` (not null), shadow_only tensors take their shadow from it and only their f32 elements in
  // [lo, hi) from src.
  void load_through_shadow(ParameterSource& src, bool (*shadow_only)(const std::string&), int64_t lo, int64_t hi,
                           ParameterSource* shadow = nullptr);

  ModelConfig config_;
  Arena params_;
  ModelTensors f32_;
  std::unique_ptr<Arena> bf16_arena_;
  ModelTensors bf16_;
  bool frozen_bf16_ = false;
  std::optional<std::pair<int64_t, int64_t>> gemm_masters_;  // shard_gemm_masters' [lo, hi)
};

}  // namespace grpo
