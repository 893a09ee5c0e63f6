// Picture decoding: every stored PNG / JPEG form converts to the RGB that Pillow's convert("RGB") gives,
// PNG writing round-trips, and bad files (empty, not a picture, truncated anywhere, corrupt, 0 pixels,
// over the pixel limit, a folder, missing) are a grpo::Error naming the file, never a crash.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/files.h"
#include "core/rng.h"
#include "temp_dir.h"
#include "image/encoders.h"
#include "image/image.h"

namespace grpo {
namespace {

std::span<const uint8_t> span_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

Image decode(const std::string& bytes, const ImageLimits& limits = {}) {
  return decode_image(span_of(bytes), "test.bin", limits);
}

// Expects decode to fail with a message containing the file name and `part`.
void expect_refused(const std::string& bytes, const std::string& part, const ImageLimits& limits = {}) {
  try {
    decode(bytes, limits);
    ADD_FAILURE() << "accepted; expected an error containing \"" << part << "\"";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("[image] test.bin"), std::string::npos) << what;
    EXPECT_NE(what.find(part), std::string::npos) << what;
  }
}

std::vector<uint16_t> ramp(size_t n, int modulo, int step = 7) {
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint16_t>((i * step) % modulo);
  return v;
}

TEST(PngDecode, RgbIsReadAsIs) {
  test::PngSpec s{5, 3, 8, PNG_COLOR_TYPE_RGB, false, ramp(5 * 3 * 3, 256)};
  const Image img = decode(test::make_png(s));
  ASSERT_EQ(img.height, 3);
  ASSERT_EQ(img.width, 5);
  for (size_t i = 0; i < img.rgb.size(); ++i) ASSERT_EQ(img.rgb[i], s.samples[i]);
}

TEST(PngDecode, AlphaIsDroppedNotComposited) {
  test::PngSpec s{4, 2, 8, PNG_COLOR_TYPE_RGB_ALPHA, false, ramp(4 * 2 * 4, 256, 13)};
  const Image img = decode(test::make_png(s));
  for (size_t p = 0; p < 8; ++p)
    for (int c = 0; c < 3; ++c) ASSERT_EQ(img.rgb[3 * p + c], s.samples[4 * p + c]);
}

TEST(PngDecode, GreyAtEveryDepthIsScaledAndCopied) {
  for (int depth : {1, 2, 4, 8}) {
    SCOPED_TRACE(depth);
    const int levels = 1 << depth;
    test::PngSpec s{7, 3, depth, PNG_COLOR_TYPE_GRAY, false, ramp(7 * 3, levels, 1)};
    const Image img = decode(test::make_png(s));
    for (size_t p = 0; p < s.samples.size(); ++p)
      for (int c = 0; c < 3; ++c) ASSERT_EQ(img.rgb[3 * p + c], s.samples[p] * 255 / (levels - 1));
  }
}

TEST(PngDecode, GreyAlphaDropsAlpha) {
  test::PngSpec s{3, 3, 8, PNG_COLOR_TYPE_GRAY_ALPHA, false, ramp(3 * 3 * 2, 256, 29)};
  const Image img = decode(test::make_png(s));
  for (size_t p = 0; p < 9; ++p)
    for (int c = 0; c < 3; ++c) ASSERT_EQ(img.rgb[3 * p + c], s.samples[2 * p]);
}

TEST(PngDecode, SixteenBitKeepsTheHighByte) {
  test::PngSpec rgb{3, 2, 16, PNG_COLOR_TYPE_RGB, false, ramp(3 * 2 * 3, 65536, 4099)};
  Image img = decode(test::make_png(rgb));
  for (size_t i = 0; i < img.rgb.size(); ++i) ASSERT_EQ(img.rgb[i], rgb.samples[i] >> 8);
  test::PngSpec grey{3, 2, 16, PNG_COLOR_TYPE_GRAY_ALPHA, false, ramp(3 * 2 * 2, 65536, 9001)};
  img = decode(test::make_png(grey));
  for (size_t p = 0; p < 6; ++p) ASSERT_EQ(img.rgb[3 * p + 1], grey.samples[2 * p] >> 8);
}

TEST(PngDecode, PaletteExpandsAndIgnoresTransparency) {
  test::PngSpec s{4, 4, 4, PNG_COLOR_TYPE_PALETTE, false, ramp(16, 3, 1)};
  s.palette = {{255, 0, 0}, {0, 128, 0}, {10, 20, 30}};
  s.palette_alpha = {0, 128};
  const Image img = decode(test::make_png(s));
  for (size_t p = 0; p < 16; ++p) {
    const png_color& c = s.palette[s.samples[p]];
    ASSERT_EQ(img.rgb[3 * p + 0], c.red);
    ASSERT_EQ(img.rgb[3 * p + 1], c.green);
    ASSERT_EQ(img.rgb[3 * p + 2], c.blue);
  }
}

TEST(PngDecode, InterlacedEqualsProgressiveRows) {
  test::PngSpec s{13, 11, 8, PNG_COLOR_TYPE_RGB, false, ramp(13 * 11 * 3, 256, 31)};
  const Image plain = decode(test::make_png(s));
  s.interlaced = true;
  const Image adam7 = decode(test::make_png(s));
  EXPECT_EQ(plain.rgb, adam7.rgb);
}

TEST(PngEncode, RoundTripsAndIsDeterministic) {
  Image img;
  img.height = 9;
  img.width = 17;
  Rng rng(3);
  for (int i = 0; i < 9 * 17 * 3; ++i) img.rgb.push_back(static_cast<uint8_t>(rng.below(256)));
  const std::string a = encode_png(img), b = encode_png(img);
  EXPECT_EQ(a, b);
  const Image back = decode(a);
  EXPECT_EQ(back.height, 9);
  EXPECT_EQ(back.width, 17);
  EXPECT_EQ(back.rgb, img.rgb);
  const ImageInfo info = probe_image(span_of(a), "x.png");
  EXPECT_EQ(info.format, ImageFormat::Png);
  EXPECT_EQ(info.height, 9);
  EXPECT_EQ(info.width, 17);
  EXPECT_THROW(encode_png(Image{}), Error);
}

// The probe reads the first 64 KiB, then the whole file when the header runs past them.
TEST(PngDecode, ProbeOfAHeaderLongerThanTheFirstBytes) {
  test::TempDir dir;
  test::PngSpec s{7, 5, 8, PNG_COLOR_TYPE_RGB, false, ramp(7 * 5 * 3, 256)};
  s.comment = std::string(200000, 'x');
  const std::string path = dir.write("long.png", test::make_png(s));
  const ImageInfo info = probe_image_file(path);
  EXPECT_EQ(info.width, 7);
  EXPECT_EQ(info.height, 5);
  EXPECT_EQ(load_image(path).rgb.size(), 7u * 5 * 3);
  const std::string bytes = read_file(path);
  EXPECT_THROW(probe_image_file(dir.write("cut.png", bytes.substr(0, 100000))), Error);
}

TEST(PngEncode, WritesFilesAtomically) {
  test::TempDir dir;
  Image img{2, 3, std::vector<uint8_t>(18, 200)};
  write_png(dir.path() + "/a.png", img);
  EXPECT_EQ(load_image(dir.path() + "/a.png").rgb, img.rgb);
  EXPECT_EQ(probe_image_file(dir.path() + "/a.png").width, 3);
}

std::vector<uint8_t> smooth_rgb(uint32_t w, uint32_t h) {
  std::vector<uint8_t> v;
  for (uint32_t y = 0; y < h; ++y)
    for (uint32_t x = 0; x < w; ++x) {
      v.push_back(static_cast<uint8_t>(40 + 4 * x));
      v.push_back(static_cast<uint8_t>(200 - 3 * y));
      v.push_back(static_cast<uint8_t>(90 + x + y));
    }
  return v;
}

int max_abs_diff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  int m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(int(a[i]) - int(b[i])));
  return m;
}

TEST(JpegDecode, RgbBaselineAndProgressiveAreClose) {
  const auto px = smooth_rgb(40, 24);
  const Image base = decode(test::make_jpeg(40, 24, test::JpegKind::Rgb, px));
  ASSERT_EQ(base.height, 24);
  ASSERT_EQ(base.width, 40);
  EXPECT_LE(max_abs_diff(base.rgb, px), 12);  // lossy, quality 95
  const Image prog = decode(test::make_jpeg(40, 24, test::JpegKind::Rgb, px, /*progressive=*/true));
  EXPECT_LE(max_abs_diff(prog.rgb, px), 12);
  const std::string bytes = test::make_jpeg(40, 24, test::JpegKind::Rgb, px);
  const ImageInfo info = probe_image(span_of(bytes), "x.jpg");
  EXPECT_EQ(info.format, ImageFormat::Jpeg);
  EXPECT_EQ(info.width, 40);
}

TEST(JpegDecode, GreyIsCopiedToThreeChannels) {
  std::vector<uint8_t> grey(32 * 16);
  for (size_t i = 0; i < grey.size(); ++i) grey[i] = static_cast<uint8_t>(60 + i % 32 * 3);
  const Image img = decode(test::make_jpeg(32, 16, test::JpegKind::Grey, grey));
  for (size_t p = 0; p < grey.size(); ++p) {
    ASSERT_EQ(img.rgb[3 * p], img.rgb[3 * p + 1]);
    ASSERT_EQ(img.rgb[3 * p], img.rgb[3 * p + 2]);
    ASSERT_LE(std::abs(int(img.rgb[3 * p]) - int(grey[p])), 6);
  }
}

TEST(JpegDecode, AdobeCmykConvertsLikePillow) {
  // Stored (inverted) CMYK of flat colours; Pillow: R = (255 - K) - C (255 - K) / 255 with C = 255 - stored.
  const uint8_t stored[4][4] = {{255, 0, 0, 255}, {0, 255, 0, 255}, {255, 255, 255, 128}, {200, 100, 50, 255}};
  for (const auto& s : stored) {
    std::vector<uint8_t> px;
    for (int i = 0; i < 16 * 16; ++i) px.insert(px.end(), s, s + 4);
    const Image img = decode(test::make_jpeg(16, 16, test::JpegKind::AdobeCmyk, px));
    const int nk = s[3];  // 255 - K with K = 255 - stored
    for (int c = 0; c < 3; ++c) {
      const double want = nk - (255 - s[c]) * nk / 255.0;
      EXPECT_NEAR(img.rgb[c], want, 4) << "channel " << c;
    }
  }
}

TEST(JpegDecode, TrailingBytesAfterTheEndAreAccepted) {
  std::string bytes = test::make_jpeg(16, 8, test::JpegKind::Rgb, smooth_rgb(16, 8));
  bytes += "trailing garbage";
  EXPECT_EQ(decode(bytes).width, 16);
}

TEST(BadPictures, EmptyAndNotAPicture) {
  expect_refused("", "the file is empty");
  expect_refused("GIF89a....", "not a PNG or JPEG picture (it starts with bytes 47 49 46 38");
  expect_refused("\x89PNG\r\n\x1a\n", "invalid PNG");
  expect_refused("\xff\xd8\xff", "invalid JPEG");
}

TEST(BadPictures, TruncatedAnywhere) {
  test::PngSpec s{20, 20, 8, PNG_COLOR_TYPE_RGB, false, ramp(20 * 20 * 3, 256, 37)};
  const std::string png = test::make_png(s);
  const std::string jpeg = test::make_jpeg(24, 24, test::JpegKind::Rgb, smooth_rgb(24, 24));
  const std::string prog = test::make_jpeg(24, 24, test::JpegKind::Rgb, smooth_rgb(24, 24), true);
  for (const std::string* file : {&png, &jpeg, &prog}) {
    // Cut before the end of the image data (the PNG's last 12 bytes are IEND, which is not needed).
    const size_t keep_until = file == &png ? file->size() - 12 : file->size() - 2;
    for (size_t n = 1; n < keep_until; n += std::max<size_t>(1, keep_until / 97)) {
      SCOPED_TRACE(n);
      EXPECT_THROW(decode(file->substr(0, n)), Error);
    }
  }
  std::vector<uint8_t> noise(64 * 64 * 3);
  Rng rng(2);
  for (auto& v : noise) v = static_cast<uint8_t>(rng.below(256));
  const std::string big = test::make_jpeg(64, 64, test::JpegKind::Rgb, noise);  // mostly entropy-coded data
  expect_refused(big.substr(0, big.size() / 2), "truncated JPEG");
  expect_refused(png.substr(0, png.size() - 40), "truncated");
}

TEST(BadPictures, CorruptBytesNeverCrash) {
  test::PngSpec s{16, 16, 8, PNG_COLOR_TYPE_RGB_ALPHA, true, ramp(16 * 16 * 4, 256, 11)};
  const std::string png = test::make_png(s);
  const std::string jpeg = test::make_jpeg(16, 16, test::JpegKind::Rgb, smooth_rgb(16, 16), true);
  Rng rng(5);
  for (const std::string* file : {&png, &jpeg})
    for (int trial = 0; trial < 300; ++trial) {
      std::string bad = *file;
      for (int k = 0; k < 3; ++k) bad[rng.below(bad.size())] = static_cast<char>(rng.below(256));
      try {
        const Image img = decode(bad);
        EXPECT_EQ(img.rgb.size(), static_cast<size_t>(img.height * img.width * 3));
      } catch (const Error&) {
      }
    }
}

// IHDR with the given size; the CRC is recomputed so that only the size is wrong.
std::string png_with_size(uint32_t width, uint32_t height) {
  test::PngSpec s{1, 1, 8, PNG_COLOR_TYPE_RGB, false, {1, 2, 3}};
  std::string png = test::make_png(s);
  auto put32 = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) png[at + i] = static_cast<char>(v >> (24 - 8 * i));
  };
  put32(16, width);
  put32(20, height);
  const uint32_t crc = static_cast<uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(png.data() + 12), 17));  // chunk type + data
  put32(29, crc);
  return png;
}

TEST(BadPictures, ZeroAndTooManyPixels) {
  expect_refused(png_with_size(0, 5), "invalid PNG");
  expect_refused(png_with_size(5, 0), "invalid PNG");
  ImageLimits small;
  small.max_pixels = 1000;
  expect_refused(png_with_size(100, 11), "more than the limit of 1000 pixels", small);
  expect_refused(test::make_jpeg(40, 30, test::JpegKind::Rgb, smooth_rgb(40, 30)), "more than the limit", small);
  EXPECT_THROW(probe_image(span_of(png_with_size(100, 11)), "x.png", small), Error);
  // The default limit refuses a 20000 x 20000 header before allocating.
  expect_refused(png_with_size(20000, 20000), "more than the limit of 178956970 pixels");
}

TEST(BadPictures, FilesThatCannotBeRead) {
  test::TempDir dir;
  try {
    load_image(dir.path() + "/missing.png");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.png: cannot open"), std::string::npos) << e.what();
  }
  try {
    load_image(dir.path());
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is a folder"), std::string::npos) << e.what();
  }
  const std::string text = dir.write("notes.png", "hello");
  EXPECT_THROW(probe_image_file(text), Error);
}

}  // namespace
}  // namespace grpo
