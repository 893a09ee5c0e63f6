// RoPE tables (see rope_tables.h). YaRN follows transformers' _compute_yarn_parameters: frequencies
// blended between inv_freq/factor and inv_freq by a linear ramp between the correction dims of beta_fast
// and beta_slow, and cos/sin scaled by 0.1 ln(factor) + 1 unless attention_factor is given.
#include "model/rope_tables.h"

#include <algorithm>
#include <cmath>

namespace grpo {

std::vector<double> rope_inv_freq(const ModelConfig& c, double* attention_factor) {
  const int64_t D = c.head_dim, half = D / 2;
  const double base = c.rope_theta;
  std::vector<double> inv(half);
  for (int64_t i = 0; i < half; ++i) inv[i] = 1.0 / std::pow(base, static_cast<double>(2 * i) / D);
  double att = 1.0;
  const RopeScaling& rs = c.rope_scaling;
  if (rs.type == "yarn") {
    const double factor = rs.factor;
    const double orig = rs.original_max_position_embeddings > 0 ? rs.original_max_position_embeddings
                                                                 : c.max_position_embeddings;
    auto correction_dim = [&](double rotations) {
      return (D * std::log(orig / (rotations * 2 * M_PI))) / (2 * std::log(base));
    };
    double low = std::max(0.0, std::floor(correction_dim(rs.beta_fast)));
    double high = std::min(static_cast<double>(D - 1), std::ceil(correction_dim(rs.beta_slow)));
    if (low == high) high += 0.001;
    for (int64_t i = 0; i < half; ++i) {
      double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
      double extrapolation = 1.0 - ramp;
      inv[i] = (inv[i] / factor) * (1.0 - extrapolation) + inv[i] * extrapolation;
    }
    att = rs.attention_factor > 0 ? rs.attention_factor : (factor > 1 ? 0.1 * std::log(factor) + 1.0 : 1.0);
  } else if (rs.type == "linear") {
    for (double& f : inv) f /= rs.factor;
  }
  if (attention_factor) *attention_factor = att;
  return inv;
}

RopeTables make_rope_tables(const ModelConfig& c, int64_t positions) {
  RopeTables t;
  t.positions = positions;
  t.half = c.head_dim / 2;
  double att = 1.0;
  std::vector<double> inv = rope_inv_freq(c, &att);
  t.cos.resize(positions * t.half);
  t.sin.resize(positions * t.half);
  for (int64_t p = 0; p < positions; ++p)
    for (int64_t i = 0; i < t.half; ++i) {
      double a = static_cast<double>(p) * inv[i];
      t.cos[p * t.half + i] = static_cast<float>(std::cos(a) * att);
      t.sin[p * t.half + i] = static_cast<float>(std::sin(a) * att);
    }
  return t;
}

}  // namespace grpo
