// A Parquet file, read natively (no Arrow): the footer is read when the file is opened (memory-mapped, so
// only the pages that are decoded are ever read from disk), and rows are decoded one row group at a time,
// only the columns asked for, as JSON objects (see schema.h for how values map to JSON). Errors are
// grpo::Error "[parquet] FILE: row group G, column C: page at byte B: what is wrong".
// What the reader supports and refuses is written down in docs/data.md.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/files.h"
#include "data/parquet/column_chunk.h"
#include "data/parquet/metadata.h"
#include "data/parquet/schema.h"

namespace grpo::parquet {

class ParquetFile {
 public:
  static constexpr int64_t kRowsPerRead = 2048;

  explicit ParquetFile(const std::string& path);  // maps the file and reads its footer
  // Over bytes that the caller keeps alive (tests, fuzzing); `name` stands for the file in errors.
  ParquetFile(const uint8_t* data, size_t size, const std::string& name);

  const std::string& path() const { return path_; }
  int64_t num_rows() const { return meta_.num_rows; }
  int num_row_groups() const { return static_cast<int>(meta_.row_groups.size()); }
  int64_t row_group_rows(int row_group) const;
  const Schema& schema() const { return *schema_; }
  std::vector<std::string> column_names() const;  // the top-level columns, in schema order

  // Rows [begin, end) of a row group as JSON objects with the top-level columns `columns` (all when empty;
  // an unknown name is an error). Only the pages holding those rows are decoded; where each page starts is
  // remembered, so reading rows deep in a large row group again and again does not rescan it. Thread-safe
  // (reads of one file take turns).
  std::vector<nlohmann::json> read_rows(int row_group, int64_t begin, int64_t end,
                                        const std::vector<std::string>& columns = {}) const;
  std::vector<nlohmann::json> read_row_group(int row_group, const std::vector<std::string>& columns = {}) const;

  // Calls fn(row) for each row of the file in order, decoding kRowsPerRead rows at a time (a row group's
  // rows all at once cost more in memory, and in time to allocate it, than they save).
  void for_each_row(const std::function<void(nlohmann::json& row)>& fn, const std::vector<std::string>& columns = {}) const;

 private:
  void open();
  std::string where(int row_group) const;

  MappedFile map_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
  FileMetaData meta_;
  std::unique_ptr<Schema> schema_;
  mutable std::mutex read_mutex_;
  mutable std::vector<PageIndex> page_index_;  // [row group * leaves + leaf], learnt by reads
  // The readers of the row group read last (their decoded dictionary and page), one per leaf.
  mutable int reader_group_ = -1;
  mutable std::vector<std::unique_ptr<ColumnChunkReader>> readers_;
};

// Whether the file starts with Parquet's "PAR1" magic.
bool has_parquet_magic(const std::string& path);

}  // namespace grpo::parquet
