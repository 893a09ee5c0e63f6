// The format-specific halves of image.h, for codec.cpp's dispatch: each checks its own signature's
// contents and throws grpo::Error naming `name`. Not a public interface.
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "image/image.h"

namespace grpo::codecs {

bool is_png(std::span<const uint8_t> bytes);
bool is_jpeg(std::span<const uint8_t> bytes);

ImageInfo probe_png(std::span<const uint8_t> bytes, const std::string& name);
Image decode_png(std::span<const uint8_t> bytes, const std::string& name, const ImageLimits& limits);
ImageInfo probe_jpeg(std::span<const uint8_t> bytes, const std::string& name);
Image decode_jpeg(std::span<const uint8_t> bytes, const std::string& name, const ImageLimits& limits);

// Throws when a decoded size is zero or over the limit.
void check_size(int64_t height, int64_t width, const std::string& name, const ImageLimits& limits);

}  // namespace grpo::codecs
