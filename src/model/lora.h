// LoRA adapters on the text decoder's linear layers, in PEFT's format. Each adapted linear W [out, in] gets
// A [r, in] and B [out, r] (fp32) and computes y = x W^T + s (x A^T) B^T with s = alpha / r, or
// alpha / sqrt(r) with rsLoRA. The adapters live in one flat arena named with PEFT's keys
// (`base_model.model.<module>.lora_A.weight`), so gradients and AdamW moments are flat buffers of the same
// layout. Our q/k/v (and gate/up) weights are packed into one matrix: an adapter on q_proj reads and writes
// the q rows of the packed output only (LoraSlot gives each module's rows).
//
// Module selection follows PEFT: target_modules is "all-linear" (every linear but the output layer), a
// list (a module matches when its name equals an entry or ends with "." + entry) or one regular expression
// (a full match of the module name); exclude_modules likewise removes modules. On Qwen3-VL the vision
// tower's linears are modules like the decoder's (PEFT's all-linear takes them too): each block's attn.qkv,
// attn.proj, mlp.linear_fc1 and mlp.linear_fc2, and linear_fc1 / linear_fc2 of the merger and of each
// DeepStack merger (`model.visual.blocks.3.attn.qkv`, `model.visual.deepstack_merger_list.0.linear_fc2`);
// with the tower frozen (freeze_vision_tower) none of them is adapted.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/arena.h"
#include "model/config.h"
#include "model/linear.h"

namespace grpo {

class ModelWeights;

// PEFT's target_modules / exclude_modules: nothing, "all-linear", a list of names or one regex.
struct ModuleSelector {
  enum class Kind { None, AllLinear, List, Regex };
  Kind kind = Kind::None;
  std::vector<std::string> names;  // List
  std::string regex;               // Regex
  // From a JSON value (null, string or list of strings); `where` names the file and field in errors.
  static ModuleSelector from_json(const nlohmann::json& j, const std::string& where);
  nlohmann::json to_json() const;
  bool empty() const { return kind == Kind::None; }
};

struct LoraConfig {
  int64_t rank = 0;  // r (0: LoRA off)
  double alpha = 16;
  bool use_rslora = false;
  ModuleSelector target;   // target_modules
  ModuleSelector exclude;  // exclude_modules
  float scale() const;     // alpha / r, or alpha / sqrt(r) with rsLoRA
};

// The adaptable linears of one decoder layer, in the order of the packed weights.
enum class LoraSlot { Q, K, V, O, Gate, Up, Down };
constexpr int kLoraSlots = 7;
const char* lora_slot_module(LoraSlot s);  // "self_attn.q_proj", ..., "mlp.down_proj"

// Where a slot's module sits in the decoder: its rows of the packed output, and its in / out features.
struct LoraSlotShape {
  int64_t row_offset;  // first row of the module's weight within the packed matrix (q/k/v, gate/up)
  int64_t out, in;
  int64_t packed_rows;  // rows of the packed matrix (the output's row stride)
};
LoraSlotShape lora_slot_shape(const ModelConfig& c, LoraSlot s);

// Slots first..last read the same input (q/k/v; o; gate/up; down). The adapters lay out each layer's group
// with its A matrices back to back, so the group's adapted A matrices form one [g r, in] matrix (g adapted
// slots) and one GEMM computes x A^T for all of them.
struct LoraGroup {
  int first, last;
};
// The groups by the input they read; the index into kLoraGroups.
enum LoraGroupIndex : int { kLoraQkvGroup = 0, kLoraOGroup = 1, kLoraGateUpGroup = 2, kLoraDownGroup = 3 };
constexpr LoraGroup kLoraGroups[] = {{0, 2}, {3, 3}, {4, 5}, {6, 6}};  // [LoraGroupIndex] slots first..last

struct LoraPair {
  float* A = nullptr;  // [r, in]  null: the module has no adapter
  float* B = nullptr;  // [out, r]
};
struct LoraLayer {
  std::array<LoraPair, kLoraSlots> slot;
};
// The vision tower's adaptable linears: per block (TowerSlot) and per merger (MergerSlot; the main merger,
// then DeepStack merger k). Each reads its own input (qkv is one packed linear in the checkpoint too).
enum class TowerSlot { Qkv, Proj, Fc1, Fc2 };
constexpr int kTowerSlots = 4;
enum class MergerSlot { Fc1, Fc2 };
constexpr int kMergerSlots = 2;
struct LoraShape {
  int64_t out, in;
};
LoraShape tower_slot_shape(const VisionConfig& v, TowerSlot s);    // qkv [3Dv, Dv] ... fc2 [Dv, Fv]
LoraShape merger_slot_shape(const VisionConfig& v, MergerSlot s);  // fc1 [M, M], fc2 [O, M]

struct LoraTensors {
  std::vector<LoraLayer> layers;
  std::vector<std::array<LoraPair, kTowerSlots>> tower;     // [depth] (empty: a text model)
  std::vector<std::array<LoraPair, kMergerSlots>> mergers;  // [1 + DeepStack mergers]
};

// The PEFT key of a module's A or B matrix: "base_model.model.<module>.lora_A.weight".
std::string lora_key(const std::string& module, bool b_matrix);

class LoraAdapters {
 public:
  // Resolves the config's modules on model `c` (`source` names the config in errors: a file or a run
  // config key). Refuses rank < 1, a list entry that matches no module and a selection that adapts nothing.
  // vision_frozen: the tower's linears are not adapted whatever the selection. The adapters are zero until
  // loaded or initialised.
  LoraAdapters(const ModelConfig& c, const LoraConfig& cfg, const std::string& source,
               bool vision_frozen = false);
  // adapter_config.json + adapter_model.safetensors of a PEFT LoRA adapter folder, checked against `c`:
  // every tensor present with its module's shape, no tensor of a module that is not adapted.
  static std::unique_ptr<LoraAdapters> load(const ModelConfig& c, const std::string& dir, bool vision_frozen = false);
  // Reads only adapter_config.json (r, lora_alpha, use_rslora, target_modules, exclude_modules).
  static LoraConfig read_config(const std::string& dir);

  // PEFT's default initialisation: A kaiming-uniform with a = sqrt(5) (uniform in +-1/sqrt(in)), B zero.
  void init_default(uint64_t seed);
  // Copies another folder's adapter tensors (same modules and rank).
  void load_tensors(const std::string& dir);
  // Writes adapter_config.json and adapter_model.safetensors (f32) into `dir` (created if needed).
  void save(const std::string& dir, const std::string& base_model) const;
  // W += s B A for every adapted module, into the f32 master weights (and the bf16 shadow if present).
  void merge_into(ModelWeights& w) const;

  const LoraConfig& config() const { return cfg_; }
  float scale() const { return cfg_.scale(); }
  int64_t rank() const { return cfg_.rank; }
  const std::vector<std::string>& modules() const { return modules_; }  // adapted modules, in layout order
  Arena& params() { return params_; }
  const Arena& params() const { return params_; }
  const LoraTensors& tensors() const { return tensors_; }
  // Group `gi` of kLoraGroups in layer l: its adapted modules (B, dB from `grads` when given, output
  // columns) into mods[0..3), their A matrix [g r, in] into *A (and *dA from grads); returns g (0: none).
  int group(int64_t l, int gi, const LoraTensors* grads, LoraModule* mods, const float** A, float** dA) const;
  // Whether any of the vision tower's linears is adapted, and the first tower block that is (depth: none).
  bool has_tower() const { return tower_modules_ > 0; }
  int64_t first_tower_block() const;
  // Declares the adapters' layout into another arena (gradients, moments) and resolves its pointers.
  void declare(Arena& a) const;
  LoraTensors resolve(const Arena& a) const;

 private:
  ModelConfig model_;
  LoraConfig cfg_;
  std::vector<std::string> modules_;
  std::vector<std::array<bool, kLoraSlots>> adapted_;  // [L][slot]
  std::vector<std::array<bool, kTowerSlots>> tower_adapted_;     // [depth][slot]
  std::vector<std::array<bool, kMergerSlots>> merger_adapted_;  // [1 + DeepStack][slot]
  int64_t tower_modules_ = 0;
  Arena params_;
  LoraTensors tensors_;
};

}  // namespace grpo
