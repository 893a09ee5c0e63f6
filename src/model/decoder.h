// The decoder (Qwen3 / Qwen2 / LLaMA, and Qwen3-VL's language model) forward and backward over packed
// batches, for training and scoring. Straight-line code over the kernels of kernels/ops.h (llm.c style).
// Activations live in one workspace sized up front for the largest batch seen; with activation
// checkpointing only each layer's input is kept and the layer is recomputed during backward. The output
// layer is fused (ops::lm_head_*): it never materialises [T, V] logits.
//
// Qwen3-VL with pictures in the batch: the vision tower (model/vision.h) runs on them, its image embeddings
// replace the embeddings of the <|image_pad|> rows, its DeepStack features are added to those rows after text
// layers 0..k-1, q and k turn with the interleaved M-RoPE of positions [3, T] (model/mrope.h), and the
// backward carries the gradient into the tower (unless the gradient arena has no tower: a frozen one, and
// no LoRA adapter of the tower). A batch without pictures runs exactly the text decoder.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/arena.h"
#include "kernels/plain_ops.h"
#include "model/batch.h"
#include "model/decoder_hooks.h"
#include "model/linear.h"
#include "model/lora.h"
#include "model/rope_tables.h"
#include "model/vision.h"
#include "model/weights.h"

namespace grpo {

ComputeMode parse_compute_mode(const std::string& s);  // "f32" | "bf16"

struct DecoderOptions {
  ComputeMode mode = ComputeMode::F32;
  bool checkpoint_activations = false;
  int64_t lm_head_chunk = 256;  // rows of the output layer processed at a time
  float logit_scale = 1.0f;     // 1 / temperature
  // Kernel set: null = the fused kernels (ops::); plain_kernels() = the unfused baseline of the benchmarks.
  const DecoderKernels* kernels = nullptr;
};

class Decoder {
 public:
  Decoder(ModelWeights& weights, DecoderOptions opt);

  // Runs the model on `batch`. logprob [T]: log p(targets[t]) (0 where targets[t] < 0); entropy [T].
  // Keeps what backward() needs.
  void forward(const PackedBatch& batch, float* logprob, float* entropy);
  // Backpropagates dlogprob [T] and dentropy [T] (either may be null) of the last forward() and
  // accumulates (+=) parameter gradients into `grads` (an arena declared by declare_parameters).
  void backward(const float* dlogprob, const float* dentropy, const ModelTensors& grads);
  // The same with the base frozen or not: base_grads null computes no gradient of the model's parameters
  // (no weight-gradient GEMMs, none for the norms, embedding or output layer); lora_grads (an arena declared
  // by LoraAdapters::declare) receives (+=) the adapters' gradients when LoRA is attached.
  void backward(const float* dlogprob, const float* dentropy, const ModelTensors* base_grads,
                const LoraTensors* lora_grads);
  // Attaches LoRA adapters (null: none): every later forward adds s (x A^T) B^T to the adapted linears
  // (computed in f32 in both modes; the vision tower's too), backward carries the gradient through both
  // paths (into the tower when it has adapters, even with its base frozen).
  void set_lora(const LoraAdapters* lora) {
    lora_ = lora;
    if (vision_) vision_->set_lora(lora);
  }
  const LoraAdapters* lora() const { return lora_; }
  // Hooks told by every later forward() and backward() (null: none), the tower's events included
  // (decoder_hooks.h).
  void set_hooks(DecoderHooks* hooks);
  // Full logits [T, V] of the last forward() (debugging and the unfused baseline only).
  void full_logits(float* out);

  const DecoderOptions& options() const { return opt_; }
  // Bytes of the activation workspace forward() reserves for a batch of `tokens` tokens whose longest
  // sequence has `longest_sequence` tokens (`pictures`: Qwen3-VL with pictures, M-RoPE rows), the vision
  // tower's workspace not included; `lora_rank` > 0: with LoRA adapters of that rank. The same layout as
  // the one carved (the memory plan uses it).
  static size_t activation_bytes(const ModelConfig& c, const DecoderOptions& opt, int64_t tokens,
                                 int64_t longest_sequence, bool pictures, int64_t lora_rank = 0);
  // Of those, the fused output layer's chunk buffers (O(lm_head_chunk x V), or O(T x V) with full logits).
  static size_t output_layer_bytes(const ModelConfig& c, const DecoderOptions& opt, int64_t tokens);
  size_t workspace_bytes() const { return ws_.capacity() + (vision_ ? vision_->workspace_bytes() : 0); }
  size_t workspace_high_water() const { return ws_.high_water(); }
  // Returns the activation workspaces' memory (the vision tower's included) to the system between steps
  // (Workspace::discard): what backward() needs is gone until the next forward(). A GRPO step calls it after
  // its update, so that the next rollout does not hold the training activations.
  void release_workspace() {
    ws_.discard();
    if (vision_) vision_->release_workspace();
  }
  // Qwen3-VL, of the last forward(): the vision tower (null for text models; its outputs belong to the last
  // batch when had_pictures()), the M-RoPE positions [3, T] and each sequence's rope_delta.
  const VisionTower* vision() const { return vision_.get(); }
  bool had_pictures() const { return pictures_; }
  const std::vector<int32_t>& mrope_positions() const { return pos3_; }
  const std::vector<int64_t>& rope_deltas() const { return rope_deltas_; }

 private:
  // One layer's activations (pointers into ws_). With checkpointing every layer shares one set except x_in.
  struct LayerActs {
    float* x_in;       // [T, C]   residual stream entering the layer
    float* h1;         // [T, C]   input_layernorm output
    float* rstd1;      // [T]
    float* q_pre;      // [T, H, D] q before q_norm (qk-norm models only; else == q)
    float* k_pre;      // [T, K, D]
    float* q;          // [T, H, D] after norm + rope
    float* k;          // [T, K, D]
    float* v;          // [T, K, D]
    float* q_rstd;     // [T, H]
    float* k_rstd;     // [T, K]
    float* o;          // [T, H, D] attention output
    float* lse;        // [T, H]
    float* x_mid;      // [T, C]   residual after attention
    float* h2;         // [T, C]   post_attention_layernorm output
    float* rstd2;      // [T]
    float* gu;         // [T, 2F]  gate | up
    float* act;        // [T, F]   silu(gate) * up
    bf16_t *h1_bf, *o_bf, *h2_bf, *act_bf;  // bf16 copies of GEMM inputs (bf16 mode), else null
    std::array<float*, std::size(kLoraGroups)> lora_u;  // [T, g r] x A^T of each kLoraGroups group (LoRA), else null
  };
  struct Scratch {
    float* qkv;      // [T, (H+2K)D]
    float* dx;       // [T, C]  gradient of the residual stream
    float* dtmp;     // [T, C]
    float* dact;     // [T, F]
    float* dgu;      // [T, 2F]
    float* dO;       // [T, H, D]
    float* dq;       // [T, H, D]
    float* dk;       // [T, K, D]
    float* dv;       // [T, K, D]
    float* dqkv;     // [T, (H+2K)D]
    bf16_t* dy_bf;   // [T, max(2F, (H+2K)D, C, HD)] bf16 copy of an output gradient (bf16 mode)
    float* attn_ws;
    float* rms_ws;
    float* head_ws;
    float* h_final;     // [T, C] final norm output
    float* rstd_final;  // [T]
    bf16_t* h_final_bf; // [T, C]
    float* lse_head;    // [T] log-sum-exp of the output layer
    float* entropy_head;  // [T] its entropy (the backward's entropy term)
    float *mcos, *msin; // [T, D/2] M-RoPE rows of the batch (batches with pictures)
    float* lora_du;     // [T, 3r] gradient of a group's x A^T (LoRA)
    bf16_t* lora_w_bf;  // [3r, max(HD, C, F)] a group's A, or one B, in bf16 (LoRA in bf16 mode)
    bf16_t* lora_u_bf;  // [T, 3r] a group's x A^T in bf16 (LoRA in bf16 mode)
    bf16_t* lora_du_bf; // [T, 3r] its gradient in bf16 (LoRA in bf16 mode)
    float* norm_sink;   // [max(C, D)] norm weight gradients that a frozen base discards
  };

  size_t carve(int64_t T, bool dry_run);
  // The workspace layout of a batch of T tokens (longest sequence `longest`; LoRA adapters of rank
  // `lora_rank`, 0: none), laid out over `base` (null: measure only), its pointers written to acts, x_final and s.
  static size_t carve_layout(const ModelConfig& c, const DecoderOptions& opt, const DecoderKernels& k, int64_t T,
                             int64_t longest, bool mrope, int64_t lora_rank, char* base, std::vector<LayerActs>& acts,
                             float*& x_final, Scratch& s);
  // Qwen3-VL: M-RoPE positions and pad rows of the batch, the vision tower on its pictures.
  void prepare_pictures(const PackedBatch& batch);
  void rope(float* x, int64_t nh, bool backward);  // plain RoPE or M-RoPE rows, in place on [T, nh, D]
  void layer_forward(int64_t l, LayerActs& a, float* x_out);
  void layer_backward(int64_t l, LayerActs& a, const ModelTensors* g, const LoraTensors* lg);
  // LoRA of group `gi` of kLoraGroups (the linears of layer l that read `in` [T, K] and write `out`
  // [T, packed]): out[:, slot rows] += s (in A^T) B^T, keeping in A^T in a.lora_u[gi]. in_bf: the base
  // linear's bf16 copy of `in` (bf16 mode: the adapters' GEMMs read it).
  void lora_forward(int64_t l, LayerActs& a, LoraGroupIndex gi, float* out, const float* in, const bf16_t* in_bf);
  // Its backward: din [T, K] += s (dout B) A, dA and dB (+=) into lg (null: only din). In bf16 mode it reads
  // s_.dy_bf, the base linear's bf16 copy of dout, which linear_backward has just written.
  void lora_backward(int64_t l, LayerActs& a, LoraGroupIndex gi, const LoraTensors* lg, float* din, const float* dout,
                     const float* in, const bf16_t* in_bf);
  LoraBf16 lora_bf16(const bf16_t* in_bf) const;  // the bf16 operands and scratch of the adapters' GEMMs
  // out [T, N] = in [T, K] W^T (W [N, K]); in bf16 mode reads in_bf (converted here from in) and the bf16 W.
  void linear(float* out, const float* in, bf16_t* in_bf, const void* w32, const void* w16, int64_t T, int64_t N,
              int64_t K);
  // Backward of linear: din [T, K] (=) = dout W; dW [N, K] += dout^T in.
  void linear_backward(float* din, float* dW, const float* dout, const float* in, const bf16_t* in_bf,
                       const void* w32, const void* w16, int64_t T, int64_t N, int64_t K);

  ModelWeights& w_;
  const ModelConfig& c_;
  DecoderOptions opt_;
  const DecoderKernels* k_;
  RopeTables rope_;
  Workspace ws_;
  int64_t T_ = 0;
  const PackedBatch* batch_ = nullptr;
  std::vector<LayerActs> acts_;
  float* x_final_ = nullptr;  // [T, C] input of the final norm
  Scratch s_{};
  std::unique_ptr<VisionTower> vision_;
  std::vector<uint8_t> mrope_axes_;   // [D/2]
  std::vector<int32_t> pos3_;         // [3, T]
  std::vector<int64_t> rope_deltas_;  // [S]
  std::vector<uint8_t> picture_pad_;  // [T] 1 for the <|image_pad|> tokens that show a picture
  std::vector<int32_t> pad_rows_;     // their rows, in order
  bool pictures_ = false;             // the last batch had pictures
  DecoderHooks* hooks_ = nullptr;
  const LoraAdapters* lora_ = nullptr;
};

}  // namespace grpo
