// libFuzzer target: picture decoding (PNG via libpng, JPEG via libjpeg-turbo) over arbitrary bytes. Every
// input must either decode to a consistent RGB picture (and then probe to the same size and preprocess
// or be refused by smart_resize) or throw grpo::Error; never crash, hang, leak or read out of bounds.
// The pixel limit is lowered so that huge headers are refused quickly. Seeds: fuzz/corpus/images/.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "core/error.h"
#include "image/image.h"
#include "image/preprocess.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  grpo::ImageLimits limits;
  limits.max_pixels = 1 << 18;
  const std::span<const uint8_t> bytes(data, size);
  try {
    const grpo::Image img = grpo::decode_image(bytes, "fuzz", limits);
    if (img.height <= 0 || img.width <= 0 || img.rgb.size() != static_cast<size_t>(img.height * img.width * 3))
      std::abort();
    const grpo::ImageInfo info = grpo::probe_image(bytes, "fuzz", limits);
    if (info.height != img.height || info.width != img.width) std::abort();
    grpo::ImageProcessorConfig c;
    c.min_pixels = 1024;
    c.max_pixels = 16384;
    try {
      const grpo::PictureBatch b = grpo::preprocess_image(img, c, "fuzz");
      if (b.pixel_values.size() != static_cast<size_t>(b.rows() * b.row_width)) std::abort();
    } catch (const grpo::Error&) {
      // smart_resize refuses tiny or extreme pictures
    }
  } catch (const grpo::Error&) {
  }
  return 0;
}
