// The Qwen3-VL vision tower, forward and backward, on the pictures of a batch: patch embedding (a GEMM on
// patch_dim-wide pixel rows), bilinear position embedding, pre-norm blocks (LayerNorm, qkv, 2D rotary,
// attention within each picture and temporal slice, proj, GELU-tanh MLP), the 2x2 merger (LayerNorm over the
// hidden size, then 4 rows viewed as one, fc1, exact GELU, fc2) and the DeepStack mergers (LayerNorm after
// the 4-row view). Straight-line code over kernels/vision_ops.h and ops::gemm like the text decoder: f32 or
// bf16 GEMM inputs, activations carved from one workspace sized for the largest batch of patches seen, and
// with activation checkpointing only each block's input kept (the block is recomputed in backward).
// LoRA (set_lora): the adapted linears (blocks' qkv, proj, fc1, fc2; the mergers' fc1, fc2) add
// s (x A^T) B^T in f32 in both modes, and with a frozen base the backward computes the adapters' gradients
// only, going down the blocks no further than the first adapted one.
//
// Shapes: N patch rows, Dv hidden, Fv ffn, H heads of hd, Pd = patch_dim, Ng = N / merge_factor merged rows
// (one per <|image_pad|>), M = merge_factor * Dv, O = out_hidden_size (the text hidden size).
#pragma once
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/arena.h"
#include "model/batch.h"
#include "model/decoder_hooks.h"
#include "model/linear.h"
#include "model/lora.h"
#include "model/vision_layout.h"
#include "model/weights.h"

namespace grpo {

// What every VisionTower of the process has done so far (benchmarks and metrics take differences around a
// phase): seconds in forward and in backward (a checkpointed block's recomputation counts as backward), the
// patch rows each went over, and their FLOPs counted analytically (vision_forward_flops; backward 2x the
// GEMMs and 2.5x the attention, plus the recomputed forward of checkpointed blocks; with the base frozen
// (LoRA) 1x the GEMMs and 2.5x the attention of the blocks it goes through, and 1x the mergers' GEMMs).
struct VisionWork {
  double forward_s = 0, backward_s = 0;
  int64_t forward_patches = 0, backward_patches = 0;
  double forward_flops = 0, backward_flops = 0;
  VisionWork operator-(const VisionWork& o) const {
    return {forward_s - o.forward_s,           backward_s - o.backward_s,
            forward_patches - o.forward_patches, backward_patches - o.backward_patches,
            forward_flops - o.forward_flops,   backward_flops - o.backward_flops};
  }
};
VisionWork vision_work();

// Forward FLOPs of the tower on a layout's N patch rows: {GEMMs (patch embedding, blocks, mergers),
// attention (QK^T and PV within each segment)}.
std::pair<double, double> vision_forward_flops(const VisionConfig& v, const std::vector<int32_t>& cu_seqlens);

struct VisionOptions {
  ComputeMode mode = ComputeMode::F32;
  bool checkpoint_activations = false;
};

class VisionTower {
 public:
  VisionTower(ModelWeights& weights, VisionOptions opt);

  // Runs the tower on pixels [N, Pd] of the pictures `grids` (validated: errors name `where`). The outputs and
  // the gradient buffers below stay valid until the next forward; the gradient buffers start at zero.
  void forward(const float* pixels, const std::vector<ImageGrid>& grids, const std::string& where);
  int64_t patch_rows() const { return N_; }
  int64_t hidden_size() const { return v_.hidden_size; }
  int64_t out_size() const { return v_.out_hidden_size; }
  int64_t merged_rows() const { return Ng_; }
  const float* image_embeds() const { return main_.out; }           // [Ng, O]
  const float* deepstack(size_t k) const { return ds_[k].out; }      // [Ng, O]
  size_t num_deepstack() const { return ds_.size(); }
  float* image_embeds_grad() { return main_.dout; }                  // [Ng, O]
  float* deepstack_grad(size_t k) { return ds_[k].dout; }            // [Ng, O]
  // Intermediates of the last forward (for the reference comparison): the interpolated position table and
  // the input of block 0 (patch embedding + position embedding), both [N, Dv].
  const float* position_embeds() const { return s_.pos; }
  const float* block_input() const { return acts_.empty() ? nullptr : acts_[0].x_in; }
  const VisionLayout& layout() const { return layout_; }

  // Backpropagates the gradient buffers into grads (+=), an arena's vision tensors (null: a frozen base, no
  // weight gradients), and the tower's adapters' gradients into lora_grads (+=; null: none). At least one.
  void backward(const VisionTensors* grads, const LoraTensors* lora_grads);
  // Attaches LoRA adapters (null: none): later forwards apply their tower modules, if any.
  void set_lora(const LoraAdapters* lora) { lora_ = lora && lora->has_tower() ? lora : nullptr; }
  // Hooks told the blocks' events by every later forward() and backward() (null: none; decoder_hooks.h).
  void set_hooks(DecoderHooks* hooks) { hooks_ = hooks; }

  size_t workspace_bytes() const { return ws_.capacity(); }
  // Returns the activation workspace's memory to the system (Workspace::discard): the last forward's
  // outputs are gone; the next forward() writes them again.
  void release_workspace() { ws_.discard(); }
  // Bytes of the activation workspace forward() reserves for `patch_rows` patch rows (the memory plan), with
  // tower adapters of rank `lora_rank` (0: none).
  static size_t activation_bytes(const VisionConfig& v, const VisionOptions& opt, int64_t patch_rows,
                                 int64_t lora_rank = 0);

 private:
  struct BlockActs {
    float* x_in;              // [N, Dv] block input (the residual stream)
    float* h1;                // [N, Dv] norm1 output
    float *mean1, *rstd1;     // [N]
    float *q, *k, *v;         // [N, H, hd] (q, k after the rotary)
    float* o;                 // [N, H, hd] attention output
    float* lse;               // [N, H]
    float* x_mid;             // [N, Dv]
    float* h2;                // [N, Dv] norm2 output
    float *mean2, *rstd2;     // [N]
    float* f1;                // [N, Fv] fc1 output + bias (GELU input)
    float* act;               // [N, Fv]
    bf16_t *h1_bf, *o_bf, *h2_bf, *act_bf;  // bf16 GEMM inputs (bf16 mode)
    std::array<float*, kTowerSlots> lora_u;  // [N, r] x A^T of each TowerSlot (tower LoRA), else null
  };
  struct MergerActs {
    float* in_norm;           // [Ng, M] LayerNorm output (the main merger's is [N, Dv] viewed as [Ng, M])
    float *mean, *rstd;       // [N] (main) or [Ng] (DeepStack)
    float* f1;                // [Ng, M] fc1 output + bias
    float* act;               // [Ng, M]
    float* out;               // [Ng, O]
    float* dout;              // [Ng, O] gradient of out
    bf16_t *in_bf, *act_bf;   // [Ng, M]
    std::array<float*, kMergerSlots> lora_u;  // [Ng, r] x A^T of each MergerSlot (tower LoRA), else null
  };
  struct Scratch {
    float* pos;                    // [N, Dv] interpolated position embedding
    float* x_final;                // [N, Dv] output of the last block
    float* qkv;                    // [N, 3Dv]
    float *dx, *dtmp;              // [N, Dv]
    float *dO, *dq, *dk, *dv;      // [N, Dv]
    float* dqkv;                   // [N, 3Dv]
    float* dact;                   // [N, Fv]
    float *dm_act, *dm_in;         // [Ng, M]
    float *attn_ws, *ln_ws;
    bf16_t* pix_bf;                // [N, Pd]
    bf16_t* dy_bf;                 // [max(N max(3Dv, Fv), Ng max(M, O))]
    float* lora_du;                // [N, r] gradient of x A^T (tower LoRA)
    float* norm_sink;              // [2 max(Dv, M)] LayerNorm weight and bias gradients a frozen base discards
  };

  size_t carve(bool dry_run);
  // The workspace layout for N patch rows (Ng merged; tower adapters of rank lora_rank, 0: none), laid out
  // over `base` (null: measure only), its pointers written to acts, main_merger, ds (one per DeepStack
  // merger) and s.
  static size_t carve_layout(const VisionConfig& v, const VisionOptions& opt, int64_t N, int64_t Ng,
                             int64_t lora_rank, char* base, std::vector<BlockActs>& acts, MergerActs& main_merger,
                             std::vector<MergerActs>& ds, Scratch& s);
  void block_forward(int64_t b, BlockActs& a, float* x_out);
  // g null: a frozen base; lg: the adapters' gradients (null: none); need_dx: the gradient of the block's
  // input is wanted (else s_.dx is left as the output's gradient).
  void block_backward(int64_t b, BlockActs& a, const VisionBlockTensors* g, const LoraTensors* lg, bool need_dx);
  // in: the main merger's [N, Dv] (normalised per row over Dv), a DeepStack merger's [Ng, M] (over M).
  // mi: 0 the main merger, 1 + k DeepStack merger k (its adapters).
  void merger_forward(int64_t mi, const MergerTensors& p32, const MergerTensors* p16, MergerActs& m, const float* in);
  // Adds (main: writes) the gradient of `in` into dx; g null: a frozen base.
  void merger_backward(int64_t mi, const MergerTensors& p32, const MergerTensors* p16, const MergerTensors* g,
                       const LoraTensors* lg, MergerActs& m, const float* in, float* dx);
  // y [T, N] += s (x A^T) B^T for an adapted module (pair p; no-op when p has none), keeping x A^T in u.
  void lora_forward(const LoraPair& p, LoraShape sh, float* y, const float* x, float* u, int64_t T);
  // Its backward: dx [T, K] += s (dy B) A (dx null: skipped), dA and dB (+=) into gp (null: none).
  void lora_backward(const LoraPair& p, const LoraPair* gp, LoraShape sh, float* dx, const float* dy, const float* x,
                     const float* u, int64_t T);
  int64_t lora_rank() const { return lora_ ? lora_->rank() : 0; }

  ModelWeights& w_;
  const VisionConfig& v_;
  VisionOptions opt_;
  Workspace ws_;
  VisionLayout layout_;
  int64_t N_ = 0, Ng_ = 0;
  const float* pixels_ = nullptr;
  std::vector<BlockActs> acts_;
  MergerActs main_{};
  std::vector<MergerActs> ds_;
  std::vector<int64_t> ds_after_block_;  // [depth] DeepStack merger fed by block b, or -1
  Scratch s_{};
  DecoderHooks* hooks_ = nullptr;
  const LoraAdapters* lora_ = nullptr;  // with tower modules only
};

}  // namespace grpo
