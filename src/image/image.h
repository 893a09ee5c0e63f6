// Pictures in memory and in files: 8-bit RGB images decoded from PNG (libpng) or JPEG (libjpeg-turbo),
// whatever their stored form, converted as Pillow's convert("RGB") does: palette expanded, grey copied to
// the three channels, alpha dropped (not composited), 16-bit samples cut to their high byte, interlaced
// PNG and progressive JPEG read whole, CMYK/YCCK JPEG converted (Adobe's inverted CMYK recognised).
// Deviation from Pillow: 16-bit grey keeps its high byte (Pillow clips the 16-bit value to 255).
// Bad input (not a picture, truncated, corrupt, 0 pixels, over the pixel limit, unreadable) throws
// grpo::Error "[image] NAME: ..." and never crashes: the C libraries' errors return through setjmp
// frames that hold no C++ objects. PNG writing too (the built-in picture tasks).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace grpo {

struct Image {
  int64_t height = 0, width = 0;
  std::vector<uint8_t> rgb;  // [height, width, 3] row-major, 8 bits per channel
};

enum class ImageFormat { Png, Jpeg };
const char* image_format_name(ImageFormat f);

struct ImageInfo {
  ImageFormat format = ImageFormat::Png;
  int64_t height = 0, width = 0;
};

struct ImageLimits {
  // Pictures with more pixels are refused before any pixel memory is allocated (Pillow's
  // decompression-bomb error threshold, 2 x 89,478,485).
  int64_t max_pixels = 178956970;
};

// Size and format from the header alone (cheap: no pixel data is decoded). Checks the signature, a
// non-zero size and the pixel limit; truncated or corrupt pixel data is only found by decoding.
ImageInfo probe_image(std::span<const uint8_t> bytes, const std::string& name, const ImageLimits& limits = {});
// Decodes the whole picture into RGB.
Image decode_image(std::span<const uint8_t> bytes, const std::string& name, const ImageLimits& limits = {});

// The same on a file (its path names it in errors).
ImageInfo probe_image_file(const std::string& path, const ImageLimits& limits = {});
Image load_image(const std::string& path, const ImageLimits& limits = {});

// PNG bytes of an RGB picture (8-bit, not interlaced, deterministic); write_png writes them atomically.
std::string encode_png(const Image& image);
void write_png(const std::string& path, const Image& image);

}  // namespace grpo
