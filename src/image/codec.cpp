// Picture format dispatch by signature, size limits and file reading (see image.h).
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "image/codecs.h"

namespace grpo {

namespace codecs {

void check_size(int64_t height, int64_t width, const std::string& name, const ImageLimits& limits) {
  GRPO_CHECK(height > 0 && width > 0, "[image] ", name, ": the picture is ", width, "x", height,
             " pixels (width x height); expected at least 1x1");
  GRPO_CHECK(height <= limits.max_pixels / width, "[image] ", name, ": the picture is ", width, "x", height,
             " pixels, more than the limit of ", limits.max_pixels, " pixels");
}

}  // namespace codecs

namespace {

// The first bytes as hex, for "not a picture" messages.
std::string leading_bytes(std::span<const uint8_t> bytes) {
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < bytes.size() && i < 8; ++i) {
    if (i) s += ' ';
    s += hex[bytes[i] >> 4];
    s += hex[bytes[i] & 15];
  }
  return s;
}

[[noreturn]] void not_a_picture(std::span<const uint8_t> bytes, const std::string& name) {
  if (bytes.empty()) fail("[image] ", name, ": the file is empty; expected a PNG or JPEG picture");
  fail("[image] ", name, ": not a PNG or JPEG picture (it starts with bytes ", leading_bytes(bytes), ")");
}

// The file's first `limit` bytes (all of it by default); *complete tells whether that is the whole file.
std::vector<uint8_t> read_picture_file(const std::string& path, size_t limit = SIZE_MAX, bool* complete = nullptr) {
  std::error_code ec;
  GRPO_CHECK(!std::filesystem::is_directory(path, ec), "[image] ", path, ": is a folder; expected a picture file");
  std::ifstream f(path, std::ios::binary);
  if (!f) fail("[image] ", path, ": cannot open (", std::strerror(errno), ")");
  std::vector<uint8_t> bytes;
  char buf[1 << 16];
  while (bytes.size() < limit && f) {
    f.read(buf, static_cast<std::streamsize>(std::min(sizeof buf, limit - bytes.size())));
    bytes.insert(bytes.end(), buf, buf + f.gcount());
  }
  GRPO_CHECK(!f.bad(), "[image] ", path, ": read error (", std::strerror(errno), ")");
  if (complete) *complete = f.eof() || f.peek() == std::ifstream::traits_type::eof();
  return bytes;
}

// Headers (and the chunks or markers before the pixel data) almost always fit in this many bytes.
constexpr size_t kProbeBytes = 64 * 1024;

}  // namespace

const char* image_format_name(ImageFormat f) { return f == ImageFormat::Png ? "PNG" : "JPEG"; }

ImageInfo probe_image(std::span<const uint8_t> bytes, const std::string& name, const ImageLimits& limits) {
  ImageInfo info;
  if (codecs::is_png(bytes)) info = codecs::probe_png(bytes, name);
  else if (codecs::is_jpeg(bytes)) info = codecs::probe_jpeg(bytes, name);
  else not_a_picture(bytes, name);
  codecs::check_size(info.height, info.width, name, limits);
  return info;
}

Image decode_image(std::span<const uint8_t> bytes, const std::string& name, const ImageLimits& limits) {
  if (codecs::is_png(bytes)) return codecs::decode_png(bytes, name, limits);
  if (codecs::is_jpeg(bytes)) return codecs::decode_jpeg(bytes, name, limits);
  not_a_picture(bytes, name);
}

ImageInfo probe_image_file(const std::string& path, const ImageLimits& limits) {
  bool complete = false;
  const std::vector<uint8_t> head = read_picture_file(path, kProbeBytes, &complete);
  if (complete) return probe_image(head, path, limits);
  try {
    return probe_image(head, path, limits);
  } catch (const Error&) {  // the header runs past the first bytes: read it all
    return probe_image(read_picture_file(path), path, limits);
  }
}

Image load_image(const std::string& path, const ImageLimits& limits) {
  return decode_image(read_picture_file(path), path, limits);
}

}  // namespace grpo
