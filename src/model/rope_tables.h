// RoPE cos/sin tables [P, D/2] for a model config: plain (theta^(-2i/D)) or YaRN-scaled frequencies,
// computed in double and stored as f32 (the attention-scaling factor of YaRN is folded into cos and sin).
#pragma once
#include <cstdint>
#include <vector>

#include "model/config.h"

namespace grpo {

struct RopeTables {
  int64_t positions = 0, half = 0;  // P, D/2
  std::vector<float> cos, sin;      // [P, D/2]
};

RopeTables make_rope_tables(const ModelConfig& c, int64_t positions);
// inv_freq[i] for i < D/2 (exposed for tests).
std::vector<double> rope_inv_freq(const ModelConfig& c, double* attention_factor);

}  // namespace grpo
