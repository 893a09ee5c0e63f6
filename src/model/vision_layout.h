// Per-patch tables of a batch of pictures for the Qwen3-VL vision tower, rows in pixel_values order (2x2
// merge windows in raster order, then the 4 patches of a window in raster order, per temporal slice):
// the attention segments (one per picture and temporal slice), the 2D rotary tables of the vision attention
// and the bilinear corners of the learned position table. Computed in float32 the way transformers does
// (rotary angles = float32 position x float32 inv_freq; interpolation coordinates from float32 linspace), so
// the tables match the reference's to the last bits (see rope_8b_case).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/batch.h"
#include "model/config.h"

namespace grpo {

struct VisionLayout {
  int64_t N = 0;                          // patch rows
  std::vector<int32_t> cu_seqlens;        // [segments + 1] prefix sums of the segments' patch counts
  std::vector<float> rope_cos, rope_sin;  // [N, head_dim / 2] angles (row, column) x inv_freq, each a quarter
  std::vector<int32_t> pos_index;         // [4, N] table rows of (floor, floor), (floor, ceil), (ceil, floor), (ceil, ceil)
  std::vector<float> pos_weight;          // [4, N] their bilinear weights
};

// Checks every grid against the tower (t >= 1, h and w positive multiples of spatial_merge_size) and that
// the pictures have `pixel_rows` patch rows in all; errors name `where` and the picture.
void validate_image_grids(const VisionConfig& v, const std::vector<ImageGrid>& grids, int64_t pixel_rows,
                          const std::string& where);
// Fills `out` (its vectors keep their capacity from one batch to the next).
void make_vision_layout(const VisionConfig& v, const std::vector<ImageGrid>& grids, VisionLayout* out);

}  // namespace grpo
