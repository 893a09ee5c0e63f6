// Test helper: PNG and JPEG files in every stored form the decoders must convert (palette, grey at 1-16
// bits, alpha, 16-bit, interlaced; grey, RGB, CMYK, progressive JPEG), written with libpng / libjpeg
// directly. Failures abort the test (these encoders are given valid input only).
#pragma once
#include <png.h>
#include <cstdio>
#include <jpeglib.h>

#include <csetjmp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace grpo::test {

struct PngSpec {
  PngSpec(uint32_t w, uint32_t h, int depth, int type, bool adam7, std::vector<uint16_t> values)
      : width(w), height(h), bit_depth(depth), color_type(type), interlaced(adam7), samples(std::move(values)) {}
  uint32_t width = 0, height = 0;
  int bit_depth = 8;
  int color_type = PNG_COLOR_TYPE_RGB;
  bool interlaced = false;
  std::vector<uint16_t> samples;       // height x width x channels, each < 2^bit_depth (palette: indices)
  std::vector<png_color> palette;      // PNG_COLOR_TYPE_PALETTE only
  std::vector<png_byte> palette_alpha;  // tRNS for palette pictures (optional)
  std::string comment;                  // a tEXt chunk before the pixel data (optional)
};

namespace detail {
struct Buffer {
  unsigned char* data;
  size_t size;
};
inline void write_to_buffer(png_structp png, png_bytep in, size_t n) {
  auto* b = static_cast<Buffer*>(png_get_io_ptr(png));
  b->data = static_cast<unsigned char*>(std::realloc(b->data, b->size + n));
  std::memcpy(b->data + b->size, in, n);
  b->size += n;
}
inline void no_flush(png_structp) {}

// No C++ objects in this frame: libpng may longjmp here.
inline bool write_png_rows(png_structp png, png_infop info, const PngSpec* s, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_IHDR(png, info, s->width, s->height, s->bit_depth, s->color_type,
               s->interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (s->color_type == PNG_COLOR_TYPE_PALETTE) {
    png_set_PLTE(png, info, s->palette.data(), static_cast<int>(s->palette.size()));
    if (!s->palette_alpha.empty())
      png_set_tRNS(png, info, s->palette_alpha.data(), static_cast<int>(s->palette_alpha.size()), nullptr);
  }
  png_text text{};
  if (!s->comment.empty()) {
    text.compression = PNG_TEXT_COMPRESSION_NONE;
    text.key = const_cast<char*>("Comment");
    text.text = const_cast<char*>(s->comment.c_str());
    text.text_length = s->comment.size();
    png_set_text(png, info, &text, 1);
  }
  png_write_info(png, info);
  if (s->bit_depth < 8) png_set_packing(png);
  if (s->bit_depth == 16) png_set_swap(png);  // rows below hold little-endian uint16
  png_write_image(png, rows);
  png_write_end(png, nullptr);
  return true;
}
}  // namespace detail

inline int png_channels(int color_type) {
  switch (color_type) {
    case PNG_COLOR_TYPE_GRAY: case PNG_COLOR_TYPE_PALETTE: return 1;
    case PNG_COLOR_TYPE_GRAY_ALPHA: return 2;
    case PNG_COLOR_TYPE_RGB: return 3;
    default: return 4;
  }
}

inline std::string make_png(const PngSpec& s) {
  const int channels = png_channels(s.color_type);
  const size_t per_row = size_t{s.width} * channels * (s.bit_depth == 16 ? 2 : 1);
  std::vector<unsigned char> pixels(per_row * s.height);
  for (size_t i = 0; i < s.samples.size(); ++i) {
    if (s.bit_depth == 16) std::memcpy(&pixels[2 * i], &s.samples[i], 2);
    else pixels[i] = static_cast<unsigned char>(s.samples[i]);
  }
  std::vector<png_bytep> rows(s.height);
  for (uint32_t y = 0; y < s.height; ++y) rows[y] = pixels.data() + y * per_row;
  detail::Buffer out{nullptr, 0};
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  png_set_write_fn(png, &out, detail::write_to_buffer, detail::no_flush);
  if (!detail::write_png_rows(png, info, &s, rows.data())) std::abort();
  png_destroy_write_struct(&png, &info);
  std::string bytes(reinterpret_cast<char*>(out.data), out.size);
  std::free(out.data);
  return bytes;
}

enum class JpegKind { Rgb, Grey, AdobeCmyk };

// samples: height x width x (3 RGB, 1 grey, 4 CMYK as stored, i.e. Adobe-inverted).
inline std::string make_jpeg(uint32_t width, uint32_t height, JpegKind kind, const std::vector<uint8_t>& samples,
                             bool progressive = false, int quality = 95) {
  jpeg_compress_struct cinfo;
  jpeg_error_mgr err;
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_compress(&cinfo);
  unsigned char* data = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &data, &size);
  cinfo.image_width = width;
  cinfo.image_height = height;
  cinfo.input_components = kind == JpegKind::Rgb ? 3 : kind == JpegKind::Grey ? 1 : 4;
  cinfo.in_color_space = kind == JpegKind::Rgb ? JCS_RGB : kind == JpegKind::Grey ? JCS_GRAYSCALE : JCS_CMYK;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  if (progressive) jpeg_simple_progression(&cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  const size_t stride = size_t{width} * cinfo.input_components;
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(samples.data() + cinfo.next_scanline * stride);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::string bytes(reinterpret_cast<char*>(data), size);
  std::free(data);
  return bytes;
}

}  // namespace grpo::test
