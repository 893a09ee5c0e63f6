// preprocessor_config.json parsing (both spellings of the pixel limits, overrides, clear errors), the
// processed size and grid, patch order, the resize's invariants, PictureBatch and pad expansion.
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/rng.h"
#include "image/preprocess.h"
#include "image/resize.h"

namespace grpo {
namespace {

using nlohmann::json;

json qwen3_vl_8b() {
  return json::parse(R"({"size": {"longest_edge": 16777216, "shortest_edge": 65536}, "patch_size": 16,
    "temporal_patch_size": 2, "merge_size": 2, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
    "processor_class": "Qwen3VLProcessor", "image_processor_type": "Qwen2VLImageProcessorFast"})");
}

void expect_config_error(const json& j, const std::string& part) {
  try {
    parse_image_processor_config(j, "pp.json");
    ADD_FAILURE() << "accepted " << j.dump();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[image] pp.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(ProcessorConfig, SpellingsOfThePixelLimits) {
  ImageProcessorConfig c = parse_image_processor_config(qwen3_vl_8b(), "pp.json");
  EXPECT_EQ(c.min_pixels, 65536);
  EXPECT_EQ(c.max_pixels, 16777216);
  EXPECT_EQ(c.factor(), 32);
  json old = qwen3_vl_8b();
  old["size"] = {{"min_pixels", 3136}, {"max_pixels", 12845056}};
  c = parse_image_processor_config(old, "pp.json");
  EXPECT_EQ(c.min_pixels, 3136);
  EXPECT_EQ(c.max_pixels, 12845056);
  json top = qwen3_vl_8b();
  top["min_pixels"] = 1024;
  top["max_pixels"] = 4096;
  c = parse_image_processor_config(top, "pp.json");
  EXPECT_EQ(c.min_pixels, 1024);
  EXPECT_EQ(c.max_pixels, 4096);
  top.erase("size");
  EXPECT_EQ(parse_image_processor_config(top, "pp.json").max_pixels, 4096);
}

TEST(ProcessorConfig, OptionalKeys) {
  json j = qwen3_vl_8b();
  j["rescale_factor"] = 0.00392156862745098;
  j["do_normalize"] = false;
  j["resample"] = 3;
  j["do_convert_rgb"] = true;
  const ImageProcessorConfig c = parse_image_processor_config(j, "pp.json");
  EXPECT_FALSE(c.do_normalize);
  EXPECT_TRUE(c.do_rescale);
  EXPECT_DOUBLE_EQ(c.rescale_factor, 1 / 255.0);
}

TEST(ProcessorConfig, ClearErrors) {
  json j = qwen3_vl_8b();
  j.erase("size");
  expect_config_error(j, "needs the pixel limits");
  j = qwen3_vl_8b();
  j.erase("patch_size");
  expect_config_error(j, "missing \"patch_size\"");
  j = qwen3_vl_8b();
  j["merge_size"] = "2";
  expect_config_error(j, "\"merge_size\" must be an integer");
  j = qwen3_vl_8b();
  j["temporal_patch_size"] = 0;
  expect_config_error(j, "\"temporal_patch_size\" = 0 is outside 1..64");
  j = qwen3_vl_8b();
  j["image_mean"] = {0.5, 0.5};
  expect_config_error(j, "\"image_mean\" must be a list of 3 numbers");
  j = qwen3_vl_8b();
  j["image_std"] = {0.5, 0, 0.5};
  expect_config_error(j, "\"image_std\"[1] is 0");
  j = qwen3_vl_8b();
  j["size"] = {{"shortest_edge", 5000}, {"longest_edge", 4000}};
  expect_config_error(j, "min_pixels 5000 > max_pixels 4000");
  j = qwen3_vl_8b();
  j["resample"] = 2;
  expect_config_error(j, "expected 3 (bicubic)");
  j = qwen3_vl_8b();
  j["do_convert_rgb"] = false;
  expect_config_error(j, "do_convert_rgb");
  expect_config_error(json::array(), "expected a JSON object");
  EXPECT_THROW(load_image_processor_config("/nonexistent/folder"), Error);
}

TEST(ProcessedSize, GuideExamplesAndDoResizeFalse) {
  const ImageProcessorConfig c = parse_image_processor_config(qwen3_vl_8b(), "pp.json");
  // A 64x96 picture under the 8B limits becomes 224x320: 14x20 patches, 70 tokens.
  const ImageGrid g = image_grid(c, 64, 96, "a.png");
  EXPECT_EQ(g, (ImageGrid{1, 14, 20}));
  EXPECT_EQ(g.tokens(c.merge_size), 70);
  // Python's round: 80 / 32 = 2.5 rounds to 2 (then min_pixels scales it up).
  EXPECT_EQ(smart_resize(80, 112, 32, 1, 1 << 30), (ResizedSize{64, 128}));
  EXPECT_EQ(smart_resize(112, 80, 32, 1, 1 << 30), (ResizedSize{128, 64}));
  EXPECT_EQ(smart_resize(96, 48, 32, 1, 1 << 30), (ResizedSize{96, 64}));  // 1.5 -> 2
  ImageProcessorConfig fixed = c;
  fixed.do_resize = false;
  EXPECT_EQ(image_grid(fixed, 64, 96, "a.png"), (ImageGrid{1, 4, 6}));
  EXPECT_THROW(image_grid(fixed, 64, 90, "a.png"), Error);
  try {
    image_grid(c, 20, 300, "thin.png");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("thin.png: height 20 or width 300 smaller than factor 32"), std::string::npos)
        << e.what();
  }
}

// Each row is one patch of both frames, rows in 2x2 merge-window order.
TEST(Patchify, MergeWindowOrder) {
  ImageProcessorConfig c;
  c.min_pixels = 1;
  c.max_pixels = 1 << 20;
  c.do_normalize = false;
  c.do_rescale = false;
  Image img{64, 96, {}};
  // Every pixel holds its patch coordinates: R = patch row, G = patch column, B = position inside.
  for (int y = 0; y < 64; ++y)
    for (int x = 0; x < 96; ++x) img.rgb.insert(img.rgb.end(), {uint8_t(y / 16), uint8_t(x / 16), uint8_t((y % 16) * 16 + x % 16)});
  const PictureBatch b = preprocess_image(img, c, "grid.png");
  ASSERT_EQ(b.grids[0], (ImageGrid{1, 4, 6}));
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t col = 0; col < 6; ++col) {
      const int64_t row = ((r / 2 * 3 + col / 2) * 2 + r % 2) * 2 + col % 2;
      const float* v = b.row(row);
      for (int f = 0; f < 2; ++f)
        for (int i = 0; i < 256; ++i) {
          ASSERT_EQ(v[0 * 512 + f * 256 + i], r);
          ASSERT_EQ(v[1 * 512 + f * 256 + i], col);
          ASSERT_EQ(v[2 * 512 + f * 256 + i], i);
        }
    }
}

TEST(Resize, ConstantStaysConstantAndSameSizeIsIdentity) {
  Image flat{37, 53, std::vector<uint8_t>(37 * 53 * 3, 0)};
  for (size_t i = 0; i < flat.rgb.size(); ++i) flat.rgb[i] = uint8_t(i % 3 == 0 ? 10 : i % 3 == 1 ? 128 : 250);
  for (auto [h, w] : {std::pair{64, 96}, std::pair{32, 32}, std::pair{200, 20}, std::pair{37, 8}}) {
    const Image r = resize_bicubic(flat, h, w);
    ASSERT_EQ(r.rgb.size(), size_t(h * w * 3));
    for (size_t i = 0; i < r.rgb.size(); ++i) ASSERT_EQ(r.rgb[i], flat.rgb[i % 3]) << h << "x" << w;
  }
  Rng rng(1);
  Image noise{9, 7, {}};
  for (int i = 0; i < 9 * 7 * 3; ++i) noise.rgb.push_back(uint8_t(rng.below(256)));
  EXPECT_EQ(resize_bicubic(noise, 9, 7).rgb, noise.rgb);
  EXPECT_THROW(resize_bicubic(noise, 0, 7), Error);
}

TEST(PictureBatch, AppendOffsetsAndTokens) {
  PictureBatch a{1536, 2, std::vector<float>(24 * 1536, 1.0f), {{1, 4, 6}}};
  PictureBatch b{1536, 2, std::vector<float>(4 * 1536, 2.0f), {{1, 2, 2}}};
  PictureBatch all;
  all.append(a);
  all.append(b);
  EXPECT_EQ(all.pictures(), 2);
  EXPECT_EQ(all.rows(), 28);
  EXPECT_EQ(all.tokens(), 7);
  EXPECT_EQ(all.row_offset(1), 24);
  EXPECT_EQ(all.row(24)[0], 2.0f);
  PictureBatch other{768, 2, std::vector<float>(768, 0.0f), {{1, 1, 1}}};
  EXPECT_THROW(all.append(other), Error);
}

TEST(ExpandImagePads, EachPadBecomesItsPicturesTokens) {
  const std::vector<int32_t> ids = {1, 5, 9, 5, 2};
  const std::vector<ImageGrid> grids = {{1, 4, 6}, {1, 2, 4}};
  EXPECT_EQ(expand_image_pads(ids, 5, grids, 2), (std::vector<int32_t>{1, 5, 5, 5, 5, 5, 5, 9, 5, 5, 2}));
  const std::vector<int32_t> two = {5, 7, 5};
  EXPECT_EQ(expand_image_pads(two, 5, grids, 2), (std::vector<int32_t>{5, 5, 5, 5, 5, 5, 7, 5, 5}));
  EXPECT_THROW(expand_image_pads(ids, 5, std::vector<ImageGrid>{}, 2), Error);
  EXPECT_EQ(expand_image_pads(std::vector<int32_t>{3, 4}, 5, std::vector<ImageGrid>{}, 2), (std::vector<int32_t>{3, 4}));
}

}  // namespace
}  // namespace grpo
