// Vision tables (see vision_layout.h), following transformers' Qwen3-VL vision model: rot_pos_emb (full-resolution
// patch row and column of every row, looked up in a float32 table of position x inv_freq) and
// fast_pos_embed_interpolate (torch.linspace(0, side - 1, n) in float32, floor/ceil corners, weights
// (1-dy)(1-dx), (1-dy)dx, dy(1-dx), dy dx), both reordered into merge-window order.
#include "model/vision_layout.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace grpo {

namespace {

// torch.linspace(0, end, n) in float32 as the CPU kernel computes it: step = end / (n - 1), the first half
// from the start (i * step), the second half from the end (end - (n - 1 - i) * step).
float linspace_f32(float end, int64_t n, int64_t i) {
  if (n == 1) return 0.0f;
  const float step = end / static_cast<float>(n - 1);
  return i < n / 2 ? step * static_cast<float>(i) : end - step * static_cast<float>(n - 1 - i);
}

// Visits the patches of one temporal slice of a gh x gw picture in pixel_values order: f(row, r, c).
template <typename F>
void for_each_patch(int64_t gh, int64_t gw, int64_t m, F f) {
  int64_t row = 0;
  for (int64_t br = 0; br < gh / m; ++br)
    for (int64_t bc = 0; bc < gw / m; ++bc)
      for (int64_t ir = 0; ir < m; ++ir)
        for (int64_t ic = 0; ic < m; ++ic) f(row++, br * m + ir, bc * m + ic);
}

}  // namespace

void validate_image_grids(const VisionConfig& v, const std::vector<ImageGrid>& grids, int64_t pixel_rows,
                          const std::string& where) {
  const int64_t m = v.spatial_merge_size;
  int64_t rows = 0;
  for (size_t i = 0; i < grids.size(); ++i) {
    const ImageGrid& g = grids[i];
    GRPO_CHECK(g.t >= 1 && g.h >= m && g.w >= m && g.h % m == 0 && g.w % m == 0 && g.h <= (1 << 15) &&
                   g.w <= (1 << 15) && g.t <= (1 << 10),
               "[vision] ", where, ": picture ", i, " has image_grid_thw (", g.t, ", ", g.h, ", ", g.w,
               "), expected t >= 1 and h, w positive multiples of spatial_merge_size ", m);
    rows += g.patches();
  }
  GRPO_CHECK(rows == pixel_rows, "[vision] ", where, ": image_grid_thw gives ", rows, " patch rows, pixel_values has ",
             pixel_rows);
}

void make_vision_layout(const VisionConfig& v, const std::vector<ImageGrid>& grids, VisionLayout* out) {
  const int64_t m = v.spatial_merge_size, half = v.head_dim() / 2, quarter = half / 2, side = v.grid_side();
  int64_t N = 0;
  for (const ImageGrid& g : grids) N += g.patches();
  VisionLayout& L = *out;
  L.N = N;
  L.cu_seqlens.assign(1, 0);
  L.rope_cos.resize(N * half);
  L.rope_sin.resize(N * half);
  L.pos_index.resize(4 * N);
  L.pos_weight.resize(4 * N);

  // inv_freq[i] = 1 / 10000^(2i / half) in float32 (VisionRotaryEmbedding(head_dim / 2)).
  std::vector<float> inv(quarter);
  for (int64_t i = 0; i < quarter; ++i)
    inv[i] = 1.0f / std::pow(10000.0f, static_cast<float>(2 * i) / static_cast<float>(half));
  auto angle_row = [&](float* c, float* s, int64_t r, int64_t col) {
    for (int64_t i = 0; i < quarter; ++i) {
      const float a = static_cast<float>(r) * inv[i], b = static_cast<float>(col) * inv[i];
      c[i] = static_cast<float>(std::cos(static_cast<double>(a)));
      s[i] = static_cast<float>(std::sin(static_cast<double>(a)));
      c[quarter + i] = static_cast<float>(std::cos(static_cast<double>(b)));
      s[quarter + i] = static_cast<float>(std::sin(static_cast<double>(b)));
    }
  };

  int64_t base = 0;
  const float end = static_cast<float>(side - 1);
  for (const ImageGrid& g : grids) {
    const int64_t slice = g.h * g.w;
    for (int64_t t = 0; t < g.t; ++t) {
      L.cu_seqlens.push_back(static_cast<int32_t>(base + (t + 1) * slice));
      for_each_patch(g.h, g.w, m, [&](int64_t row, int64_t r, int64_t c) {
        const int64_t n = base + t * slice + row;
        angle_row(L.rope_cos.data() + n * half, L.rope_sin.data() + n * half, r, c);
        const float y = linspace_f32(end, g.h, r), x = linspace_f32(end, g.w, c);
        const int64_t y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(x);  // .int(): truncation
        const int64_t y1 = std::min(y0 + 1, side - 1), x1 = std::min(x0 + 1, side - 1);
        const float dy = y - static_cast<float>(y0), dx = x - static_cast<float>(x0);
        const int64_t idx[4] = {y0 * side + x0, y0 * side + x1, y1 * side + x0, y1 * side + x1};
        const float wt[4] = {(1.0f - dy) * (1.0f - dx), (1.0f - dy) * dx, dy * (1.0f - dx), dy * dx};
        for (int k = 0; k < 4; ++k) {
          L.pos_index[k * N + n] = static_cast<int32_t>(idx[k]);
          L.pos_weight[k * N + n] = wt[k];
        }
      });
    }
    base += g.t * slice;
  }
}

}  // namespace grpo
