// The actor: the policy being trained. Owns the gradient arena, the AdamW state and the training
// decoder over a shared ModelWeights (the rollout engine reads the same weights). Splits a mini-batch
// into micro-batches (token-budget FFD packing, or the fixed padded baseline), accumulates gradients so
// that the result equals one big batch, and applies one optimizer step. Also computes response log-probs
// for old/reference policies without gradients.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/ops.h"
#include "model/decoder.h"
#include "model/picture.h"
#include "train/aggregation.h"
#include "train/optimizer.h"
#include "train/packing.h"

namespace grpo::train {

// One prompt + response sequence of a training batch. Per-response-token arrays have response_len()
// entries: entry i belongs to token tokens[prompt_len + i], predicted from position prompt_len + i - 1.
struct TrainSample {
  std::vector<int32_t> tokens;  // prompt + response
  std::vector<PicturePtr> pictures;  // Qwen3-VL: the pictures of the prompt's <|image_pad|> runs, in order
  int64_t prompt_len = 0;       // >= 1
  float advantage = 0;
  bool loss_masked = false;            // excluded from the loss (e.g. truncated responses when masked)
  std::vector<float> old_logprobs;     // behaviour policy (empty: the current policy, detached)
  std::vector<float> ref_logprobs;     // reference policy (empty when no KL term)
  std::vector<float> rollout_logprobs; // from the rollout engine (for truncated importance sampling)
  int64_t response_len() const { return static_cast<int64_t>(tokens.size()) - prompt_len; }
};

struct MicroBatching {
  bool dynamic = true;          // FFD packing by token budget (else fixed size)
  int64_t max_tokens = 16384;   // token budget per micro-batch (dynamic)
  int64_t micro_batch_size = 4; // sequences per micro-batch (fixed size)
  bool pad = false;             // each micro-batch padded to its longest sequence (use_remove_padding false)
};

struct UpdateStats {
  double loss = 0, pg_loss = 0, kl = 0, entropy = 0, pg_clipfrac = 0, ppo_kl = 0;
  double grad_norm = 0;
  bool skipped = false;        // non-finite loss or gradient: no update
  double packing_efficiency = 1;  // useful_tokens / tokens (see train/packing.h)
  // tokens: computed (padding included where micro-batches are padded); useful_tokens: the sequences' own
  int64_t micro_batches = 0, tokens = 0, useful_tokens = 0, response_tokens = 0;
  double update_weights_s = 0;  // refreshing the bf16 shadow the rollout engine reads
  float lr = 0;
};

// Plans the micro-batches of sequences of the given lengths.
MicroBatchPlan plan_micro_batches(const std::vector<int64_t>& lengths, const MicroBatching& mb);

// Per-response-token log-probs (and entropies if `entropy` is non-null) of every sample under `dec`'s
// weights, forward only. Sequences are processed in micro-batches of `mb`.
void response_logprobs(Decoder& dec, const std::vector<TrainSample>& samples, const MicroBatching& mb,
                       std::vector<std::vector<float>>* logprobs, std::vector<std::vector<float>>* entropy);

class Actor {
 public:
  // freeze_vision_tower (Qwen3-VL): the tower gets no gradient and no optimizer state (its weights stay).
  Actor(ModelWeights& weights, const DecoderOptions& dopt, const MicroBatching& mb, const AdamWConfig& adam,
        bool freeze_vision_tower = false);

  // One optimizer step of the GRPO/PPO objective over `samples` (a mini-batch), loss aggregated over the
  // whole mini-batch by `agg`. tis_cap > 0 enables truncated importance sampling.
  UpdateStats update_policy(const std::vector<TrainSample>& samples, const ops::PolicyLossConfig& loss, LossAggMode agg,
                            float loss_scale_factor, float tis_cap, float lr);
  // One optimizer step of mean cross-entropy over the response tokens of `samples` (SFT).
  UpdateStats update_sft(const std::vector<TrainSample>& samples, float lr);

  Decoder& decoder() { return dec_; }
  ModelWeights& weights() { return w_; }
  AdamW& optimizer() { return adam_; }
  const MicroBatching& micro_batching() const { return mb_; }

 private:
  template <typename LossFn>
  UpdateStats run_update(const std::vector<TrainSample>& samples, LossFn&& loss_fn, float lr);

  ModelWeights& w_;
  Decoder dec_;
  MicroBatching mb_;
  AdamWConfig adam_cfg_;
  AdamW adam_;
  Arena grads_;
  ModelTensors grad_tensors_;
};

}  // namespace grpo::train
