// PictureBatch bookkeeping and pad expansion (see picture.h).
#include "image/picture.h"

#include "core/error.h"

namespace grpo {

int64_t PictureBatch::rows() const {
  int64_t n = 0;
  for (const ImageGrid& g : grids) n += g.patches();
  return n;
}

int64_t PictureBatch::tokens() const {
  int64_t n = 0;
  for (const ImageGrid& g : grids) n += g.tokens(merge_size);
  return n;
}

int64_t PictureBatch::row_offset(int64_t picture) const {
  GRPO_CHECK(picture >= 0 && picture <= pictures(), "[image] picture ", picture, " of ", pictures());
  int64_t r = 0;
  for (int64_t k = 0; k < picture; ++k) r += grids[static_cast<size_t>(k)].patches();
  return r;
}

void PictureBatch::append(const PictureBatch& other) {
  if (other.grids.empty()) return;
  if (grids.empty() && pixel_values.empty()) {
    row_width = other.row_width;
    merge_size = other.merge_size;
  }
  GRPO_CHECK(row_width == other.row_width && merge_size == other.merge_size, "[image] cannot join pictures with rows of ",
             row_width, " values (merge ", merge_size, ") and ", other.row_width, " values (merge ", other.merge_size,
             ")");
  pixel_values.insert(pixel_values.end(), other.pixel_values.begin(), other.pixel_values.end());
  grids.insert(grids.end(), other.grids.begin(), other.grids.end());
}

std::vector<int32_t> expand_image_pads(std::span<const int32_t> ids, int32_t pad_id, std::span<const ImageGrid> grids,
                                       int64_t merge_size) {
  GRPO_CHECK(merge_size >= 1, "[image] merge_size must be >= 1, got ", merge_size);
  size_t pads = 0;
  for (int32_t id : ids) pads += id == pad_id;
  GRPO_CHECK(pads == grids.size(), "[image] the prompt has ", pads, " image placeholders (token ", pad_id, ") but ",
             grids.size(), " pictures");
  std::vector<int32_t> out;
  out.reserve(ids.size());
  size_t k = 0;
  for (int32_t id : ids) {
    if (id != pad_id) {
      out.push_back(id);
      continue;
    }
    const int64_t n = grids[k++].tokens(merge_size);
    GRPO_CHECK(n >= 1, "[image] picture ", k, " has no tokens (grid ", grids[k - 1].t, "x", grids[k - 1].h, "x",
               grids[k - 1].w, ", merge ", merge_size, ")");
    out.insert(out.end(), static_cast<size_t>(n), pad_id);
  }
  return out;
}

}  // namespace grpo
