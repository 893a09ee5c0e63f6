// Image preprocessing of Qwen2-VL / Qwen3-VL (Hugging Face Qwen2VLImageProcessor, which Qwen3-VL
// checkpoints name): preprocessor_config.json, smart_resize (sizes to multiples of patch x merge within
// [min_pixels, max_pixels], Python's round-half-to-even), Pillow-exact bicubic resize, rescale and
// normalise ((x * rescale - mean) / std, computed in double and rounded once to float32: bit-identical to
// the reference), temporal duplication (a still picture is temporal_patch_size identical frames) and the
// patch rows in merge-window order (see image/picture.h and shared/guides/qwen3-vl.md).
#pragma once
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "image/image.h"
#include "image/picture.h"

namespace grpo {

struct ImageProcessorConfig {
  int64_t min_pixels = 65536, max_pixels = 16777216;  // size.shortest_edge / size.longest_edge
  int64_t patch_size = 16, temporal_patch_size = 2, merge_size = 2;
  std::array<double, 3> image_mean{0.5, 0.5, 0.5}, image_std{0.5, 0.5, 0.5};
  double rescale_factor = 1.0 / 255.0;
  bool do_resize = true, do_rescale = true, do_normalize = true;

  int64_t factor() const { return patch_size * merge_size; }  // sides are multiples of this
  int64_t row_width() const { return 3 * temporal_patch_size * patch_size * patch_size; }
};

// preprocessor_config.json: `size` {shortest_edge, longest_edge} (or the older {min_pixels, max_pixels}),
// top-level min_pixels / max_pixels overriding it (as transformers does), patch_size,
// temporal_patch_size, merge_size, image_mean, image_std (3 numbers each); optional rescale_factor,
// do_resize, do_rescale, do_normalize, do_convert_rgb (must be true), resample (must be 3, bicubic).
// Errors name `source`, the key and what is expected.
ImageProcessorConfig parse_image_processor_config(const nlohmann::json& j, const std::string& source);
// `path` is the file or a model folder holding preprocessor_config.json.
ImageProcessorConfig load_image_processor_config(const std::string& path);
// True when the folder has a preprocessor_config.json (a vision-language model).
bool has_image_processor_config(const std::string& model_dir);

struct ResizedSize {
  int64_t height = 0, width = 0;
  bool operator==(const ResizedSize&) const = default;
};

// Qwen's smart_resize. Throws grpo::Error ("[image] NAME: ...") when a side is under `factor`, the aspect
// ratio is above 200, or a side rounds down to 0 under max_pixels.
ResizedSize smart_resize(int64_t height, int64_t width, int64_t factor, int64_t min_pixels, int64_t max_pixels,
                         const std::string& name = "picture");
// The size a picture of height x width is resized to (smart_resize, or the size itself with do_resize
// false, which then must be a multiple of the factor) and its grid (1, h / patch, w / patch).
ResizedSize processed_size(const ImageProcessorConfig& c, int64_t height, int64_t width, const std::string& name);
ImageGrid image_grid(const ImageProcessorConfig& c, int64_t height, int64_t width, const std::string& name);

// One picture -> its patch rows [t*gh*gw, 3*T*P*P] and grid.
PictureBatch preprocess_image(const Image& image, const ImageProcessorConfig& c, const std::string& name);

}  // namespace grpo
