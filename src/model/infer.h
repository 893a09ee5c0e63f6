// The decoder's inference step for generation: runs a packed set of new tokens (decode tokens and/or
// prefill chunks of several sequences) over a paged KV cache, writes their k/v into it, and returns the
// next-token logits of selected rows. Nothing is saved for backward; scratch comes from the caller's
// workspace (sized once by workspace_bytes), so a decode step allocates nothing.
#pragma once
#include <cstdint>

#include "core/arena.h"
#include "kernels/paged_ops.h"
#include "model/decoder.h"
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
};

class InferenceModel {
 public:
  // mode BF16 reads the bf16 shadow of the weights (half the memory traffic per decode step).
  // `matmul`: see ops::DecodeMatmul (OneDnn is the unoptimised baseline of the benchmarks).
  InferenceModel(ModelWeights& weights, ComputeMode mode,
                 ops::DecodeMatmul matmul = ops::DecodeMatmul::BatchInvariant);

  size_t workspace_bytes(int64_t max_tokens, int64_t max_rows, int64_t block_size) const;
  // logits [R, V] (raw, no temperature).
  void forward(const InferStep& step, const ops::PagedKvView& kv, float* logits, Workspace& ws) const;

  const ModelConfig& config() const { return w_.config(); }
  ComputeMode mode() const { return mode_; }

 private:
  void matmul(float* y, const float* x, bf16_t* x_bf, const void* w32, const void* w16, int64_t T, int64_t N,
              int64_t K) const;

  ModelWeights& w_;
  ComputeMode mode_;
  ops::DecodeMatmul matmul_;
  RopeTables rope_;
};

}  // namespace grpo
