// The real decoder (model/infer.h) behind the rollout engine's RolloutModel interface. It reads the
// trainer's weights directly (same ModelWeights object: no copy, no weight sync); in bf16 mode it reads
// their bf16 shadow, which the trainer refreshes in place after each optimizer step.
#pragma once
#include "model/infer.h"
#include "rollout/model_interface.h"

namespace grpo::rollout {

class DecoderRolloutModel : public RolloutModel {
 public:
  DecoderRolloutModel(ModelWeights& weights, ComputeMode mode, int64_t block_size,
                      ops::DecodeMatmul matmul = ops::DecodeMatmul::BatchInvariant)
      : model_(weights, mode, matmul), block_size_(block_size) {}

  int64_t vocab_size() const override { return model_.config().vocab_size; }
  int64_t num_layers() const override { return model_.config().num_hidden_layers; }
  int64_t num_kv_heads() const override { return model_.config().num_key_value_heads; }
  int64_t head_dim() const override { return model_.config().head_dim; }
  int64_t max_positions() const override { return model_.config().max_position_embeddings; }
  void forward(const ForwardBatch& b, const ops::PagedKvView& kv, float* logits, Workspace& ws) override {
    InferStep st{b.tokens, b.positions, b.seq_index, b.slots, b.T, b.S, b.block_table_indptr, b.block_table,
                 b.logits_rows, b.R, b.mrope_positions, b.features};
    model_.forward(st, kv, logits, ws);
  }
  size_t workspace_bytes(int64_t max_tokens, int64_t max_seqs) const override {
    return model_.workspace_bytes(max_tokens, max_seqs, block_size_);
  }
  bool has_vision() const override { return model_.config().has_vision(); }
  // LoRA adapters applied at every step without merging (see InferenceModel::set_lora); set before the
  // engine sizes its workspace.
  void set_lora(const LoraAdapters* lora) { model_.set_lora(lora); }
  PromptVision encode_prompt(const std::vector<int32_t>& prompt, const std::vector<PicturePtr>& pictures,
                             const std::string& where) override {
    return model_.encode_prompt(prompt, pictures, where);
  }

 private:
  InferenceModel model_;
  int64_t block_size_;
};

}  // namespace grpo::rollout
