// Google Benchmark of picture preprocessing: PNG and JPEG decoding (MB/s of file bytes, pictures/s),
// Pillow-exact bicubic resizing (output megapixels/s) and the whole path from file bytes to patch rows
// under the Qwen3-VL-8B limits (pictures/s and output MB/s of f32 pixel_values).
#include <benchmark/benchmark.h>

#include <cmath>
#include <string>

#include "core/rng.h"
#include "image/image.h"
#include "image/preprocess.h"
#include "image/resize.h"

namespace {

// A picture with smooth gradients, edges and some noise (compresses like a photo-ish drawing).
grpo::Image test_picture(int64_t h, int64_t w) {
  grpo::Image img{h, w, {}};
  grpo::Rng rng(7);
  img.rgb.reserve(static_cast<size_t>(h * w * 3));
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) {
      const bool disc = std::hypot(static_cast<double>(y - h / 2), static_cast<double>(x - w / 3)) < h / 4.0;
      img.rgb.push_back(static_cast<uint8_t>(disc ? 220 : (x * 255) / w));
      img.rgb.push_back(static_cast<uint8_t>((y * 255) / h));
      img.rgb.push_back(static_cast<uint8_t>(100 + rng.below(16)));
    }
  return img;
}

std::span<const uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

grpo::ImageProcessorConfig qwen3_vl_8b() { return grpo::ImageProcessorConfig{}; }  // the defaults are the 8B file's

// Args: height, width.
void BM_png_decode(benchmark::State& state) {
  const std::string png = grpo::encode_png(test_picture(state.range(0), state.range(1)));
  for (auto _ : state) benchmark::DoNotOptimize(grpo::decode_image(bytes_of(png), "bench.png").rgb.data());
  state.counters["MB/s"] = benchmark::Counter(png.size() * 1e-6, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["pictures/s"] = benchmark::Counter(1, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_png_decode)->Args({96, 96})->Args({480, 640})->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_png_encode(benchmark::State& state) {
  const grpo::Image img = test_picture(state.range(0), state.range(1));
  for (auto _ : state) benchmark::DoNotOptimize(grpo::encode_png(img).data());
  state.counters["MB/s"] = benchmark::Counter(img.rgb.size() * 1e-6, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_png_encode)->Args({96, 96})->Unit(benchmark::kMicrosecond)->UseRealTime();

// Args: input height, width, output height, width.
void BM_resize_bicubic(benchmark::State& state) {
  const grpo::Image img = test_picture(state.range(0), state.range(1));
  const int64_t oh = state.range(2), ow = state.range(3);
  for (auto _ : state) benchmark::DoNotOptimize(grpo::resize_bicubic(img, oh, ow).rgb.data());
  state.counters["Mpixel/s"] = benchmark::Counter(oh * ow * 1e-6, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_resize_bicubic)
    ->Args({64, 96, 224, 320})      // a small picture scaled up to the 8B minimum
    ->Args({1080, 1920, 1088, 1920})  // nearly the same size
    ->Args({4000, 6000, 1024, 1536})  // shrinking: wide antialiasing support
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// File bytes -> pixel_values. Args: height, width.
void BM_preprocess_png(benchmark::State& state) {
  const std::string png = grpo::encode_png(test_picture(state.range(0), state.range(1)));
  const grpo::ImageProcessorConfig c = qwen3_vl_8b();
  int64_t out_bytes = 0;
  for (auto _ : state) {
    const grpo::PictureBatch b = grpo::preprocess_image(grpo::decode_image(bytes_of(png), "bench.png"), c, "bench.png");
    out_bytes = static_cast<int64_t>(b.pixel_values.size() * sizeof(float));
    benchmark::DoNotOptimize(b.pixel_values.data());
  }
  state.counters["pictures/s"] = benchmark::Counter(1, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["out MB/s"] = benchmark::Counter(out_bytes * 1e-6, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_preprocess_png)->Args({96, 96})->Args({480, 640})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
