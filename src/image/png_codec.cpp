// PNG through libpng: reading into 8-bit RGB with libpng's own transformations, and writing. libpng
// reports errors by longjmp; every setjmp below sits in a small function whose frame, like the libpng
// frames and callbacks it may jump over, holds no C++ object, and the C++ caller frees what it owns after
// the function returns false.
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "core/error.h"
#include "core/files.h"
#include "image/codecs.h"

namespace grpo::codecs {

namespace {

// Plain C state shared with the callbacks (nothing here has a destructor).
struct PngIo {
  const uint8_t* data;
  size_t size, pos;
  uint8_t* out;  // writing: malloc'ed buffer
  size_t out_size, out_capacity;
  char message[200];
};

void on_error(png_structp png, png_const_charp message) {
  auto* io = static_cast<PngIo*>(png_get_error_ptr(png));
  std::snprintf(io->message, sizeof io->message, "%s", message);
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}  // ancillary-chunk problems: the picture is still good

void on_read(png_structp png, png_bytep out, size_t n) {
  auto* io = static_cast<PngIo*>(png_get_io_ptr(png));
  if (n > io->size - io->pos) png_error(png, "truncated (the file ends inside the picture)");
  std::memcpy(out, io->data + io->pos, n);
  io->pos += n;
}

void on_write(png_structp png, png_bytep in, size_t n) {
  auto* io = static_cast<PngIo*>(png_get_io_ptr(png));
  if (io->out_size + n > io->out_capacity) {
    size_t cap = io->out_capacity ? io->out_capacity : 4096;
    while (cap < io->out_size + n) cap *= 2;
    auto* grown = static_cast<uint8_t*>(std::realloc(io->out, cap));
    if (!grown) png_error(png, "out of memory");
    io->out = grown;
    io->out_capacity = cap;
  }
  std::memcpy(io->out + io->out_size, in, n);
  io->out_size += n;
}

void on_flush(png_structp) {}

struct PngHeader {
  uint32_t width, height;
  int bit_depth, color_type, interlace;
  size_t rowbytes;
  int channels;
};

// Reads the header and sets up the conversion to 8-bit RGB. False after a libpng error (message in io).
bool read_header(png_structp png, png_infop info, PngHeader* h) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_info(png, info);
  png_get_IHDR(png, info, &h->width, &h->height, &h->bit_depth, &h->color_type, &h->interlace, nullptr, nullptr);
  if (h->color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (h->color_type == PNG_COLOR_TYPE_GRAY && h->bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (h->bit_depth == 16) png_set_strip_16(png);
  // Alpha, and tRNS transparency (which palette expansion would turn into alpha), are dropped.
  if ((h->color_type & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS)) png_set_strip_alpha(png);
  if (h->color_type == PNG_COLOR_TYPE_GRAY || h->color_type == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  h->rowbytes = png_get_rowbytes(png, info);
  h->channels = png_get_channels(png, info);
  return true;
}

bool read_rows(png_structp png, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_image(png, rows);
  return true;
}

bool write_all(png_structp png, png_infop info, uint32_t width, uint32_t height, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_IHDR(png, info, width, height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, nullptr);
  return true;
}

// Owns a read struct and its info struct.
struct PngReader {
  png_structp png = nullptr;
  png_infop info = nullptr;
  explicit PngReader(PngIo* io) {
    png = png_create_read_struct(PNG_LIBPNG_VER_STRING, io, on_error, on_warning);
    if (png) info = png_create_info_struct(png);
    if (png) png_set_read_fn(png, io, on_read);
  }
  ~PngReader() { png_destroy_read_struct(&png, info ? &info : nullptr, nullptr); }
  PngReader(const PngReader&) = delete;
  PngReader& operator=(const PngReader&) = delete;
};

PngIo reader_io(std::span<const uint8_t> bytes) {
  PngIo io{};
  io.data = bytes.data();
  io.size = bytes.size();
  return io;
}

PngHeader header_or_throw(PngReader& r, PngIo& io, const std::string& name) {
  GRPO_CHECK(r.png && r.info, "[image] ", name, ": out of memory (libpng)");
  PngHeader h{};
  if (!read_header(r.png, r.info, &h)) fail("[image] ", name, ": invalid PNG: ", io.message);
  return h;
}

}  // namespace

bool is_png(std::span<const uint8_t> bytes) { return bytes.size() >= 8 && png_sig_cmp(bytes.data(), 0, 8) == 0; }

ImageInfo probe_png(std::span<const uint8_t> bytes, const std::string& name) {
  PngIo io = reader_io(bytes);
  PngReader r(&io);
  const PngHeader h = header_or_throw(r, io, name);
  return {ImageFormat::Png, static_cast<int64_t>(h.height), static_cast<int64_t>(h.width)};
}

Image decode_png(std::span<const uint8_t> bytes, const std::string& name, const ImageLimits& limits) {
  PngIo io = reader_io(bytes);
  PngReader r(&io);
  const PngHeader h = header_or_throw(r, io, name);
  check_size(h.height, h.width, name, limits);
  GRPO_CHECK(h.channels == 3 && h.rowbytes == size_t{3} * h.width, "[image] ", name, ": PNG (colour type ",
             h.color_type, ", ", h.bit_depth, " bits) did not convert to 8-bit RGB");
  Image img;
  img.height = h.height;
  img.width = h.width;
  img.rgb.resize(static_cast<size_t>(img.height * img.width * 3));
  std::vector<png_bytep> rows(h.height);
  for (uint32_t y = 0; y < h.height; ++y) rows[y] = img.rgb.data() + size_t{y} * h.rowbytes;
  if (!read_rows(r.png, rows.data())) fail("[image] ", name, ": invalid PNG: ", io.message);
  return img;
}

}  // namespace grpo::codecs

namespace grpo {

std::string encode_png(const Image& image) {
  GRPO_CHECK(image.height > 0 && image.width > 0 && image.height <= 0x7fffffff && image.width <= 0x7fffffff,
             "[image] cannot write a ", image.height, "x", image.width, " PNG");
  GRPO_CHECK(image.rgb.size() == static_cast<size_t>(image.height * image.width * 3), "[image] RGB buffer of ",
             image.rgb.size(), " bytes for a ", image.height, "x", image.width, " picture");
  codecs::PngIo io{};
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &io, codecs::on_error, codecs::on_warning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  std::vector<png_bytep> rows(static_cast<size_t>(image.height));
  for (int64_t y = 0; y < image.height; ++y)
    rows[static_cast<size_t>(y)] = const_cast<png_bytep>(image.rgb.data() + y * image.width * 3);
  bool ok = png && info;
  if (ok) {
    png_set_write_fn(png, &io, codecs::on_write, codecs::on_flush);
    ok = codecs::write_all(png, info, static_cast<uint32_t>(image.width), static_cast<uint32_t>(image.height), rows.data());
  }
  png_destroy_write_struct(&png, info ? &info : nullptr);
  std::unique_ptr<uint8_t, decltype(&std::free)> out(io.out, &std::free);
  GRPO_CHECK(ok, "[image] cannot encode PNG: ", png ? io.message : "out of memory");
  return std::string(reinterpret_cast<const char*>(io.out), io.out_size);
}

void write_png(const std::string& path, const Image& image) {
  const std::string bytes = encode_png(image);
  write_file_atomic(path, bytes);
}

}  // namespace grpo
