// Random initialisation (see init.h).
#include "model/init.h"

#include <algorithm>
#include <cmath>

#include "core/rng.h"
#include "model/weights.h"

namespace grpo {

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
// RMSNorm and LayerNorm weights: input_layernorm, q_norm, norm, norm1, norm2, ... (the module before ".weight").
bool is_norm_weight(const std::string& name) {
  if (!ends_with(name, ".weight")) return false;
  const std::string module = name.substr(0, name.size() - 7);
  return module.substr(module.rfind('.') + 1).find("norm") != std::string::npos;
}
}  // namespace

double parameter_init_std(const ModelConfig& c, const std::string& name) {
  return name.rfind("model.visual.", 0) == 0 ? c.vision.initializer_range : c.initializer_range;
}

void init_parameter(const std::string& name, size_t index, int64_t numel, uint64_t seed, double std, float* out) {
  if (is_norm_weight(name)) {
    std::fill(out, out + numel, 1.0f);
    return;
  }
  if (ends_with(name, ".bias")) {
    std::fill(out, out + numel, 0.0f);
    return;
  }
  constexpr int64_t kChunk = 1 << 16;
  const int64_t chunks = (numel + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    Rng rng({seed, static_cast<uint64_t>(index), static_cast<uint64_t>(c)});
    const int64_t end = std::min(numel, (c + 1) * kChunk);
    // Box-Muller in float, both outputs used (3.5x faster than Rng::normal; tails reach 5.8 sigma).
    for (int64_t i = c * kChunk; i < end; i += 2) {
      const float u1 = 1.0f - rng.uniform_f(), u2 = rng.uniform_f();  // u1 in (0, 1]
      const float radius = std::sqrt(-2.0f * std::log(u1)) * static_cast<float>(std);
      const float angle = 6.2831853f * u2;
      out[i] = radius * std::cos(angle);
      if (i + 1 < end) out[i + 1] = radius * std::sin(angle);
    }
  }
}

void init_parameters(ModelWeights& w, uint64_t seed) {
  const ModelConfig& c = w.config();
  std::vector<TensorSpec> specs = expected_tensors(c);
  for (size_t i = 0; i < specs.size(); ++i) {
    TensorView v = w.params().view(specs[i].name);
    init_parameter(specs[i].name, i, v.numel(), seed, parameter_init_std(c, specs[i].name), v.f32());
  }
  if (w.has_bf16()) w.refresh_bf16();
}

}  // namespace grpo
