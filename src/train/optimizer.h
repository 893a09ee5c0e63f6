// AdamW over the flat parameter layout (model/weights.h): fp32 master weights, moments m and v, bias
// correction, decoupled weight decay, global-norm gradient clipping. A step whose gradient norm is not
// finite is skipped (weights and moments untouched) and reported.
//
// The optimizer may own a shard [begin, end) of the layout only (ZeRO: each rank updates its 1/N of the
// parameters); its moments then cover that shard, and the global gradient norm comes from the caller.
// One process owns the whole layout. With a frozen vision tower the layout is the text part, a prefix of
// the parameters' (weights.h): the tower gets no moments and is never touched.
#pragma once
#include <cstdint>
#include <string>

#include "core/arena.h"
#include "core/names.h"
#include "model/weights.h"

namespace grpo::train {

struct AdamWConfig {
  float lr = 1e-6f;
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  float weight_decay = 0.01f;
  float grad_clip = 1.0f;  // max global L2 norm; <= 0: no clipping
};

struct StepReport {
  double grad_norm = 0;  // before clipping
  bool skipped = false;  // non-finite gradient: nothing was updated
  float lr = 0;
};

class AdamW {
 public:
  // Moments for elements [begin, end) of the flat layout of `c` (end < 0: the whole layout), zeroed; the
  // layout without the vision tower when with_vision is false.
  explicit AdamW(const ModelConfig& c, int64_t begin = 0, int64_t end = -1, bool with_vision = true);
  // Moments for elements [begin, end) of a flat layout of `layout_numel` elements (end < 0: all of it), e.g.
  // the LoRA adapters' arena.
  AdamW(int64_t layout_numel, int64_t begin, int64_t end);

  // The whole layout: computes the gradient norm from grads (the layout of params, or its text prefix) and
  // updates the parameters grads covers. Does not zero grads.
  StepReport step(Arena& params, const Arena& grads, const AdamWConfig& cfg, float lr);
  // The shard: params points at the whole flat layout (elements [begin, end) are updated), shard_grads at
  // the shard's gradients (shard_grads[0] is element begin); grad_norm is the global norm of all shards.
  StepReport step_shard(float* params, const float* shard_grads, double grad_norm, const AdamWConfig& cfg, float lr);

  int64_t steps() const { return step_; }
  void set_steps(int64_t s) { step_ = s; }
  int64_t begin() const { return begin_; }
  int64_t end() const { return end_; }
  float* m() { return static_cast<float*>(m_.data()); }  // [end - begin]
  float* v() { return static_cast<float*>(v_.data()); }
  const float* m() const { return static_cast<const float*>(m_.data()); }
  const float* v() const { return static_cast<const float*>(v_.data()); }

 private:
  int64_t begin_, end_;
  Buffer m_, v_;
  int64_t step_ = 0;
};

// The learning rate after the warm-up (verl's optim.warmup_style): constant, or cosine decay.
enum class WarmupStyle { Constant, Cosine };
inline constexpr auto kWarmupStyleNames =
    name_table<WarmupStyle>({{WarmupStyle::Constant, "constant"}, {WarmupStyle::Cosine, "cosine"}});

// Learning rate at optimizer step `step` (0-based) of `total`: linear warm-up over warmup_steps, then
// constant or cosine decay to min_lr_ratio * lr.
float scheduled_lr(float lr, int64_t step, int64_t total, int64_t warmup_steps, WarmupStyle style,
                   float min_lr_ratio = 0.0f);

}  // namespace grpo::train
