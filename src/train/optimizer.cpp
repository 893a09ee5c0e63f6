// AdamW with global-norm clipping over the flat layout or a shard of it (see optimizer.h).
#include "train/optimizer.h"

#include <cmath>

#include "core/profiler.h"
#include "kernels/ops.h"

namespace grpo::train {

namespace {
int64_t layout_numel(const ModelConfig& c, bool with_vision) {
  Arena a(DType::F32);
  declare_parameters(c, a, with_vision);
  return a.numel();
}
}  // namespace

AdamW::AdamW(const ModelConfig& c, int64_t begin, int64_t end, bool with_vision)
    : AdamW(layout_numel(c, with_vision), begin, end) {}

AdamW::AdamW(int64_t n, int64_t begin, int64_t end) : begin_(begin), end_(end) {
  if (end_ < 0) end_ = n;
  GRPO_CHECK(0 <= begin_ && begin_ <= end_ && end_ <= n, "[adamw] shard [", begin_, ", ", end_,
             ") outside the parameter layout [0, ", n, ")");
  m_ = Buffer(static_cast<size_t>(end_ - begin_) * sizeof(float));
  v_ = Buffer(static_cast<size_t>(end_ - begin_) * sizeof(float));
}

StepReport AdamW::step(Arena& params, const Arena& grads, const AdamWConfig& cfg, float lr) {
  GRPO_PROFILE("adamw_step");
  GRPO_CHECK(begin_ == 0 && end_ == grads.numel() && params.numel() >= grads.numel(),
             "[adamw] gradient and moment layouts differ in size, or exceed the parameters");
  // Padding between tensors is zero in every buffer, so whole-buffer loops are exact.
  const double norm = std::sqrt(ops::sum_squares(grads.flat().f32(), grads.numel()));
  return step_shard(params.flat().f32(), grads.flat().f32(), norm, cfg, lr);
}

StepReport AdamW::step_shard(float* params, const float* shard_grads, double grad_norm, const AdamWConfig& cfg,
                             float lr) {
  StepReport r;
  r.lr = lr;
  r.grad_norm = grad_norm;
  if (!std::isfinite(r.grad_norm)) {
    r.skipped = true;
    return r;
  }
  float scale = 1.0f;
  if (cfg.grad_clip > 0 && r.grad_norm > cfg.grad_clip) scale = static_cast<float>(cfg.grad_clip / (r.grad_norm + 1e-6));
  ++step_;
  ops::adamw_step(params + begin_, shard_grads, m(), v(), end_ - begin_, lr, cfg.beta1, cfg.beta2, cfg.eps,
                  cfg.weight_decay, step_, scale);
  return r;
}

float scheduled_lr(float lr, int64_t step, int64_t total, int64_t warmup_steps, WarmupStyle style, float min_lr_ratio) {
  if (warmup_steps > 0 && step < warmup_steps) return lr * static_cast<float>(step + 1) / warmup_steps;
  if (style == WarmupStyle::Constant) return lr;
  const int64_t span = std::max<int64_t>(1, total - warmup_steps);
  const double progress = std::min(1.0, static_cast<double>(step - warmup_steps) / span);
  const double cosine = 0.5 * (1.0 + std::cos(M_PI * progress));
  return static_cast<float>(lr * (min_lr_ratio + (1.0 - min_lr_ratio) * cosine));
}

}  // namespace grpo::train
