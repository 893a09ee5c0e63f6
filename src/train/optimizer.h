// AdamW over the flat parameter arena: fp32 master weights, moments m and v in two more flat arenas of
// the same layout, bias correction, decoupled weight decay, and global-norm gradient clipping. A step
// whose gradient norm is not finite is skipped (weights and moments untouched) and reported. With a frozen
// vision tower the gradient and moment arenas hold the text part only, a prefix of the parameter arena
// (weights.h): the step updates that prefix and never touches the tower.
#pragma once
#include <cstdint>

#include "core/arena.h"
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
  // Moments sized like the parameters (without the vision tower when with_vision is false), zeroed.
  explicit AdamW(const ModelConfig& c, bool with_vision = true);

  // Applies one update with learning rate `lr` from grads (the layout of params, or of its text prefix) to
  // the parameters grads covers. Does not zero grads.
  StepReport step(Arena& params, const Arena& grads, const AdamWConfig& cfg, float lr);

  int64_t steps() const { return step_; }
  void set_steps(int64_t s) { step_ = s; }
  Arena& m() { return m_; }
  const Arena& m() const { return m_; }
  Arena& v() { return v_; }
  const Arena& v() const { return v_; }

 private:
  Arena m_, v_;
  int64_t step_ = 0;
};

// Learning rate at optimizer step `step` (0-based) of `total`: linear warm-up over warmup_steps, then
// constant ("constant") or cosine decay to min_lr_ratio * lr ("cosine").
float scheduled_lr(float lr, int64_t step, int64_t total, int64_t warmup_steps, const std::string& style,
                   float min_lr_ratio = 0.0f);

}  // namespace grpo::train
