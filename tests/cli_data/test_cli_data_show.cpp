// `grpo data show` run as a user runs it on Parquet and JSONL files: one JSON object a line with every
// column, binary values as their size in bytes, --rows limiting the rows, a clear error for a bad file.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_run.h"
#include "core/files.h"

namespace grpo {
namespace {

const std::string kShowDir = std::string(GRPO_SOURCE_DIR) + "/tests/data/parquet/";

std::vector<nlohmann::json> json_lines(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] == '{') out.push_back(nlohmann::json::parse(line));
  return out;
}

TEST(CliDataShow, ParquetRowsWithPicturesAsSizes) {
  const auto r = test::run_grpo("data show " + kShowDir + "duckdb_vision.parquet --rows 3", "2>/dev/null");
  ASSERT_EQ(r.status, 0) << r.output;
  const auto rows = json_lines(r.output);
  ASSERT_EQ(rows.size(), 3u);
  std::vector<nlohmann::json> want;
  for_each_line(kShowDir + "duckdb_vision.expected.jsonl", [&](int64_t, const std::string& l) {
    if (want.size() < 3) want.push_back(nlohmann::json::parse(l));
  });
  for (size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    for (auto& im : want[i]["images"]) im["bytes"] = im["bytes"]["$binary_hex"].get<std::string>().size() / 2;
    EXPECT_EQ(rows[i], want[i]);
  }
}

TEST(CliDataShow, AllRowsOfParquetAndJsonlAgree) {
  const auto p = test::run_grpo("data show " + kShowDir + "duckdb_verl_zstd_v2.parquet", "2>/dev/null");
  const auto j = test::run_grpo("data show " + kShowDir + "verl.expected.jsonl", "2>/dev/null");
  ASSERT_EQ(p.status, 0) << p.output;
  ASSERT_EQ(j.status, 0) << j.output;
  EXPECT_EQ(json_lines(p.output).size(), 45u);
  EXPECT_EQ(p.output, j.output);
}

TEST(CliDataShow, BrokenFileIsAClearError) {
  const auto r = test::run_grpo("data show " + kShowDir + "manifest.json");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("manifest.json:1: not JSON"), std::string::npos) << r.output;
  const auto q = test::run_grpo("data show " + kShowDir + "no_such.parquet");
  EXPECT_NE(q.status, 0);
  EXPECT_NE(q.output.find("[parquet] " + kShowDir + "no_such.parquet"), std::string::npos) << q.output;
}

}  // namespace
}  // namespace grpo
