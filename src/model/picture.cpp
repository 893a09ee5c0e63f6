// Pictures (see picture.h): validation and content hash (splitmix64 chained over the grid and the pixel bits).
#include "model/picture.h"

#include <cstring>

#include "core/error.h"
#include "core/rng.h"

namespace grpo {

PicturePtr make_picture(const ImageGrid& grid, std::vector<float> pixel_values, int64_t patch_dim) {
  GRPO_CHECK(grid.t >= 1 && grid.h >= 1 && grid.w >= 1, "[picture] grid (", grid.t, ", ", grid.h, ", ", grid.w,
             ") must be positive");
  GRPO_CHECK(static_cast<int64_t>(pixel_values.size()) == grid.patches() * patch_dim, "[picture] grid (", grid.t, ", ",
             grid.h, ", ", grid.w, ") needs ", grid.patches(), " rows of ", patch_dim, " pixel values, got ",
             pixel_values.size(), " values");
  auto p = std::make_shared<Picture>();
  p->grid = grid;
  p->pixel_values = std::move(pixel_values);
  uint64_t x = 0x5851f42d4c957f2dull;
  uint64_t h = splitmix64(x);
  auto mix = [&](uint64_t v) {
    x = h ^ (v * 0x9e3779b97f4a7c15ull);
    h = splitmix64(x);
  };
  mix(static_cast<uint64_t>(grid.t));
  mix(static_cast<uint64_t>(grid.h));
  mix(static_cast<uint64_t>(grid.w));
  for (float f : p->pixel_values) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    mix(bits);
  }
  p->hash = h;
  return p;
}

void add_pictures(PackedBatch& batch, const std::vector<PicturePtr>& pictures) {
  for (const PicturePtr& p : pictures)
    batch.add_pictures(p->pixel_values.data(), static_cast<int64_t>(p->pixel_values.size()), {p->grid});
}

}  // namespace grpo
