// Preprocessing against shared/reference/models/qwen3-vl: the three PNG pictures decode to their sizes,
// their pixel_values rows and grids equal vl_case.safetensors exactly, image_c's bicubic resize equals
// Pillow's (image_c.resized) exactly, and every smart_resize row of preprocess_case.json (sizes and
// refusals) is reproduced.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/files.h"
#include "image/image.h"
#include "image/preprocess.h"
#include "image/resize.h"
#include "train_algo/grpo_case_reader.h"

namespace grpo {
namespace {

const std::string kDir = std::string(GRPO_SHARED_DIR) + "/reference/models/qwen3-vl/";

class ReferencePreprocess : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    vl_case_ = new std::map<std::string, std::vector<double>>(test::read_reference_tensors(kDir + "vl_case.safetensors"));
    pre_case_ = new std::map<std::string, std::vector<double>>(test::read_reference_tensors(kDir + "preprocess_case.safetensors"));
    json_ = new nlohmann::json(nlohmann::json::parse(read_file(kDir + "preprocess_case.json")));
  }
  static void TearDownTestSuite() {
    delete vl_case_;
    delete pre_case_;
    delete json_;
  }
  static std::map<std::string, std::vector<double>>* vl_case_;
  static std::map<std::string, std::vector<double>>* pre_case_;
  static nlohmann::json* json_;
};
std::map<std::string, std::vector<double>>* ReferencePreprocess::vl_case_ = nullptr;
std::map<std::string, std::vector<double>>* ReferencePreprocess::pre_case_ = nullptr;
nlohmann::json* ReferencePreprocess::json_ = nullptr;

TEST_F(ReferencePreprocess, ConfigOfTheTinyModel) {
  const ImageProcessorConfig c = load_image_processor_config(kDir);
  EXPECT_EQ(c.min_pixels, 1024);
  EXPECT_EQ(c.max_pixels, 16384);
  EXPECT_EQ(c.patch_size, 16);
  EXPECT_EQ(c.temporal_patch_size, 2);
  EXPECT_EQ(c.merge_size, 2);
  EXPECT_EQ(c.row_width(), 1536);
  EXPECT_EQ(c.image_mean[1], 0.5);
  EXPECT_EQ(c.image_std[2], 0.5);
}

TEST_F(ReferencePreprocess, PixelValuesAndGridsAreExact) {
  const ImageProcessorConfig c = load_image_processor_config(kDir);
  const std::vector<double>& expected = vl_case_->at("pixel_values");
  const std::vector<double>& grids = vl_case_->at("image_grid_thw");
  int index = 0;
  for (const auto& [name, info] : json_->at("images").items()) {
    SCOPED_TRACE(name);
    const Image img = load_image(kDir + info.at("file").get<std::string>());
    EXPECT_EQ(img.height, info.at("height").get<int64_t>());
    EXPECT_EQ(img.width, info.at("width").get<int64_t>());
    const ResizedSize size = processed_size(c, img.height, img.width, name);
    EXPECT_EQ(size.height, info.at("resized_height").get<int64_t>());
    EXPECT_EQ(size.width, info.at("resized_width").get<int64_t>());

    const PictureBatch b = preprocess_image(img, c, name);
    ASSERT_EQ(b.pictures(), 1);
    const ImageGrid g = b.grids[0];
    const auto& thw = info.at("image_grid_thw");
    EXPECT_EQ(g, (ImageGrid{thw[0].get<int64_t>(), thw[1].get<int64_t>(), thw[2].get<int64_t>()}));
    EXPECT_EQ(g, image_grid(c, img.height, img.width, name));
    EXPECT_EQ((ImageGrid{int64_t(grids[3 * index]), int64_t(grids[3 * index + 1]), int64_t(grids[3 * index + 2])}), g);
    EXPECT_EQ(g.tokens(c.merge_size), info.at("num_image_tokens").get<int64_t>());
    EXPECT_EQ(b.row_width, 1536);

    const std::vector<double>& rows = pre_case_->at(name + ".rows");
    const auto first = static_cast<int64_t>(rows[0]), end = static_cast<int64_t>(rows[1]);
    ASSERT_EQ(b.rows(), end - first);
    int64_t mismatches = 0;
    for (int64_t i = 0; i < b.rows() * 1536; ++i)
      mismatches += b.pixel_values[static_cast<size_t>(i)] != static_cast<float>(expected[static_cast<size_t>(first * 1536 + i)]);
    EXPECT_EQ(mismatches, 0) << "of " << b.rows() * 1536 << " values";
    ++index;
  }
  EXPECT_EQ(index, 3);
}

TEST_F(ReferencePreprocess, BicubicResizeEqualsPillow) {
  const Image img = load_image(kDir + "image_c.png");
  const Image r = resize_bicubic(img, 32, 64);
  const std::vector<double>& expected = pre_case_->at("image_c.resized");
  ASSERT_EQ(r.rgb.size(), expected.size());
  int max_diff = 0, differing = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const int d = std::abs(static_cast<int>(r.rgb[i]) - static_cast<int>(expected[i]));
    max_diff = std::max(max_diff, d);
    differing += d != 0;
  }
  EXPECT_EQ(max_diff, 0) << differing << " of " << expected.size() << " values differ";
}

TEST_F(ReferencePreprocess, SmartResizeTable) {
  int checked = 0;
  for (const auto& row : json_->at("smart_resize")) {
    const int64_t h = row.at("height"), w = row.at("width");
    SCOPED_TRACE(row.dump());
    const auto run = [&] {
      return smart_resize(h, w, row.at("factor"), row.at("min_pixels"), row.at("max_pixels"));
    };
    if (row.contains("error")) {
      const std::string expected = row.at("error");
      try {
        run();
        ADD_FAILURE() << "accepted";
      } catch (const Error& e) {
        // The reference's reasons: a side under the factor, the aspect ratio, a side rounding to 0.
        const std::string key = expected.find("factor") != std::string::npos   ? "smaller than factor"
                                : expected.find("aspect") != std::string::npos ? "aspect ratio above 200"
                                                                               : "rounds down to 0";
        EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
      }
    } else {
      const ResizedSize s = run();
      EXPECT_EQ(s.height, row.at("resized_height").get<int64_t>());
      EXPECT_EQ(s.width, row.at("resized_width").get<int64_t>());
    }
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

// Every 8-bit value: (x/255 - mean)/std in double rounded to float32, as the reference states.
TEST(Normalisation, AllValuesMatchTheReferenceFormula) {
  ImageProcessorConfig c;
  c.min_pixels = c.max_pixels = 32 * 32;
  Image img;
  img.height = img.width = 32;
  img.rgb.resize(32 * 32 * 3);
  for (size_t i = 0; i < img.rgb.size(); ++i) img.rgb[i] = static_cast<uint8_t>(i / 3 % 256);
  const PictureBatch b = preprocess_image(img, c, "ramp");
  // pixel (y, x) of the single 2x2 window: row = (y/16)*2 + x/16, value index ch*512 + frame*256 + (y%16)*16 + x%16.
  for (int y = 0; y < 32; ++y)
    for (int x = 0; x < 32; ++x) {
      const int v = (y * 32 + x) % 256;
      const float want = static_cast<float>((v / 255.0 - 0.5) / 0.5);
      const int64_t row = (y / 16) * 2 + x / 16;
      for (int ch = 0; ch < 3; ++ch)
        for (int f = 0; f < 2; ++f)
          ASSERT_EQ(b.row(row)[ch * 512 + f * 256 + (y % 16) * 16 + x % 16], want) << y << "," << x;
    }
}

}  // namespace
}  // namespace grpo
