// The Parquet reader against files from independent writers (tests/data/parquet/, made by its generator
// with DuckDB, arrow-rs, hyparquet-writer and parquetjs): every row of every file must equal the rows the
// generator wrote from its own values; row ranges and column subsets must agree with whole reads.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/files.h"
#include "data/parquet/parquet_file.h"

namespace grpo::parquet {
namespace {

const std::string kFilesDir = std::string(GRPO_SOURCE_DIR) + "/tests/data/parquet/";

// Binary values as the generator writes them: {"$binary_hex": "..."}.
void binary_as_hex(nlohmann::json& v) {
  if (v.is_binary()) {
    static const char* hex = "0123456789abcdef";
    std::string s;
    for (uint8_t b : v.get_binary()) {
      s.push_back(hex[b >> 4]);
      s.push_back(hex[b & 15]);
    }
    v = nlohmann::json{{"$binary_hex", s}};
  } else if (v.is_structured()) {
    for (auto& e : v) binary_as_hex(e);
  }
}

std::vector<nlohmann::json> expected_rows(const std::string& name) {
  std::vector<nlohmann::json> rows;
  for_each_line(kFilesDir + name, [&](int64_t, const std::string& line) {
    if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
  });
  return rows;
}

std::vector<nlohmann::json> all_rows(const ParquetFile& f, const std::vector<std::string>& columns = {}) {
  std::vector<nlohmann::json> rows;
  f.for_each_row([&](nlohmann::json& row) { rows.push_back(std::move(row)); }, columns);
  for (auto& r : rows) binary_as_hex(r);
  return rows;
}

nlohmann::json manifest() { return nlohmann::json::parse(read_file(kFilesDir + "manifest.json")); }

TEST(ParquetFiles, EveryFileDecodesToTheWritersRows) {
  const nlohmann::json m = manifest();
  ASSERT_GE(m.size(), 15u);
  for (const auto& [file, expected] : m.items()) {
    SCOPED_TRACE(file);
    const ParquetFile f(kFilesDir + file);
    const std::vector<nlohmann::json> want = expected_rows(expected.get<std::string>());
    const std::vector<nlohmann::json> got = all_rows(f);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(f.num_rows(), static_cast<int64_t>(want.size()));
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(got[i], want[i]) << "row " << i << "\n got: " << got[i].dump() << "\nwant: " << want[i].dump();
  }
}

TEST(ParquetFiles, SeveralRowGroupsAreWritten) {
  // The files meant to have several row groups do (so that reading across them is tested).
  for (const char* file : {"arrowrs_snappy_dict_v1.parquet", "hyparquet_encodings.parquet",
                           "parquetjs_gzip_v1.parquet"}) {
    SCOPED_TRACE(file);
    EXPECT_GT(ParquetFile(kFilesDir + file).num_row_groups(), 1);
  }
}

TEST(ParquetFiles, RowRangesAndColumnSubsetsAgreeWithWholeReads) {
  const nlohmann::json m = manifest();
  for (const auto& [file, expected] : m.items()) {
    SCOPED_TRACE(file);
    const ParquetFile f(kFilesDir + file);
    const std::vector<nlohmann::json> whole = all_rows(f);
    const std::vector<std::string> names = f.column_names();
    const std::vector<std::string> some = {names.back(), names.front()};
    const std::vector<nlohmann::json> subset = all_rows(f, some);
    ASSERT_EQ(subset.size(), whole.size());
    for (size_t i = 0; i < whole.size(); ++i) {
      nlohmann::json want = nlohmann::json::object();
      for (const std::string& c : some) want[c] = whole[i][c];
      EXPECT_EQ(subset[i], want) << "row " << i;
    }
    int64_t first = 0;
    for (int g = 0; g < f.num_row_groups(); ++g) {
      const int64_t n = f.row_group_rows(g);
      for (int64_t b = 0; b < n; b += 3) {
        const int64_t e = std::min(n, b + 1 + (b % 4));
        std::vector<nlohmann::json> part = f.read_rows(g, b, e);
        ASSERT_EQ(part.size(), static_cast<size_t>(e - b));
        for (int64_t r = b; r < e; ++r) {
          binary_as_hex(part[static_cast<size_t>(r - b)]);
          EXPECT_EQ(part[static_cast<size_t>(r - b)], whole[static_cast<size_t>(first + r)]) << "group " << g << " row " << r;
        }
      }
      // Backwards, single rows: the readers' cursors and page index must not carry a later position over.
      for (int64_t r = n - 1; r >= 0; r -= 5) {
        std::vector<nlohmann::json> one = f.read_rows(g, r, r + 1);
        binary_as_hex(one[0]);
        EXPECT_EQ(one[0], whole[static_cast<size_t>(first + r)]) << "group " << g << " row " << r << " (backwards)";
      }
      first += n;
    }
  }
}

TEST(ParquetFiles, UnknownColumnAndRowRangeAreErrors) {
  const ParquetFile f(kFilesDir + "duckdb_verl_snappy.parquet");
  try {
    f.read_rows(0, 0, 1, {"no_such_column"});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no column \"no_such_column\""), std::string::npos) << e.what();
  }
  EXPECT_THROW(f.read_rows(0, 0, f.row_group_rows(0) + 1), Error);
  EXPECT_THROW(f.read_rows(f.num_row_groups(), 0, 0), Error);
}

}  // namespace
}  // namespace grpo::parquet
