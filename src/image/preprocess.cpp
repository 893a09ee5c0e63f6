// Qwen-VL image preprocessing (see preprocess.h).
#include "image/preprocess.h"

#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "core/files.h"
#include "image/resize.h"

namespace grpo {

namespace {

using nlohmann::json;

const json* find_key(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

int64_t int_key(const json& j, const char* key, int64_t lo, int64_t hi, const std::string& source,
                const char* where = "") {
  const json* v = find_key(j, key);
  GRPO_CHECK(v, "[image] ", source, ": missing \"", where, key, "\" (an integer)");
  GRPO_CHECK(v->is_number_integer() || (v->is_number_float() && std::floor(v->get<double>()) == v->get<double>()),
             "[image] ", source, ": \"", where, key, "\" must be an integer, got ", v->dump());
  const double d = v->get<double>();
  GRPO_CHECK(d >= static_cast<double>(lo) && d <= static_cast<double>(hi), "[image] ", source, ": \"", where, key,
             "\" = ", v->dump(), " is outside ", lo, "..", hi);
  return v->is_number_integer() ? v->get<int64_t>() : static_cast<int64_t>(d);
}

bool bool_key(const json& j, const char* key, bool fallback, const std::string& source) {
  const json* v = find_key(j, key);
  if (!v) return fallback;
  GRPO_CHECK(v->is_boolean(), "[image] ", source, ": \"", key, "\" must be true or false, got ", v->dump());
  return v->get<bool>();
}

std::array<double, 3> triple_key(const json& j, const char* key, const std::string& source) {
  const json* v = find_key(j, key);
  GRPO_CHECK(v && v->is_array() && v->size() == 3, "[image] ", source, ": \"", key,
             "\" must be a list of 3 numbers (one per RGB channel)", v ? ", got " + v->dump() : std::string());
  std::array<double, 3> out{};
  for (size_t c = 0; c < 3; ++c) {
    GRPO_CHECK((*v)[c].is_number() && std::isfinite((*v)[c].get<double>()), "[image] ", source, ": \"", key, "\"[", c,
               "] must be a finite number, got ", (*v)[c].dump());
    out[c] = (*v)[c].get<double>();
  }
  return out;
}

constexpr int64_t kMaxPixelsLimit = int64_t{1} << 40;

}  // namespace

ImageProcessorConfig parse_image_processor_config(const json& j, const std::string& source) {
  GRPO_CHECK(j.is_object(), "[image] ", source, ": expected a JSON object");
  ImageProcessorConfig c;
  // Pixel limits: size {shortest_edge, longest_edge} or {min_pixels, max_pixels}; top-level keys win.
  bool have_min = false, have_max = false;
  if (const json* size = find_key(j, "size")) {
    GRPO_CHECK(size->is_object(), "[image] ", source, ": \"size\" must be an object {shortest_edge, longest_edge}");
    for (const auto& [min_key, max_key] : {std::pair{"shortest_edge", "longest_edge"}, std::pair{"min_pixels", "max_pixels"}}) {
      if (find_key(*size, min_key)) c.min_pixels = int_key(*size, min_key, 1, kMaxPixelsLimit, source, "size."), have_min = true;
      if (find_key(*size, max_key)) c.max_pixels = int_key(*size, max_key, 1, kMaxPixelsLimit, source, "size."), have_max = true;
    }
  }
  if (find_key(j, "min_pixels")) c.min_pixels = int_key(j, "min_pixels", 1, kMaxPixelsLimit, source), have_min = true;
  if (find_key(j, "max_pixels")) c.max_pixels = int_key(j, "max_pixels", 1, kMaxPixelsLimit, source), have_max = true;
  GRPO_CHECK(have_min && have_max, "[image] ", source,
             ": needs the pixel limits: \"size\": {\"shortest_edge\": MIN_PIXELS, \"longest_edge\": MAX_PIXELS} "
             "(or \"min_pixels\" and \"max_pixels\")");
  GRPO_CHECK(c.min_pixels <= c.max_pixels, "[image] ", source, ": min_pixels ", c.min_pixels, " > max_pixels ",
             c.max_pixels);
  c.patch_size = int_key(j, "patch_size", 1, 1024, source);
  c.temporal_patch_size = int_key(j, "temporal_patch_size", 1, 64, source);
  c.merge_size = int_key(j, "merge_size", 1, 64, source);
  c.image_mean = triple_key(j, "image_mean", source);
  c.image_std = triple_key(j, "image_std", source);
  for (size_t k = 0; k < 3; ++k)
    GRPO_CHECK(c.image_std[k] != 0, "[image] ", source, ": \"image_std\"[", k, "] is 0");
  if (const json* r = find_key(j, "rescale_factor")) {
    GRPO_CHECK(r->is_number() && r->get<double>() > 0 && std::isfinite(r->get<double>()), "[image] ", source,
               ": \"rescale_factor\" must be a positive number, got ", r->dump());
    c.rescale_factor = r->get<double>();
  }
  c.do_resize = bool_key(j, "do_resize", true, source);
  c.do_rescale = bool_key(j, "do_rescale", true, source);
  c.do_normalize = bool_key(j, "do_normalize", true, source);
  GRPO_CHECK(bool_key(j, "do_convert_rgb", true, source), "[image] ", source,
             ": \"do_convert_rgb\": false is not supported (pictures are always converted to RGB)");
  if (find_key(j, "resample"))
    GRPO_CHECK(int_key(j, "resample", 0, 5, source) == 3, "[image] ", source, ": \"resample\" = ", j["resample"].dump(),
               " is not supported; expected 3 (bicubic)");
  return c;
}

ImageProcessorConfig load_image_processor_config(const std::string& path) {
  const std::string file =
      std::filesystem::is_directory(path) ? (std::filesystem::path(path) / "preprocessor_config.json").string() : path;
  GRPO_CHECK(file_exists(file), "[image] ", file, ": not found (a vision-language model folder has a preprocessor_config.json)");
  json j;
  try {
    j = json::parse(read_file(file));
  } catch (const json::parse_error& e) {
    fail("[image] ", file, ": invalid JSON (", e.what(), ")");
  }
  return parse_image_processor_config(j, file);
}

bool has_image_processor_config(const std::string& model_dir) {
  return file_exists((std::filesystem::path(model_dir) / "preprocessor_config.json").string());
}

ResizedSize smart_resize(int64_t height, int64_t width, int64_t factor, int64_t min_pixels, int64_t max_pixels,
                         const std::string& name) {
  GRPO_CHECK(factor >= 1, "[image] smart_resize factor must be >= 1, got ", factor);
  GRPO_CHECK(height >= factor && width >= factor, "[image] ", name, ": height ", height, " or width ", width,
             " smaller than factor ", factor);
  const double h = static_cast<double>(height), w = static_cast<double>(width), f = static_cast<double>(factor);
  const double ratio = std::max(h, w) / std::min(h, w);
  GRPO_CHECK(ratio <= 200, "[image] ", name, ": aspect ratio above 200 (", width, "x", height, ")");
  // Python's round() on a float: to nearest, ties to even, which nearbyint does in the default rounding mode.
  int64_t h_bar = static_cast<int64_t>(std::nearbyint(h / f)) * factor;
  int64_t w_bar = static_cast<int64_t>(std::nearbyint(w / f)) * factor;
  if (h_bar * w_bar > max_pixels) {
    const double beta = std::sqrt(h * w / static_cast<double>(max_pixels));
    h_bar = static_cast<int64_t>(std::floor(h / beta / f)) * factor;
    w_bar = static_cast<int64_t>(std::floor(w / beta / f)) * factor;
  } else if (h_bar * w_bar < min_pixels) {
    const double beta = std::sqrt(static_cast<double>(min_pixels) / (h * w));
    h_bar = static_cast<int64_t>(std::ceil(h * beta / f)) * factor;
    w_bar = static_cast<int64_t>(std::ceil(w * beta / f)) * factor;
  }
  GRPO_CHECK(h_bar > 0 && w_bar > 0, "[image] ", name, ": a side rounds down to 0 (", width, "x", height,
             " under max_pixels ", max_pixels, ")");
  return {h_bar, w_bar};
}

ResizedSize processed_size(const ImageProcessorConfig& c, int64_t height, int64_t width, const std::string& name) {
  if (c.do_resize) return smart_resize(height, width, c.factor(), c.min_pixels, c.max_pixels, name);
  GRPO_CHECK(height % c.factor() == 0 && width % c.factor() == 0, "[image] ", name, ": ", width, "x", height,
             " is not a multiple of ", c.factor(), " (patch_size x merge_size) and do_resize is false");
  return {height, width};
}

ImageGrid image_grid(const ImageProcessorConfig& c, int64_t height, int64_t width, const std::string& name) {
  const ResizedSize s = processed_size(c, height, width, name);
  return {1, s.height / c.patch_size, s.width / c.patch_size};
}

PictureBatch preprocess_image(const Image& image, const ImageProcessorConfig& c, const std::string& name) {
  const ResizedSize size = processed_size(c, image.height, image.width, name);
  const Image resized = resize_bicubic(image, size.height, size.width);
  // Per channel and 8-bit value: (x * rescale - mean) / std in double, rounded once to float32.
  float lut[3][256];
  for (int ch = 0; ch < 3; ++ch)
    for (int x = 0; x < 256; ++x) {
      double v = c.do_rescale ? x * c.rescale_factor : static_cast<double>(x);
      if (c.do_normalize) v = (v - c.image_mean[ch]) / c.image_std[ch];
      lut[ch][x] = static_cast<float>(v);
    }
  const int64_t P = c.patch_size, T = c.temporal_patch_size, m = c.merge_size, W = resized.width;
  PictureBatch out;
  out.row_width = c.row_width();
  out.merge_size = m;
  out.grids = {{1, resized.height / P, resized.width / P}};
  const ImageGrid& g = out.grids[0];
  out.pixel_values.resize(static_cast<size_t>(g.patches() * out.row_width));
  float* dst = out.pixel_values.data();
  // Rows: merge windows in raster order, then the m x m patches of a window in raster order; a row is
  // (channel, frame, y, x), every frame the same picture.
  for (int64_t wr = 0; wr < g.h / m; ++wr)
    for (int64_t wc = 0; wc < g.w / m; ++wc)
      for (int64_t dy = 0; dy < m; ++dy)
        for (int64_t dx = 0; dx < m; ++dx) {
          const int64_t r = wr * m + dy, col = wc * m + dx;
          for (int ch = 0; ch < 3; ++ch) {
            float* frame0 = dst;
            for (int64_t y = 0; y < P; ++y) {
              const uint8_t* px = resized.rgb.data() + ((r * P + y) * W + col * P) * 3 + ch;
              for (int64_t x = 0; x < P; ++x) *dst++ = lut[ch][px[3 * x]];
            }
            for (int64_t f = 1; f < T; ++f, dst += P * P) std::copy(frame0, frame0 + P * P, dst);
          }
        }
  return out;
}

}  // namespace grpo
