// M-RoPE positions and frequency axes (see mrope.h).
#include "model/mrope.h"

#include <algorithm>

#include "core/error.h"

namespace grpo {

int64_t mrope_positions(const ModelConfig& c, const int32_t* ids, int64_t n, const SequencePictures& pictures,
                        int32_t* pos3, int64_t ld, uint8_t* picture_pad, const std::string& where) {
  const int64_t m = c.vision.spatial_merge_size;
  int32_t *pt = pos3, *ph = pos3 + ld, *pw = pos3 + 2 * ld;
  int64_t p = 0, largest = -1, placed = 0;
  for (int64_t i = 0; i < n;) {
    const bool pad = ids[i] == c.image_token_id && placed < pictures.count;
    if (!pad) {
      const bool stray = ids[i] == c.image_token_id || ids[i] == c.video_token_id;
      GRPO_CHECK(!stray || pictures.extra_pads_are_text, "[mrope] ", where, ": token ", i, " is ",
                 ids[i] == c.video_token_id ? "<|video_pad|> (video inputs are not supported)"
                                            : cat("<|image_pad|> but all ", pictures.count, " pictures are placed"));
      pt[i] = ph[i] = pw[i] = static_cast<int32_t>(p);
      if (picture_pad) picture_pad[i] = 0;
      largest = p++;
      ++i;
      continue;
    }
    const ImageGrid& g = pictures.grids[placed++];
    const int64_t gh = g.h / m, gw = g.w / m, count = g.t * gh * gw;
    for (int64_t k = 0; k < count; ++k)
      GRPO_CHECK(i + k < n && ids[i + k] == c.image_token_id, "[mrope] ", where, ": picture ", placed - 1, " (grid ",
                 g.t, "x", g.h, "x", g.w, ") needs ", count, " <|image_pad|> tokens from token ", i, ", found ", k);
    for (int64_t k = 0; k < count; ++k) {
      const int64_t ti = k / (gh * gw), hi = k / gw % gh, wi = k % gw;
      pt[i + k] = static_cast<int32_t>(p + ti);
      ph[i + k] = static_cast<int32_t>(p + hi);
      pw[i + k] = static_cast<int32_t>(p + wi);
      if (picture_pad) picture_pad[i + k] = 1;
    }
    largest = p + std::max({g.t - 1, gh - 1, gw - 1});
    p = largest + 1;
    i += count;
  }
  GRPO_CHECK(placed == pictures.count, "[mrope] ", where, ": ", pictures.count, " pictures but <|image_pad|> runs for ",
             placed);
  return largest + 1 - n;
}

std::vector<uint8_t> mrope_axes(const ModelConfig& c) {
  const int64_t half = c.head_dim / 2;
  std::vector<uint8_t> axis(half, 0);
  for (int64_t j = 0; j < half; ++j) {
    if (j % 3 == 1 && j < 3 * c.mrope_section[1]) axis[j] = 1;
    else if (j % 3 == 2 && j < 3 * c.mrope_section[2]) axis[j] = 2;
  }
  return axis;
}

}  // namespace grpo
