// The interface between the rollout engine and a decoder model. The engine packs each step's tokens
// (decodes and prefill chunks of many sequences) into a ForwardBatch; the model runs them over the paged KV
// cache and returns next-token logits for the requested rows. The real decoder (src/model) implements it.
// A vision-language model also encodes each prompt with pictures once (encode_prompt: the vision tower,
// M-RoPE positions); the engine then passes every step's rope positions and image-pad features.
#pragma once
#include <cstddef>
#include <cstdint>

#include <string>
#include <vector>

#include "core/arena.h"
#include "core/error.h"
#include "kernels/paged_ops.h"
#include "model/infer.h"

namespace grpo::rollout {

// One forward step of the engine over a packed set of tokens.
struct ForwardBatch {
  const int32_t* tokens = nullptr;     // [T] token ids to process
  const int32_t* positions = nullptr;  // [T] absolute positions within their sequence
  const int32_t* seq_index = nullptr;  // [T] index into the step's sequences (0..S-1), a sequence's tokens contiguous
  const int32_t* slots = nullptr;      // [T] KV cache slot of each token (where its k/v are written)
  int64_t T = 0, S = 0;
  const int32_t* block_table_indptr = nullptr;  // [S+1]
  const int32_t* block_table = nullptr;         // block ids of each sequence, in order
  const int32_t* logits_rows = nullptr;         // [R] token rows whose next-token logits are needed
  int64_t R = 0;
  // Vision-language models (null otherwise, and in steps without pictures):
  const int32_t* mrope_positions = nullptr;  // [3, T] rope positions (temporal, height, width)
  const float* const* features = nullptr;    // [T] an image-pad token's PromptVision::features row, else null
};

class RolloutModel {
 public:
  virtual ~RolloutModel() = default;
  virtual int64_t vocab_size() const = 0;
  virtual int64_t num_layers() const = 0;
  virtual int64_t num_kv_heads() const = 0;
  virtual int64_t head_dim() const = 0;
  virtual int64_t max_positions() const = 0;
  // Runs the model on batch.tokens, writing each layer's k/v into `kv` at batch.slots (then attending over
  // positions 0..positions[t] of each token's sequence), and writes logits [R, V] for batch.logits_rows.
  // Must be deterministic, and a token's results must not depend on the other tokens of the batch for the
  // engine's results to be independent of scheduling.
  virtual void forward(const ForwardBatch& batch, const ops::PagedKvView& kv, float* logits, Workspace& ws) = 0;
  // Bytes of workspace forward() needs for up to max_tokens tokens of up to max_seqs sequences (paged
  // attention's scratch also depends on the cache's block size, which the model is built with).
  virtual size_t workspace_bytes(int64_t max_tokens, int64_t max_seqs) const = 0;
  // Vision-language models: whether prompts go through encode_prompt, which runs the vision tower on the
  // prompt's pictures (once per request, never per sample or step) and gives its positions and pad features.
  virtual bool has_vision() const { return false; }
  virtual PromptVision encode_prompt(const std::vector<int32_t>& prompt, const std::vector<PicturePtr>& pictures,
                                     const std::string& where) {
    fail("[rollout] ", where, ": this model takes no pictures");
  }
};

}  // namespace grpo::rollout
