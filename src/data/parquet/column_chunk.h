// Reads one column chunk of a row group, page by page: page headers, decompression, repetition and
// definition levels, dictionary and data pages (v1 and v2), and hands each (repetition, definition, value)
// triple of the rows asked for to a RowAssembler, which builds the JSON rows. Pages wholly outside the rows
// asked for are skipped without decoding their values (and, when the header tells their row count, without
// decompressing them).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "data/parquet/metadata.h"
#include "data/parquet/schema.h"

namespace grpo::parquet {

// Puts one leaf column's values into rows [begin, begin + rows.size()) of a row group.
class RowAssembler {
 public:
  RowAssembler(const std::vector<PathStep>& path, int max_rep, std::vector<nlohmann::json>& rows, int64_t begin)
      : path_(path), rows_(rows), begin_(begin), index_(static_cast<size_t>(max_rep) + 1, 0) {}

  // `value` is null when def < the leaf's max_def. `row` is the row group's row the triple belongs to.
  void add(int64_t row, int rep, int def, nlohmann::json* value);

 private:
  const std::vector<PathStep>& path_;
  std::vector<nlohmann::json>& rows_;
  int64_t begin_;
  std::vector<size_t> index_;  // per repetition level: the element the current triple goes into
};

// Where a column chunk's data pages start, learnt while reading it, so that a later read of rows deep in
// the chunk starts at the page that holds them instead of decoding (for repeated columns in v1 pages:
// decompressing) every page before them.
struct PageIndex {
  struct Entry {
    int64_t offset;         // the page header's byte offset in the file
    int64_t first_row;      // the row the page's first value starts
    int64_t values_before;  // values of the chunk before the page
  };
  std::vector<Entry> pages;        // pages that start a row, in file order
  int64_t dictionary_offset = -1;  // the dictionary page, when the chunk has one
};

struct ChunkSource {
  const uint8_t* file = nullptr;  // the whole file (mapped)
  size_t file_size = 0;
  const ColumnMeta* meta = nullptr;
  const LeafColumn* leaf = nullptr;
  int64_t row_group_rows = 0;
  PageIndex* index = nullptr;  // optional: used and extended
};

// Reads a column chunk; kept between reads of consecutive row ranges, it keeps the dictionary and the last
// page decoded (a page often holds thousands of rows).
class ColumnChunkReader {
 public:
  explicit ColumnChunkReader(const ChunkSource& src);
  ~ColumnChunkReader();
  ColumnChunkReader(const ColumnChunkReader&) = delete;
  ColumnChunkReader& operator=(const ColumnChunkReader&) = delete;

  // Decodes rows [begin, end) of the chunk into `out`. Throws grpo::Error naming the page (its byte offset)
  // and what is wrong; the caller adds the file, row group and column.
  void read(int64_t begin, int64_t end, RowAssembler& out);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace grpo::parquet
