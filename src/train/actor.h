// The actor: the policy being trained. Owns the gradient arena, the AdamW state and the training
// decoder over a shared ModelWeights (the rollout engine reads the same weights). Splits a mini-batch
// into micro-batches (token-budget FFD packing, or the fixed padded baseline), accumulates gradients so
// that the result equals one big batch, and applies one optimizer step. Also computes response log-probs
// for old/reference policies without gradients.
//
// Data parallel (ZeRO-2, over a comm::Communicator with N > 1 ranks): every rank is given the same whole
// mini-batch; its sequences are split across ranks balanced by tokens (train/balance.h), each rank packs its
// share into the same number of micro-batches, and the gradients are reduce-scattered in buckets during
// the backward (train/grad_reducer.h) into per-rank shards of the flat layout. AdamW moments exist for the
// shard only; after the step the updated shards are all-gathered in the rollout dtype (train/param_sync.h).
// ZeRO-3 (DataParallel::zero3) also drops the other shards of the layers' parameters while training and
// gathers each layer just in time (train/param_windows.h); gather_for_rollout() makes the model whole again.
// Loss weights and every statistic are global, so the update is the one a single process would make with
// the same mini-batch (up to the order of fp32 additions).
//
// LoRA (an Actor given LoraAdapters): the base model is frozen (no gradient buffer, no moments, no weight
// gradients in the backward); the gradients, the AdamW moments and the ranks' shards are those of the
// adapters' own flat arena. With several ranks the adapters' gradients (small) are reduce-scattered once
// after the last micro-batch and the updated adapter shards all-gathered in f32. With ZeRO-3 as well: the
// frozen base is held whole on every rank. The rollout reads the whole base at every decode step, so the
// whole base is resident at the step's rollout peak whatever training does; sharding it while training would
// add an all-gather of every layer per micro-batch pass and lower only the training phase's memory, which
// with no base gradients or moments is the base plus activations, below the rollout's base plus KV cache.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "kernels/ops.h"
#include "model/decoder.h"
#include "model/picture.h"
#include "train/aggregation.h"
#include "train/grad_reducer.h"
#include "train/optimizer.h"
#include "train/packing.h"
#include "train/param_sync.h"
#include "train/param_windows.h"
#include "train/policy_objective.h"
#include "train/rollout_correction.h"

namespace grpo::train {

// One prompt + response sequence of a training batch. Per-response-token arrays have response_len()
// entries: entry i belongs to token tokens[prompt_len + i], predicted from position prompt_len + i - 1.
struct TrainSample {
  std::vector<int32_t> tokens;  // prompt + response
  std::vector<PicturePtr> pictures;  // Qwen3-VL: the pictures of the prompt's <|image_pad|> runs, in order
  // Several ranks: the only rank that holds the sample's pictures and trains on it (the rank that generated
  // it: each rank decodes and encodes the pictures of its own prompts only); -1: any rank.
  int home_rank = -1;
  int64_t prompt_len = 0;       // >= 1
  float advantage = 0;
  std::vector<float> token_advantages;  // per response token (reinforce_plus_plus, remax); empty: `advantage`
  bool loss_masked = false;            // excluded from the loss (e.g. truncated responses when masked)
  // verl's response_mask [response_len]: 1 for tokens the model wrote, 0 for inserted ones (the tool turns of
  // a multi-turn response), which stay out of the loss and the response-length counts; empty: all 1.
  std::vector<uint8_t> response_mask;
  std::vector<float> old_logprobs;     // behaviour policy (empty: the current policy, detached)
  std::vector<float> ref_logprobs;     // reference policy (empty when no KL term)
  std::vector<float> rollout_logprobs; // from the rollout engine (for truncated importance sampling)
  int64_t response_len() const { return static_cast<int64_t>(tokens.size()) - prompt_len; }
  // Response tokens in the loss by response_mask (response_len() when it is empty).
  int64_t model_tokens() const;
};

struct MicroBatching {
  bool dynamic = true;          // FFD packing by token budget (else fixed size)
  int64_t max_tokens = 16384;   // token budget per micro-batch (dynamic)
  int64_t micro_batch_size = 4; // sequences per micro-batch (fixed size)
  bool pad = false;             // each micro-batch padded to its longest sequence (use_remove_padding false)
};

// How the gradients of several ranks are combined (fsdp_config in the run config). Unused by one process.
struct DataParallel {
  comm::Wire reduce_wire = comm::Wire::F32;  // fsdp_config.mixed_precision.reduce_dtype
  int64_t bucket_elems = 1 << 20;            // fsdp_config.bucket_cap_mb, in fp32 elements
  bool overlap = true;                       // start each bucket during the backward (else after it)
  bool reduce_per_micro_batch = true;        // reduce every micro-batch (else once, after the last)
  bool zero3 = false;                        // fsdp_config.reshard_after_forward: layers gathered just in time
};

// Rollout vs training log-probs of the same tokens (verl's training/rollout_probs_diff_* and the rollout
// importance weights' rollout_corr/rollout_is_*), over the response tokens in the loss of all ranks.
struct RolloutMismatch {
  double tokens = 0, diff_sum = 0, diff_sq = 0, diff_max = 0;  // |exp(rollout) - exp(old)|
  double is_sum = 0, is_min = 0, is_max = 0;                   // importance weights (when on)
  double rs_tokens = 0, rs_rejected = 0;  // rollout_rs: response tokens looked at, of them rejected
};

struct UpdateStats {
  double loss = 0, pg_loss = 0, kl = 0, entropy = 0, pg_clipfrac = 0, pg_clipfrac_lower = 0, ppo_kl = 0;
  double grad_norm = 0;
  bool skipped = false;        // non-finite loss or gradient: no update
  double packing_efficiency = 1;  // useful_tokens / tokens (see train/packing.h)
  // Of all ranks. tokens: computed (padding included where micro-batches are padded); useful_tokens: the
  // sequences' own. micro_batches: per rank.
  int64_t micro_batches = 0, tokens = 0, useful_tokens = 0, response_tokens = 0;
  double update_weights_s = 0;  // bringing every rank's rollout weights up to date (bf16 shadow, all-gather);
                                // its communication waits are labelled "update_weights" (comm::WaitLabel)
  float lr = 0;
  RolloutMismatch rollout;  // update_policy, samples with rollout log-probs
};

// Rollout correction (algorithm.rollout_correction, train/rollout_correction.h): importance weights between
// the trainer's old log-probs and the rollout engine's, truncated at `threshold`, and rejection criteria
// (which need the old log-probs of every sample).
struct RolloutCorrection {
  RolloutIsLevel level = RolloutIsLevel::Off;
  double threshold = 2.0;
  std::vector<RejectionCriterion> rejection;
};

// The shards of a flat layout of `layout_numel` elements over `ranks` ranks (64-byte aligned): rank r owns
// [begin(r), end(r)) of the gradients and AdamW moments, and under ZeRO-3 of the layers' parameters.
comm::Partition parameter_partition(int64_t layout_numel, int ranks);

// Plans the micro-batches of sequences of the given lengths.
MicroBatchPlan plan_micro_batches(const std::vector<int64_t>& lengths, const MicroBatching& mb);

// This rank's part of a mini-batch: its micro-batches (indices into the mini-batch), as many as every
// other rank's. Sequences with a home rank (home_ranks[i] >= 0; empty: none) go to it; the others are split
// balanced by tokens (with homes present: each to the rank with the fewest tokens so far, longest first).
struct RankPlan {
  MicroBatchPlan plan;
  std::vector<int64_t> sequences;  // this rank's share, ascending
};
RankPlan plan_rank(const std::vector<int64_t>& lengths, const MicroBatching& mb, int rank, int ranks,
                   const std::vector<int>& home_ranks = {});

class Actor {
 public:
  // `comm`: the ranks sharing the work (null: this process alone). freeze_vision_tower (Qwen3-VL): the
  // tower gets no gradient and no optimizer state (its weights stay). With several ranks the tower's
  // parameters are sharded like the language model's (ZeRO-2/3, train/zero_layout.h).
  Actor(ModelWeights& weights, const DecoderOptions& dopt, const MicroBatching& mb, const AdamWConfig& adam,
        comm::Communicator* comm = nullptr, const DataParallel& dp = {}, bool freeze_vision_tower = false,
        LoraAdapters* lora = nullptr);

  // One optimizer step of the policy objective (train/policy_objective.h) over `samples` (a mini-batch, the
  // same on every rank), loss aggregated over the whole mini-batch by `agg` (or the loss mode's own).
  UpdateStats update_policy(const std::vector<TrainSample>& samples, const PolicyObjectiveConfig& loss, LossAggMode agg,
                            float loss_scale_factor, const RolloutCorrection& correction, float lr);
  // One optimizer step of mean cross-entropy over the response tokens of `samples` (SFT).
  UpdateStats update_sft(const std::vector<TrainSample>& samples, float lr);
  // The samples of `samples` (indices, ascending) this rank trains on and computes log-probs of: the only
  // ones whose pictures it needs.
  std::vector<int64_t> share(const std::vector<TrainSample>& samples) const;
  // Response log-probs under `dec` (this actor's decoder or a frozen reference) of the samples of this
  // rank's share of the mini-batch (the share its updates train on); other entries are left empty.
  // Micro-batches of `mb` (null: the actor's own).
  void share_logprobs(Decoder& dec, const std::vector<TrainSample>& samples, std::vector<std::vector<float>>* logprobs,
                      const MicroBatching* mb = nullptr);

  // Checkpoints (collective: every rank calls them). with_whole_weights runs `write` on every rank (rank 0
  // writes) while rank 0 holds the whole f32 model: in bf16 mode it gathers every rank's f32 master shard
  // (the others' GEMM weights travel as bf16 only) and lets its bf16 shadow go meanwhile, rebuilt from the
  // masters after (the same bits the gathers give); ZeRO-3 in f32 mode gathers the layers.
  // gather_for_checkpoint returns, on rank 0, the AdamW moments in the whole flat layout (null elsewhere),
  // valid until the next call (one process, and LoRA, whose moments are small).
  void with_whole_weights(const std::function<void()>& write);
  struct FullMoments {
    const float* m = nullptr;
    const float* v = nullptr;
    int64_t numel = 0;  // the layout's, or its text prefix's with a frozen vision tower
  };
  FullMoments gather_for_checkpoint();
  // ZeRO-3: gathers every rank's parameters, as the rollout engine reads the whole model (no-op otherwise;
  // training drops them again at its first forward).
  void gather_for_rollout();
  // Every rank takes its shard of moments given in the whole flat layout.
  void load_moments(const float* m_full, const float* v_full, int64_t optimizer_steps);
  // This rank's AdamW moments: elements [lo, hi) of the trained ones (sharded checkpoints write them as they are).
  struct MomentRange {
    int64_t lo = 0, hi = 0;
    const float* m = nullptr;  // [hi - lo]
    const float* v = nullptr;
  };
  MomentRange moment_range() const;
  // Full fine-tuning: this rank's f32 master weights, elements [lo, hi) of the layout (its shard, which its
  // optimizer updates; under mixed precision the only f32 GEMM weights it holds).
  struct MasterRange {
    int64_t lo = 0, hi = 0;
    const float* data = nullptr;  // [hi - lo]
  };
  MasterRange master_range() const;
  // Every rank takes its moments given for just its range (moment_range's lo, hi).
  void load_moment_range(const float* m, const float* v, int64_t optimizer_steps);
  // Elements of the flat layout the optimizer trains: all, or the text prefix with a frozen vision tower, or
  // the adapters' arena with LoRA.
  int64_t trained_numel() const { return grads_.numel(); }

  Decoder& decoder() { return dec_; }
  ModelWeights& weights() { return w_; }
  LoraAdapters* lora() { return lora_; }  // null: full fine-tuning
  AdamW& optimizer() { return adam_; }
  const MicroBatching& micro_batching() const { return mb_; }
  int rank() const { return comm_->rank(); }
  int ranks() const { return comm_->size(); }

 private:
  struct ResponseSpan {
    int64_t sample;  // index into the mini-batch
    int64_t first;   // row of its first response token's log-prob in the micro-batch
    int64_t n;       // response tokens
  };
  template <typename LossFn>
  UpdateStats run_update(const std::vector<TrainSample>& samples, LossFn&& loss_fn, float lr);
  void enter_training();  // ZeRO-3: drop the layers' other shards (once after each gather_for_rollout)
  void zero_grads();      // (released: their pages returned, read as zero)
  // After the micro-batches: the gradients reduced into this rank's shard and the statistics summed over the
  // ranks (nonfinite: micro-batches whose loss was not finite); returns the gradients' sum of squares.
  double reduce_update(UpdateStats& st, float* shard, double& nonfinite);
  // The optimizer step on this rank's shard, then the updated weights where the rollout reads them.
  void step_and_sync(UpdateStats& st, float* shard, double sum_sq, float lr);
  // ZeRO-3: a rank with nothing in a micro-batch still takes part in the other ranks' layer gathers (and
  // bucket reductions, started from the same events): its hooks see the events of a forward (and backward)
  // pass in Decoder's order.
  void empty_pass(bool backward);

  // The decoder's hooks: the gradient reducer and the ZeRO-3 layer windows, whichever exist.
  struct Hooks final : DecoderHooks {
    GradReducer* reducer = nullptr;
    ParamWindows* windows = nullptr;
    void forward_layer(int64_t l) override {
      if (windows) windows->forward_layer(l);
    }
    void backward_layer(int64_t l) override {
      if (windows) windows->backward_layer(l);
    }
    void head_done() override {
      if (windows) windows->head_done();
      if (reducer) reducer->head_done();
    }
    void layer_done(int64_t l) override {
      if (reducer) reducer->layer_done(l);
    }
    void embedding_done() override {
      if (windows) windows->embedding_done();
      if (reducer) reducer->embedding_done();
    }
    void vision_forward_block(int64_t b) override {
      if (windows) windows->vision_forward_block(b);
    }
    void vision_backward_block(int64_t b) override {
      if (windows) windows->vision_backward_block(b);
    }
    void vision_block_done(int64_t b) override {
      if (reducer) reducer->vision_block_done(b);
    }
  };

  ModelWeights& w_;
  LoraAdapters* lora_;
  Decoder dec_;
  MicroBatching mb_;
  AdamWConfig adam_cfg_;
  std::unique_ptr<comm::Communicator> own_comm_;  // a LocalCommunicator when none was given
  comm::Communicator* comm_;
  DataParallel dp_;
  comm::Partition part_;
  AdamW adam_;
  Arena grads_;
  ModelTensors grad_tensors_;
  LoraTensors lora_grad_tensors_;  // LoRA: the adapters' gradients (grads_ is their layout)
  bool release_grads_ = false;     // the reducer releases each bucket's gradients once reduced (GradReducer)
  Buffer shard_grads_;  // [part_.size(rank)] reduced gradients (N > 1)
  std::unique_ptr<GradReducer> reducer_;
  std::unique_ptr<ParamSync> sync_;
  std::unique_ptr<ParamWindows> windows_;  // ZeRO-3 only
  Hooks hooks_;
  bool resharded_ = false;  // ZeRO-3: the layers' other shards are dropped
  Buffer full_m_, full_v_;  // rank 0, checkpoints only
};

}  // namespace grpo::train
