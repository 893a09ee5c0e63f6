// Parquet data files in the dataset loader: verl's rows from DuckDB / arrow-rs / parquetjs files load to
// the same examples as the same rows written as JSONL; a vision set's pictures stored in the file are
// probed at load and decoded from the file when used, equal to decoding the generator's own bytes.
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/files.h"
#include "data/dataset.h"
#include "data/vision_data.h"
#include "image/image.h"

using namespace grpo;

namespace {

const std::string kParquetDir = std::string(GRPO_SOURCE_DIR) + "/tests/data/parquet/";
const std::string kVlRef = std::string(GRPO_SHARED_DIR) + "/reference/models/qwen3-vl/";

void expect_same_examples(const Dataset& got, const Dataset& want) {
  ASSERT_EQ(got.examples.size(), want.examples.size());
  EXPECT_EQ(got.lines, want.lines);
  for (size_t i = 0; i < want.examples.size(); ++i) {
    const Example& a = got.examples[i];
    const Example& b = want.examples[i];
    SCOPED_TRACE(i);
    EXPECT_EQ(a.id, b.id);
    EXPECT_EQ(a.prompt, b.prompt);
    EXPECT_EQ(a.messages, b.messages);
    EXPECT_EQ(a.answer, b.answer);
    EXPECT_EQ(a.data_source, b.data_source);
    EXPECT_EQ(a.extra, b.extra);
    EXPECT_EQ(a.line, b.line);
  }
}

TEST(ParquetDataset, VerlRowsLoadAsTheirJsonl) {
  const Dataset jsonl = load_dataset(kParquetDir + "verl.expected.jsonl");
  EXPECT_EQ(jsonl.examples.size(), 45u);
  for (const char* file : {"duckdb_verl_zstd_v2.parquet", "duckdb_verl_snappy.parquet", "duckdb_verl_none.parquet"}) {
    SCOPED_TRACE(file);
    EXPECT_TRUE(is_parquet_file(kParquetDir + file));
    expect_same_examples(load_dataset(kParquetDir + file), jsonl);
  }
  // Other columns reach the examples as JSONL fields do (arrow-rs rows also carry `score` and `tags`).
  expect_same_examples(load_dataset(kParquetDir + "arrowrs_zstd_delta_v2.parquet"),
                       load_dataset(kParquetDir + "arrowrs.expected.jsonl"));
  const Dataset ds = load_dataset(kParquetDir + "arrowrs_snappy_dict_v1.parquet");
  EXPECT_TRUE(ds.examples[1].extra.contains("score"));
  EXPECT_EQ(ds.examples[1].extra["extra_info"]["split"], "train");
  EXPECT_EQ(ds.examples[3].id, "3");  // extra_info.index
}

const ImageProcessorConfig& vl_processor() {
  static const ImageProcessorConfig p = load_image_processor_config(kVlRef);
  return p;
}

DatasetOptions vision_options() {
  DatasetOptions o;
  o.image_processor = &vl_processor();
  return o;
}

TEST(ParquetDataset, ListsOfFilesConcatenate) {
  const Dataset both = load_datasets({kParquetDir + "duckdb_verl_snappy.parquet", kParquetDir + "duckdb_vision.parquet"},
                                     vision_options());
  EXPECT_EQ(both.examples.size(), 45u + 12u);
  EXPECT_EQ(both.lines, 57);
  EXPECT_EQ(both.examples[45].data_source, "hiyouga/geometry3k");
}

TEST(ParquetDataset, BadRowsNameFileAndRow) {
  // parquetjs rows with an empty prompt list are refused, naming the file and the row.
  try {
    load_dataset(kParquetDir + "parquetjs_gzip_v1.parquet");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("parquetjs_gzip_v1.parquet row 3: \"prompt\" must be a non-empty array"),
              std::string::npos)
        << e.what();
  }
}

TEST(ParquetDataset, StoredPicturesAreProbedAndDecodedFromTheFile) {
  const ImageProcessorConfig& processor = vl_processor();
  const std::string path = kParquetDir + "duckdb_vision.parquet";
  const Dataset ds = load_dataset(path, vision_options());
  ASSERT_EQ(ds.examples.size(), 12u);
  // The generator's own bytes for each picture.
  std::vector<nlohmann::json> want;
  for_each_line(kParquetDir + "duckdb_vision.expected.jsonl", [&](int64_t, const std::string& l) {
    if (!l.empty()) want.push_back(nlohmann::json::parse(l));
  });
  for (size_t i = 0; i < ds.examples.size(); ++i) {
    SCOPED_TRACE(i);
    const Example& ex = ds.examples[i];
    const nlohmann::json& images = want[i]["images"];
    ASSERT_EQ(ex.images.size(), images.size());
    ASSERT_TRUE(ex.picture_file);
    EXPECT_FALSE(ex.extra.contains("images"));
    PictureBatch direct;
    direct.row_width = processor.row_width();
    direct.merge_size = processor.merge_size;
    for (size_t k = 0; k < images.size(); ++k) {
      const std::string hex = images[k]["bytes"]["$binary_hex"];
      std::vector<uint8_t> bytes;
      for (size_t c = 0; c < hex.size(); c += 2) bytes.push_back(static_cast<uint8_t>(std::stoi(hex.substr(c, 2), nullptr, 16)));
      direct.append(preprocess_image(decode_image(bytes, "want"), processor, "want"));
    }
    EXPECT_EQ(ex.image_grids, direct.grids);
    const PictureBatch got = load_example_pictures(ex, processor, path);
    EXPECT_EQ(got.grids, direct.grids);
    EXPECT_EQ(got.pixel_values, direct.pixel_values);
  }
  // Without an image processor (a text model), rows with pictures are an error naming the row.
  try {
    load_dataset(path);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("duckdb_vision.parquet row 1: the row has pictures"), std::string::npos)
        << e.what();
  }
}

}  // namespace
