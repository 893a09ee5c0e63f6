// Bicubic resizing of 8-bit RGB pictures as Pillow's Image.resize(size, Image.BICUBIC) computes it (what
// Hugging Face's slow Qwen2VLImageProcessor calls): the Keys cubic with a = -0.5, its support widened by
// the scale when shrinking (antialiasing), per-output weights normalised to sum 1 and rounded to 22-bit
// fixed point, a horizontal pass into an 8-bit intermediate, then a vertical pass, each rounded and
// clipped to 0..255. Bit-exact with Pillow 9.4 on the reference case (shared/reference: image_c.resized).
#pragma once
#include <cstdint>

#include "image/image.h"

namespace grpo {

// A same-size resize returns a copy (as Pillow does). Throws for a non-positive size.
Image resize_bicubic(const Image& in, int64_t height, int64_t width);

}  // namespace grpo
