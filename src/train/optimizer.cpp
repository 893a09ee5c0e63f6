// AdamW with global-norm clipping over flat arenas (see optimizer.h).
#include "train/optimizer.h"

#include <cmath>

#include "core/profiler.h"
#include "kernels/ops.h"

namespace grpo::train {

AdamW::AdamW(const ModelConfig& c, bool with_vision) : m_(DType::F32), v_(DType::F32) {
  declare_parameters(c, m_, with_vision);
  declare_parameters(c, v_, with_vision);
  m_.allocate();
  v_.allocate();
}

StepReport AdamW::step(Arena& params, const Arena& grads, const AdamWConfig& cfg, float lr) {
  GRPO_PROFILE("adamw_step");
  GRPO_CHECK(grads.numel() == m_.numel() && params.numel() >= grads.numel(),
             "[adamw] gradient and moment arenas differ in size, or exceed the parameters");
  StepReport r;
  r.lr = lr;
  const int64_t n = grads.numel();  // all parameters, or the text prefix when the tower is frozen
  // Padding between tensors is zero in every arena, so whole-buffer loops are exact.
  r.grad_norm = std::sqrt(ops::sum_squares(grads.flat().f32(), n));
  if (!std::isfinite(r.grad_norm)) {
    r.skipped = true;
    return r;
  }
  float scale = 1.0f;
  if (cfg.grad_clip > 0 && r.grad_norm > cfg.grad_clip) scale = static_cast<float>(cfg.grad_clip / (r.grad_norm + 1e-6));
  ++step_;
  ops::adamw_step(params.flat().f32(), grads.flat().f32(), m_.flat().f32(), v_.flat().f32(), n, lr, cfg.beta1,
                  cfg.beta2, cfg.eps, cfg.weight_decay, step_, scale);
  return r;
}

float scheduled_lr(float lr, int64_t step, int64_t total, int64_t warmup_steps, const std::string& style,
                   float min_lr_ratio) {
  if (warmup_steps > 0 && step < warmup_steps) return lr * static_cast<float>(step + 1) / warmup_steps;
  if (style == "constant") return lr;
  if (style == "cosine") {
    const int64_t span = std::max<int64_t>(1, total - warmup_steps);
    const double progress = std::min(1.0, static_cast<double>(step - warmup_steps) / span);
    const double cosine = 0.5 * (1.0 + std::cos(M_PI * progress));
    return static_cast<float>(lr * (min_lr_ratio + (1.0 - min_lr_ratio) * cosine));
  }
  fail("[optimizer] unknown lr schedule \"", style, "\", expected constant or cosine");
}

}  // namespace grpo::train
