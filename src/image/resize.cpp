// Pillow-exact bicubic resize (see resize.h): per-axis fixed-point coefficient tables, then two passes.
#include "image/resize.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace grpo {

namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // Pillow's PRECISION_BITS for 8-bit images
constexpr double kSupport = 2.0;            // the bicubic filter's support

double bicubic(double x) {
  constexpr double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

// Per output index: the first input index, the number of taps, and ksize fixed-point weights.
struct AxisCoeffs {
  int64_t ksize = 0;
  std::vector<int64_t> first, count;  // [out]
  std::vector<int32_t> weights;       // [out, ksize]
};

AxisCoeffs axis_coeffs(int64_t in_size, int64_t out_size) {
  const double scale = static_cast<double>(in_size) / static_cast<double>(out_size);
  const double filterscale = std::max(scale, 1.0);
  const double support = kSupport * filterscale;
  AxisCoeffs c;
  c.ksize = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  c.first.resize(static_cast<size_t>(out_size));
  c.count.resize(static_cast<size_t>(out_size));
  c.weights.assign(static_cast<size_t>(out_size * c.ksize), 0);
  std::vector<double> k(static_cast<size_t>(c.ksize));
  for (int64_t xx = 0; xx < out_size; ++xx) {
    const double center = (static_cast<double>(xx) + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    // Pillow rounds the bounds with a cast (truncation toward zero) of value + 0.5.
    const int64_t xmin = std::max<int64_t>(0, static_cast<int64_t>(center - support + 0.5));
    const int64_t xmax = std::min<int64_t>(in_size, static_cast<int64_t>(center + support + 0.5)) - xmin;
    double ww = 0.0;
    for (int64_t x = 0; x < xmax; ++x) {
      k[static_cast<size_t>(x)] = bicubic((static_cast<double>(x + xmin) - center + 0.5) * ss);
      ww += k[static_cast<size_t>(x)];
    }
    int32_t* w = c.weights.data() + xx * c.ksize;
    for (int64_t x = 0; x < xmax; ++x) {
      const double v = (ww != 0.0 ? k[static_cast<size_t>(x)] / ww : k[static_cast<size_t>(x)]) * (1 << kPrecisionBits);
      w[x] = static_cast<int32_t>(v < 0 ? -0.5 + v : 0.5 + v);
    }
    c.first[static_cast<size_t>(xx)] = xmin;
    c.count[static_cast<size_t>(xx)] = xmax;
  }
  return c;
}

inline uint8_t clip8(int32_t v) {
  const int32_t s = v >> kPrecisionBits;  // arithmetic shift: floor, as Pillow's lookup index
  return static_cast<uint8_t>(s < 0 ? 0 : (s > 255 ? 255 : s));
}

// out [rows, out_w, 3] from in [rows, in_w, 3].
void horizontal_pass(const uint8_t* in, int64_t in_w, uint8_t* out, int64_t out_w, int64_t rows, const AxisCoeffs& c) {
  for (int64_t y = 0; y < rows; ++y) {
    const uint8_t* src = in + y * in_w * 3;
    uint8_t* dst = out + y * out_w * 3;
    for (int64_t xx = 0; xx < out_w; ++xx) {
      const int32_t* w = c.weights.data() + xx * c.ksize;
      const uint8_t* s = src + c.first[static_cast<size_t>(xx)] * 3;
      int32_t r = 1 << (kPrecisionBits - 1), g = r, b = r;
      for (int64_t x = 0, n = c.count[static_cast<size_t>(xx)]; x < n; ++x) {
        r += s[3 * x + 0] * w[x];
        g += s[3 * x + 1] * w[x];
        b += s[3 * x + 2] * w[x];
      }
      dst[3 * xx + 0] = clip8(r);
      dst[3 * xx + 1] = clip8(g);
      dst[3 * xx + 2] = clip8(b);
    }
  }
}

// out [out_h, width, 3] from in [in_h, width, 3].
void vertical_pass(const uint8_t* in, uint8_t* out, int64_t out_h, int64_t width, const AxisCoeffs& c) {
  const int64_t row = width * 3;
  std::vector<int32_t> acc(static_cast<size_t>(row));
  for (int64_t yy = 0; yy < out_h; ++yy) {
    const int32_t* w = c.weights.data() + yy * c.ksize;
    std::fill(acc.begin(), acc.end(), 1 << (kPrecisionBits - 1));
    const uint8_t* src = in + c.first[static_cast<size_t>(yy)] * row;
    for (int64_t y = 0, n = c.count[static_cast<size_t>(yy)]; y < n; ++y) {
      const uint8_t* s = src + y * row;
      const int32_t k = w[y];
      for (int64_t i = 0; i < row; ++i) acc[static_cast<size_t>(i)] += s[i] * k;
    }
    uint8_t* dst = out + yy * row;
    for (int64_t i = 0; i < row; ++i) dst[i] = clip8(acc[static_cast<size_t>(i)]);
  }
}

}  // namespace

Image resize_bicubic(const Image& in, int64_t height, int64_t width) {
  GRPO_CHECK(height > 0 && width > 0, "[image] cannot resize to ", width, "x", height);
  GRPO_CHECK(in.height > 0 && in.width > 0 && in.rgb.size() == static_cast<size_t>(in.height * in.width * 3),
             "[image] resize of an invalid ", in.width, "x", in.height, " picture");
  if (height == in.height && width == in.width) return in;
  // Pillow resizes horizontally first, into an 8-bit picture, then vertically.
  Image wide;  // [in.height, width, 3] when the width changes
  if (width != in.width) {
    wide.height = in.height;
    wide.width = width;
    wide.rgb.resize(static_cast<size_t>(in.height * width * 3));
    horizontal_pass(in.rgb.data(), in.width, wide.rgb.data(), width, in.height, axis_coeffs(in.width, width));
    if (height == in.height) return wide;
  }
  const Image& src = width != in.width ? wide : in;
  Image out;
  out.height = height;
  out.width = width;
  out.rgb.resize(static_cast<size_t>(height * width * 3));
  vertical_pass(src.rgb.data(), out.rgb.data(), height, width, axis_coeffs(in.height, height));
  return out;
}

}  // namespace grpo
