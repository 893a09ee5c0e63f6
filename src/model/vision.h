// The Qwen3-VL vision tower, forward and backward, on the pictures of a batch: patch embedding (a GEMM on
// patch_dim-wide pixel rows), bilinear position embedding, pre-norm blocks (LayerNorm, qkv, 2D rotary,
// attention within each picture and temporal slice, proj, GELU-tanh MLP), the 2x2 merger (LayerNorm over the
// hidden size, then 4 rows viewed as one, fc1, exact GELU, fc2) and the DeepStack mergers (LayerNorm after
// the 4-row view). Straight-line code over kernels/vision_ops.h and ops::gemm like the text decoder: f32 or
// bf16 GEMM inputs, activations carved from one workspace sized for the largest batch of patches seen, and
// with activation checkpointing only each block's input kept (the block is recomputed in backward).
//
// Shapes: N patch rows, Dv hidden, Fv ffn, H heads of hd, Pd = patch_dim, Ng = N / merge_factor merged rows
// (one per <|image_pad|>), M = merge_factor * Dv, O = out_hidden_size (the text hidden size).
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "core/arena.h"
#include "model/batch.h"
#include "model/decoder_hooks.h"
#include "model/linear.h"
#include "model/vision_layout.h"
#include "model/weights.h"

namespace grpo {

// What every VisionTower of the process has done so far (benchmarks and metrics take differences around a
// phase): seconds in forward and in backward (a checkpointed block's recomputation counts as backward), the
// patch rows each went over, and their FLOPs counted analytically (vision_forward_flops; backward 2x the
// GEMMs and 2.5x the attention, plus the recomputed forward of checkpointed blocks).
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

  // Backpropagates the gradient buffers into grads (+=), an arena's vision tensors.
  void backward(const VisionTensors& grads);
  // Hooks told the blocks' events by every later forward() and backward() (null: none; decoder_hooks.h).
  void set_hooks(DecoderHooks* hooks) { hooks_ = hooks; }

  size_t workspace_bytes() const { return ws_.capacity(); }
  // Returns the activation workspace's memory to the system (Workspace::discard): the last forward's
  // outputs are gone; the next forward() writes them again.
  void release_workspace() { ws_.discard(); }
  // Bytes of the activation workspace forward() reserves for `patch_rows` patch rows (the memory plan).
  static size_t activation_bytes(const VisionConfig& v, const VisionOptions& opt, int64_t patch_rows);

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
  };
  struct MergerActs {
    float* in_norm;           // [Ng, M] LayerNorm output (the main merger's is [N, Dv] viewed as [Ng, M])
    float *mean, *rstd;       // [N] (main) or [Ng] (DeepStack)
    float* f1;                // [Ng, M] fc1 output + bias
    float* act;               // [Ng, M]
    float* out;               // [Ng, O]
    float* dout;              // [Ng, O] gradient of out
    bf16_t *in_bf, *act_bf;   // [Ng, M]
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
  };

  size_t carve(bool dry_run);
  // The workspace layout for N patch rows (Ng merged), laid out over `base` (null: measure only), its
  // pointers written to acts, main_merger, ds (one per DeepStack merger) and s.
  static size_t carve_layout(const VisionConfig& v, const VisionOptions& opt, int64_t N, int64_t Ng, char* base,
                             std::vector<BlockActs>& acts, MergerActs& main_merger, std::vector<MergerActs>& ds,
                             Scratch& s);
  void block_forward(int64_t b, BlockActs& a, float* x_out);
  void block_backward(int64_t b, BlockActs& a, const VisionBlockTensors& g);
  // in: the main merger's [N, Dv] (normalised per row over Dv), a DeepStack merger's [Ng, M] (over M).
  void merger_forward(const MergerTensors& p32, const MergerTensors* p16, MergerActs& m, const float* in, bool main);
  // Adds (main: writes) the gradient of `in` into dx.
  void merger_backward(const MergerTensors& p32, const MergerTensors* p16, const MergerTensors& g, MergerActs& m,
                       const float* in, bool main, float* dx);

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
};

}  // namespace grpo
