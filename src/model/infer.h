// The decoder's inference step for generation: runs a packed set of new tokens (decode tokens and/or
// prefill chunks of several sequences) over a paged KV cache, writes their k/v into it, and returns the
// next-token logits of selected rows. Nothing is saved for backward; scratch comes from the caller's
// workspace (sized once by workspace_bytes), so a decode step allocates nothing.
//
// Qwen3-VL: encode_prompt runs the vision tower once on a prompt's pictures and gives the prompt's M-RoPE
// positions, its rope_delta and the features of its <|image_pad|> tokens; steps then take the M-RoPE
// positions of their tokens and, for image-pad tokens, those features (embedding, then DeepStack k).
//
// LoRA (set_lora): each adapted linear adds s (x A^T) B^T, unmerged: u = x A^T by the same decode matmul as
// the base weights, one f32 GEMV for the linears that read the same input (q/k/v, gate/up), then u B^T added
// into the output rows by ops::add_low_rank_t; both compute a row independently of the batch (batch invariance).
// The tower's adapted linears (Qwen3-VL) run in encode_prompt through the training tower's own code.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/arena.h"
#include "kernels/paged_ops.h"
#include "model/decoder.h"
#include "model/lora.h"
#include "model/picture.h"
#include "model/vision.h"
#include "model/rope_tables.h"
#include "model/weights.h"

namespace grpo {

struct InferStep {
  const int32_t* tokens;     // [T]
  const int32_t* positions;  // [T] position within the token's sequence
  const int32_t* seq_index;  // [T] sequence of the step (0..S-1); a sequence's tokens are contiguous
  const int32_t* slots;      // [T] KV cache slot where the token's k/v are written
  int64_t T, S;
  const int32_t* block_table_indptr;  // [S+1]
  const int32_t* block_table;         // block ids of each sequence in order
  const int32_t* logits_rows;         // [R] rows of the step whose next-token logits are wanted
  int64_t R;
  // Qwen3-VL (null: plain RoPE at `positions`, token embeddings only):
  const int32_t* mrope_positions = nullptr;  // [3, T] (temporal, height, width) rope positions
  const float* const* features = nullptr;    // [T] image-pad rows: PromptVision::features rows, else null
};

// What a Qwen3-VL prompt needs at every step, computed once (encode_prompt).
struct PromptVision {
  std::vector<int32_t> positions;   // [3, n] M-RoPE positions of the prompt's tokens
  int64_t rope_delta = 0;           // a generated token at index i takes i + rope_delta on all three axes
  std::vector<int32_t> pad_index;   // [n] k for the prompt's k-th <|image_pad|> token, -1 for other tokens
  std::vector<int32_t> pad_picture; // [pads] the picture each <|image_pad|> token shows
  int64_t feature_width = 0;        // (1 + DeepStack mergers) * hidden_size
  std::vector<float> features;      // [pads, feature_width]: the image embedding, then DeepStack k's feature
  double vision_seconds = 0;        // time spent in the vision tower
  int64_t patches = 0;              // patch rows it ran on
};

class InferenceModel {
 public:
  // mode BF16 reads the bf16 shadow of the weights (half the memory traffic per decode step).
  // `matmul`: see ops::DecodeMatmul (OneDnn is the unoptimised baseline of the benchmarks).
  InferenceModel(ModelWeights& weights, ComputeMode mode,
                 ops::DecodeMatmul matmul = ops::DecodeMatmul::BatchInvariant);

  size_t workspace_bytes(int64_t max_tokens, int64_t max_rows, int64_t block_size) const;
  // The same for a model of config `c` (with LoRA adapters of rank `lora_rank`) before any is built (the
  // memory plan).
  static size_t workspace_bytes_for(const ModelConfig& c, int64_t max_tokens, int64_t max_rows, int64_t block_size,
                                    int64_t lora_rank = 0);
  // logits [R, V] (raw, no temperature).
  void forward(const InferStep& step, const ops::PagedKvView& kv, float* logits, Workspace& ws) const;
  // Qwen3-VL only: the prompt's positions, delta and pad features; the pictures are those of its
  // <|image_pad|> runs in order (errors name `where`). The vision tower runs only when there are pictures.
  PromptVision encode_prompt(const std::vector<int32_t>& prompt, const std::vector<PicturePtr>& pictures,
                             const std::string& where);

  const ModelConfig& config() const { return w_.config(); }
  ComputeMode mode() const { return mode_; }
  // Adapters read by every later forward (null: none). They must stay alive; their values may change
  // between steps (the trainer updates them in place).
  void set_lora(const LoraAdapters* lora) { lora_ = lora; }

 private:
  void matmul(float* y, const float* x, bf16_t* x_bf, const void* w32, const void* w16, int64_t T, int64_t N,
              int64_t K) const;
  // y [T, packed] += s (x A^T) B^T for the adapted slots of group gi (kLoraGroups) of layer l: one decode
  // matmul for the group's A matrices, then each B through ops::add_low_rank_t; u [T, 3r] scratch.
  void lora(int64_t l, LoraGroupIndex gi, float* y, const float* x, float* u, int64_t T) const;

  ModelWeights& w_;
  ComputeMode mode_;
  ops::DecodeMatmul matmul_;
  RopeTables rope_;
  std::vector<uint8_t> mrope_axes_;      // [D/2] (Qwen3-VL)
  std::unique_ptr<VisionTower> vision_;  // created on the first prompt with pictures
  const LoraAdapters* lora_ = nullptr;
};

}  // namespace grpo
