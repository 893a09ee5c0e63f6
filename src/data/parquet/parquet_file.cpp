// Parquet file reading (see parquet_file.h).
#include "data/parquet/parquet_file.h"

#include <algorithm>
#include <cstring>
#include <fstream>

#include "core/error.h"
#include "data/parquet/column_chunk.h"

namespace grpo::parquet {

ParquetFile::ParquetFile(const std::string& path) : path_(path) {
  try {
    map_ = MappedFile(path);
  } catch (const Error& e) {
    fail("[parquet] ", path, ": cannot be read: ", e.what());
  }
  data_ = map_.data();
  size_ = map_.size();
  open();
}

ParquetFile::ParquetFile(const uint8_t* data, size_t size, const std::string& name)
    : data_(data), size_(size), path_(name) {
  open();
}

void ParquetFile::open() {
  const std::string at = cat("[parquet] ", path_, ": ");
  if (size_ < 12) fail(at, "not a Parquet file (", size_, " bytes, less than magic + footer + magic)");
  if (std::memcmp(data_, "PAR1", 4) != 0) {
    if (std::memcmp(data_, "PARE", 4) == 0) fail(at, "the file is encrypted (PARE): encrypted files are not supported");
    fail(at, "not a Parquet file (it does not start with \"PAR1\")");
  }
  const uint8_t* tail = data_ + size_ - 8;
  if (std::memcmp(tail + 4, "PAR1", 4) != 0)
    fail(at, "truncated or not a Parquet file (it does not end with \"PAR1\")");
  uint32_t footer_len;
  std::memcpy(&footer_len, tail, 4);
  if (footer_len > size_ - 12) fail(at, "footer length ", footer_len, " exceeds the ", size_, "-byte file (truncated?)");
  try {
    meta_ = parse_file_metadata(tail - footer_len, footer_len);
    schema_ = std::make_unique<Schema>(meta_.schema);
  } catch (const Error& e) {
    fail(at, "footer: ", e.what());
  }
  if (meta_.num_rows < 0) fail(at, "footer: num_rows ", meta_.num_rows);
  int64_t rows = 0;
  const auto& leaves = schema_->leaves();
  for (size_t g = 0; g < meta_.row_groups.size(); ++g) {
    const RowGroupMeta& rg = meta_.row_groups[g];
    const std::string in = cat(at, "row group ", g, ": ");
    if (rg.num_rows < 0) fail(in, "num_rows ", rg.num_rows);
    rows += rg.num_rows;
    if (rg.columns.size() != leaves.size())
      fail(in, rg.columns.size(), " column chunks, the schema has ", leaves.size(), " columns");
    for (size_t c = 0; c < leaves.size(); ++c) {
      const ColumnChunkMeta& cc = rg.columns[c];
      const std::string col = cat(in, "column ", leaves[c].path, ": ");
      if (cc.encrypted) fail(col, "the column is encrypted: encrypted files are not supported");
      if (!cc.file_path.empty()) fail(col, "its data is in another file (", cc.file_path, "): not supported");
      if (!cc.has_meta) fail(col, "the column chunk has no metadata");
      if (cc.meta.type != static_cast<int32_t>(leaves[c].type))
        fail(col, "column chunk of type ", physical_type_name(cc.meta.type), ", the schema says ",
             physical_type_name(static_cast<int32_t>(leaves[c].type)));
      if (cc.meta.path != leaves[c].parts) {
        std::string p;
        for (const std::string& s : cc.meta.path) p += (p.empty() ? "" : ".") + s;
        fail(col, "column chunk for path \"", p, "\" where the schema has \"", leaves[c].path, "\"");
      }
    }
  }
  if (rows != meta_.num_rows) fail(at, "footer: the row groups hold ", rows, " rows, num_rows says ", meta_.num_rows);
}

int64_t ParquetFile::row_group_rows(int row_group) const {
  GRPO_CHECK(row_group >= 0 && row_group < num_row_groups(), "[parquet] ", path_, ": no row group ", row_group,
             " (the file has ", num_row_groups(), ")");
  return meta_.row_groups[static_cast<size_t>(row_group)].num_rows;
}

std::vector<std::string> ParquetFile::column_names() const {
  std::vector<std::string> out;
  for (const Field& f : schema_->fields()) out.push_back(f.name);
  return out;
}

std::string ParquetFile::where(int row_group) const { return cat("[parquet] ", path_, ": row group ", row_group); }

std::vector<nlohmann::json> ParquetFile::read_rows(int row_group, int64_t begin, int64_t end,
                                                   const std::vector<std::string>& columns) const {
  const int64_t n = row_group_rows(row_group);
  GRPO_CHECK(begin >= 0 && begin <= end && end <= n, where(row_group), ": rows [", begin, ", ", end,
             ") outside its ", n, " rows");
  std::vector<char> wanted(schema_->fields().size(), columns.empty() ? 1 : 0);
  for (const std::string& c : columns) {
    const int t = schema_->field_index(c);
    GRPO_CHECK(t >= 0, "[parquet] ", path_, ": no column \"", c, "\"");
    wanted[static_cast<size_t>(t)] = 1;
  }
  std::vector<nlohmann::json> rows(static_cast<size_t>(end - begin), nlohmann::json::object());
  if (begin == end) return rows;
  const std::lock_guard<std::mutex> lock(read_mutex_);
  const size_t n_leaves = schema_->leaves().size();
  if (page_index_.empty()) page_index_.resize(meta_.row_groups.size() * n_leaves);
  const RowGroupMeta& rg = meta_.row_groups[static_cast<size_t>(row_group)];
  if (reader_group_ != row_group) {
    readers_.clear();
    readers_.resize(n_leaves);
    reader_group_ = row_group;
  }
  for (const LeafColumn& leaf : schema_->leaves()) {
    if (!wanted[static_cast<size_t>(leaf.top)]) continue;
    std::unique_ptr<ColumnChunkReader>& reader = readers_[static_cast<size_t>(leaf.index)];
    if (!reader) {
      ChunkSource src;
      src.file = data_;
      src.file_size = size_;
      src.meta = &rg.columns[static_cast<size_t>(leaf.index)].meta;
      src.leaf = &leaf;
      src.row_group_rows = n;
      src.index = &page_index_[static_cast<size_t>(row_group) * n_leaves + static_cast<size_t>(leaf.index)];
      reader = std::make_unique<ColumnChunkReader>(src);
    }
    try {
      RowAssembler out(schema_->leaf_path(leaf.index), leaf.max_rep, rows, begin);
      reader->read(begin, end, out);
    } catch (const Error& e) {
      reader.reset();  // its state is not to be trusted after an error
      fail(where(row_group), ", column ", leaf.path, ": ", e.what());
    }
  }
  if (schema_->has_maps()) {
    for (size_t t = 0; t < schema_->fields().size(); ++t) {
      if (!wanted[t]) continue;
      const Field& f = schema_->fields()[t];
      try {
        for (auto& row : rows) finish_maps(f, row[f.name]);
      } catch (const Error& e) {
        fail(where(row_group), ", column ", f.name, ": ", e.what());
      }
    }
  }
  return rows;
}

std::vector<nlohmann::json> ParquetFile::read_row_group(int row_group, const std::vector<std::string>& columns) const {
  return read_rows(row_group, 0, row_group_rows(row_group), columns);
}

void ParquetFile::for_each_row(const std::function<void(nlohmann::json& row)>& fn,
                               const std::vector<std::string>& columns) const {
  for (int g = 0; g < num_row_groups(); ++g) {
    const int64_t n = row_group_rows(g);
    for (int64_t b = 0; b < n; b += kRowsPerRead) {
      std::vector<nlohmann::json> rows = read_rows(g, b, std::min(n, b + kRowsPerRead), columns);
      for (auto& row : rows) fn(row);
    }
  }
}

bool has_parquet_magic(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[4] = {};
  return f.read(magic, 4) && std::memcmp(magic, "PAR1", 4) == 0;
}

}  // namespace grpo::parquet
