// What the data side hands the model for pictures (Qwen2-VL / Qwen3-VL layout): per sequence, its token ids
// with each <|image_pad|> expanded to the picture's token count, and a PictureBatch holding the pictures'
// preprocessed patch rows and grids in order of appearance. The rows of picture k start at
// row_offset(k); rows 4j..4j+3 of a picture (merge 2) form its j-th merged token, which replaces its j-th
// pad in the sequence. Produced by image/preprocess.h (one picture) and data/vision_data.h (an example's
// pictures); consumed by the vision tower.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace grpo {

// A picture's patch grid, image_grid_thw: t temporal slices x h rows x w columns of patches.
struct ImageGrid {
  int64_t t = 0, h = 0, w = 0;
  int64_t patches() const { return t * h * w; }
  // Merged tokens, i.e. copies of <|image_pad|>: t * (h / merge) * (w / merge).
  int64_t tokens(int64_t merge_size) const { return patches() / (merge_size * merge_size); }
  bool operator==(const ImageGrid&) const = default;
};

struct PictureBatch {
  int64_t row_width = 0;   // values per patch row: channels * temporal_patch_size * patch^2 (1536 for Qwen3-VL)
  int64_t merge_size = 0;  // spatial merge (2): merge^2 consecutive rows form one token
  std::vector<float> pixel_values;  // [rows(), row_width] f32, pictures concatenated in order of appearance
  std::vector<ImageGrid> grids;     // [pictures()] one grid per picture, same order

  int64_t pictures() const { return static_cast<int64_t>(grids.size()); }
  int64_t rows() const;                        // sum of grids' patches
  int64_t tokens() const;                      // sum of grids' merged tokens (pads in the sequence)
  int64_t row_offset(int64_t picture) const;   // first row of a picture
  const float* row(int64_t r) const { return pixel_values.data() + r * row_width; }
  // Appends another batch's pictures (same row_width and merge_size, or this one empty).
  void append(const PictureBatch& other);
};

// Replaces the k-th occurrence of pad_id in ids by grids[k].tokens(merge_size) copies of it. Throws
// grpo::Error when the number of pad ids differs from the number of grids.
std::vector<int32_t> expand_image_pads(std::span<const int32_t> ids, int32_t pad_id, std::span<const ImageGrid> grids,
                                       int64_t merge_size);

}  // namespace grpo
