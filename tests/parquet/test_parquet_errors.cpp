// Corrupt, truncated and unsupported Parquet files: each gets a grpo::Error starting "[parquet] FILE" that
// names the row group, the column and what is wrong, never a crash or wrong rows.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/files.h"
#include "data/parquet/metadata.h"
#include "data/parquet/parquet_file.h"

namespace grpo::parquet {
namespace {

const std::string kErrorFilesDir = std::string(GRPO_SOURCE_DIR) + "/tests/data/parquet/";

std::string bytes_of(const std::string& name) { return read_file(kErrorFilesDir + name); }

// The error message of reading every row of `bytes` ("" when it reads).
std::string error_of(const std::string& bytes) {
  try {
    const ParquetFile f(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "bad.parquet");
    for (int g = 0; g < f.num_row_groups(); ++g) f.read_row_group(g);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

FileMetaData footer_of(const std::string& bytes) {
  uint32_t len;
  std::memcpy(&len, bytes.data() + bytes.size() - 8, 4);
  return parse_file_metadata(reinterpret_cast<const uint8_t*>(bytes.data()) + bytes.size() - 8 - len, len);
}

TEST(ParquetErrors, NotParquetTruncatedAndEmpty) {
  EXPECT_TRUE(has(error_of("{\"prompt\": \"hi\"}\n"), "[parquet] bad.parquet: not a Parquet file"));
  const std::string good = bytes_of("duckdb_verl_snappy.parquet");
  const std::string cut = good.substr(0, good.size() - 100);
  EXPECT_TRUE(has(error_of(cut), "does not end with \"PAR1\"")) << error_of(cut);
  std::string bad_len = good;
  const uint32_t huge = 1u << 30;
  std::memcpy(&bad_len[bad_len.size() - 8], &huge, 4);
  EXPECT_TRUE(has(error_of(bad_len), "footer length 1073741824 exceeds")) << error_of(bad_len);
  std::string encrypted = good;
  std::memcpy(&encrypted[0], "PARE", 4);
  EXPECT_TRUE(has(error_of(encrypted), "encrypted")) << error_of(encrypted);
  try {
    ParquetFile("/nonexistent/x.parquet");
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "[parquet] /nonexistent/x.parquet")) << e.what();
  }
}

TEST(ParquetErrors, CorruptFooterNamesTheFooter) {
  std::string bytes = bytes_of("duckdb_verl_snappy.parquet");
  uint32_t len;
  std::memcpy(&len, bytes.data() + bytes.size() - 8, 4);
  // Overwrite the middle of the footer with 0xff bytes (varints that never end, unknown types).
  const size_t start = bytes.size() - 8 - len;
  for (size_t i = start + len / 3; i < start + len / 3 + 24; ++i) bytes[i] = static_cast<char>(0xff);
  const std::string e = error_of(bytes);
  EXPECT_TRUE(has(e, "[parquet] bad.parquet: footer: ")) << e;
}

TEST(ParquetErrors, CorruptPageNamesRowGroupColumnAndPage) {
  // Each column chunk's first page header overwritten with garbage, one at a time.
  const std::string good = bytes_of("duckdb_verl_none.parquet");
  const FileMetaData md = footer_of(good);
  for (size_t c = 0; c < md.row_groups[0].columns.size(); ++c) {
    const ColumnMeta& m = md.row_groups[0].columns[c].meta;
    int64_t at = m.dictionary_page_offset > 0 ? m.dictionary_page_offset : m.data_page_offset;
    std::string bytes = good;
    for (int i = 0; i < 6; ++i) bytes[static_cast<size_t>(at + i)] = static_cast<char>(0xff);
    std::string path;
    for (const std::string& p : m.path) path += (path.empty() ? "" : ".") + p;
    const std::string e = error_of(bytes);
    EXPECT_TRUE(has(e, "[parquet] bad.parquet: row group 0, column " + path + ": page at byte " + std::to_string(at)))
        << e;
  }
}

TEST(ParquetErrors, CorruptCompressedDataIsAnError) {
  // Inside the snappy / zstd / gzip data of every page: bytes flipped must be an error or (rarely) still
  // decode; never a crash. The first data page's payload is overwritten past its header.
  for (const char* file : {"duckdb_verl_snappy.parquet", "duckdb_verl_zstd_v2.parquet", "arrowrs_gzip_v1.parquet",
                           "arrowrs_brotli_v2.parquet", "arrowrs_lz4raw_v1.parquet"}) {
    SCOPED_TRACE(file);
    const std::string good = bytes_of(file);
    const FileMetaData md = footer_of(good);
    const ColumnMeta& m = md.row_groups[0].columns[1].meta;  // prompt's role (list.element or list.item)
    std::string path;
    for (const std::string& p : m.path) path += (path.empty() ? "" : ".") + p;
    const PageHeader h = parse_page_header(reinterpret_cast<const uint8_t*>(good.data()) + m.data_page_offset,
                                           good.size() - static_cast<size_t>(m.data_page_offset));
    std::string bytes = good;
    const size_t payload = static_cast<size_t>(m.data_page_offset) + h.header_size;
    for (size_t i = 0; i < static_cast<size_t>(h.compressed_size); i += 3) bytes[payload + i] = static_cast<char>(0xa5);
    const std::string e = error_of(bytes);
    EXPECT_TRUE(has(e, "row group 0, column " + path + ": page at byte")) << e;
  }
}

TEST(ParquetErrors, SchemaAndChunkMismatches) {
  // A row group whose column chunks do not match the schema (here: a truncated list of chunks) is refused
  // when the file is opened. Built by re-serialising nothing: the footer's schema is cut short instead.
  std::string bytes = bytes_of("hyparquet_encodings.parquet");
  const FileMetaData md = footer_of(bytes);
  ASSERT_EQ(md.schema.size(), 7u);
  ASSERT_EQ(md.schema[0].num_children, 6);
  // The root's num_children is the first i32 of the first schema element: find it (zigzag 6 = 12) after
  // the "root" name and make it 7 (14), so that one child is missing.
  uint32_t len;
  std::memcpy(&len, bytes.data() + bytes.size() - 8, 4);
  const size_t start = bytes.size() - 8 - len;
  const size_t root = bytes.find("root", start);
  ASSERT_NE(root, std::string::npos);
  const size_t nc = bytes.find(static_cast<char>(12), root + 4);
  ASSERT_NE(nc, std::string::npos);
  bytes[nc] = 14;
  const std::string e = error_of(bytes);
  EXPECT_TRUE(has(e, "[parquet] bad.parquet: footer: schema:")) << e;
}

}  // namespace
}  // namespace grpo::parquet
