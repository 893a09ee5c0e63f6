// Random initialisation (see init.h).
#include "model/init.h"

#include <algorithm>

#include "core/rng.h"
#include "model/weights.h"

namespace grpo {

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

void init_parameter(const std::string& name, size_t index, int64_t numel, uint64_t seed, double std, float* out) {
  if (ends_with(name, "norm.weight")) {
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
    for (int64_t i = c * kChunk; i < end; ++i) out[i] = static_cast<float>(rng.normal() * std);
  }
}

void init_parameters(ModelWeights& w, uint64_t seed) {
  const ModelConfig& c = w.config();
  std::vector<TensorSpec> specs = expected_tensors(c);
  for (size_t i = 0; i < specs.size(); ++i) {
    TensorView v = w.params().view(specs[i].name);
    init_parameter(specs[i].name, i, v.numel(), seed, c.initializer_range, v.f32());
  }
  if (w.has_bf16()) w.refresh_bf16();
}

}  // namespace grpo
