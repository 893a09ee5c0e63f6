// A preprocessed picture as the model consumes it: its patch grid (image_grid_thw) and pixel_values rows
// [grid.patches(), patch_dim] in the processor's row order, plus a hash of both that identifies the content
// (the rollout's prefix cache keys the picture's <|image_pad|> tokens by it).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "model/batch.h"

namespace grpo {

struct Picture {
  ImageGrid grid;
  std::vector<float> pixel_values;  // [grid.patches(), patch_dim]
  uint64_t hash = 0;                // of grid and pixel bytes (make_picture)
};
using PicturePtr = std::shared_ptr<const Picture>;

// Checks that pixel_values holds grid.patches() rows of patch_dim floats and computes the hash.
PicturePtr make_picture(const ImageGrid& grid, std::vector<float> pixel_values, int64_t patch_dim);

// Appends the pictures of the packed batch's last sequence (pixel rows and grids, in order).
void add_pictures(PackedBatch& batch, const std::vector<PicturePtr>& pictures);

}  // namespace grpo
