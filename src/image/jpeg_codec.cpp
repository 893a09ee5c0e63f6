// JPEG through libjpeg-turbo: header probe and decoding into 8-bit RGB (grey and YCbCr by the library,
// CMYK/YCCK converted here as Pillow does). libjpeg reports errors by calling error_exit, which longjmps
// back into the small setjmp functions below; neither they nor the library frames hold C++ objects, and
// the C++ caller destroys the decompressor after they return. A truncated file (the library's "premature
// end" warning, after which it would fill the rest with grey) is an error, as in Pillow; other corrupt-
// data warnings are not. Progressive files with more than kMaxScans scans are refused (a decode-time bomb).
#include <cstdio>
// jpeglib.h needs size_t and FILE declared first.
#include <jerror.h>
#include <jpeglib.h>

#include <csetjmp>
#include <cstring>

#include "core/error.h"
#include "image/codecs.h"

namespace grpo::codecs {

namespace {

constexpr int kMaxScans = 1000;

struct JpegError {  // plain C state (no destructors): libjpeg's error manager first
  jpeg_error_mgr mgr;
  jpeg_progress_mgr progress;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX + 64];
  bool truncated;
};

void on_error_exit(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

void on_emit_message(j_common_ptr cinfo, int level) {
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  if (level < 0) {
    ++cinfo->err->num_warnings;
    if (cinfo->err->msg_code == JWRN_JPEG_EOF) e->truncated = true;
  }
}

void on_progress(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  if (cinfo->is_decompressor && reinterpret_cast<j_decompress_ptr>(cinfo)->input_scan_number > kMaxScans) {
    std::snprintf(e->message, sizeof e->message, "more than %d progressive scans", kMaxScans);
    std::longjmp(e->jump, 1);
  }
}

void init_error(jpeg_decompress_struct* cinfo, JpegError* e) {
  cinfo->err = jpeg_std_error(&e->mgr);
  e->mgr.error_exit = on_error_exit;
  e->mgr.emit_message = on_emit_message;
  e->message[0] = '\0';
  e->truncated = false;
}

// Creates the decompressor and reads the header; output RGB (or CMYK for CMYK/YCCK files).
bool read_header(jpeg_decompress_struct* cinfo, JpegError* e, const uint8_t* data, size_t size, bool* created) {
  if (setjmp(e->jump)) return false;
  jpeg_create_decompress(cinfo);
  *created = true;
  e->progress.progress_monitor = on_progress;
  cinfo->progress = &e->progress;
  jpeg_mem_src(cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(cinfo, TRUE);
  const bool cmyk = cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK;
  cinfo->out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  return true;
}

// Decodes every scanline into out (stride width * output_components).
bool read_pixels(jpeg_decompress_struct* cinfo, JpegError* e, uint8_t* out, size_t stride, size_t expected_rows) {
  if (setjmp(e->jump)) return false;
  jpeg_start_decompress(cinfo);
  if (cinfo->output_height != expected_rows ||
      stride != size_t{cinfo->output_width} * static_cast<size_t>(cinfo->output_components)) {
    std::snprintf(e->message, sizeof e->message, "decoder output %ux%u x %d does not match the header",
                  cinfo->output_width, cinfo->output_height, cinfo->output_components);
    return false;
  }
  while (cinfo->output_scanline < cinfo->output_height) {
    JSAMPROW row = out + size_t{cinfo->output_scanline} * stride;
    jpeg_read_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_decompress(cinfo);
  return true;
}

// Owns the decompressor; the error manager outlives it.
struct JpegReader {
  jpeg_decompress_struct cinfo{};
  JpegError error{};
  bool created = false;
  JpegReader() { init_error(&cinfo, &error); }
  ~JpegReader() {
    if (created) jpeg_destroy_decompress(&cinfo);
  }
  JpegReader(const JpegReader&) = delete;
  JpegReader& operator=(const JpegReader&) = delete;
};

void open_or_throw(JpegReader& r, std::span<const uint8_t> bytes, const std::string& name) {
  if (!read_header(&r.cinfo, &r.error, bytes.data(), bytes.size(), &r.created))
    fail("[image] ", name, ": invalid JPEG: ", r.error.message);
}

// Pillow's CMYK -> RGB: (255 - K) - C (255 - K) / 255 per channel, after undoing Adobe's inversion.
void cmyk_to_rgb(const uint8_t* cmyk, uint8_t* rgb, size_t pixels, bool inverted) {
  for (size_t i = 0; i < pixels; ++i) {
    int c[4];
    for (int k = 0; k < 4; ++k) c[k] = inverted ? 255 - cmyk[4 * i + k] : cmyk[4 * i + k];
    const int nk = 255 - c[3];
    for (int k = 0; k < 3; ++k) {
      const int t = c[k] * nk + 128;
      const int v = nk - (((t >> 8) + t) >> 8);
      rgb[3 * i + k] = static_cast<uint8_t>(v < 0 ? 0 : v);
    }
  }
}

}  // namespace

bool is_jpeg(std::span<const uint8_t> bytes) {
  return bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF;
}

ImageInfo probe_jpeg(std::span<const uint8_t> bytes, const std::string& name) {
  JpegReader r;
  open_or_throw(r, bytes, name);
  return {ImageFormat::Jpeg, static_cast<int64_t>(r.cinfo.image_height), static_cast<int64_t>(r.cinfo.image_width)};
}

Image decode_jpeg(std::span<const uint8_t> bytes, const std::string& name, const ImageLimits& limits) {
  JpegReader r;
  open_or_throw(r, bytes, name);
  const int64_t h = r.cinfo.image_height, w = r.cinfo.image_width;
  check_size(h, w, name, limits);
  const bool cmyk = r.cinfo.out_color_space == JCS_CMYK;
  const size_t channels = cmyk ? 4 : 3;
  std::vector<uint8_t> pixels(static_cast<size_t>(h * w) * channels);
  if (!read_pixels(&r.cinfo, &r.error, pixels.data(), static_cast<size_t>(w) * channels, static_cast<size_t>(h)))
    fail("[image] ", name, ": invalid JPEG: ", r.error.message);
  GRPO_CHECK(!r.error.truncated, "[image] ", name, ": truncated JPEG (the file ends inside the picture)");
  Image img;
  img.height = h;
  img.width = w;
  if (cmyk) {
    img.rgb.resize(static_cast<size_t>(h * w * 3));
    cmyk_to_rgb(pixels.data(), img.rgb.data(), static_cast<size_t>(h * w), r.cinfo.saw_Adobe_marker);
  } else {
    img.rgb = std::move(pixels);
  }
  return img;
}

}  // namespace grpo::codecs
