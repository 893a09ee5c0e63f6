// Column chunk reading and row assembly (see column_chunk.h).
#include "data/parquet/column_chunk.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "data/parquet/decompress.h"
#include "data/parquet/encodings.h"

namespace grpo::parquet {
namespace {

constexpr int64_t kMaxPageBytes = int64_t{1} << 30;  // decompressed page size this reader accepts

bool is_dictionary_encoding(int32_t e) {
  return e == static_cast<int32_t>(Encoding::PlainDictionary) || e == static_cast<int32_t>(Encoding::RleDictionary);
}

// Levels of a data page v1 (encoding RLE with a 4-byte length, or the old BIT_PACKED); returns bytes used.
size_t read_v1_levels(const uint8_t* p, size_t size, int32_t encoding, int max_level, size_t n, uint8_t* out,
                      const char* what) {
  const int width = bit_width_of(static_cast<uint64_t>(max_level));
  if (encoding == static_cast<int32_t>(Encoding::Rle)) {
    if (size < 4) fail(what, " levels: truncated length");
    uint32_t len;
    std::memcpy(&len, p, 4);
    if (len > size - 4) fail(what, " levels: length ", len, " overruns the ", size, "-byte page");
    decode_rle_hybrid(p + 4, len, width, n, out);
    return 4 + static_cast<size_t>(len);
  }
  if (encoding == static_cast<int32_t>(Encoding::BitPacked)) return decode_bit_packed_levels(p, size, width, n, out);
  fail(what, " levels: encoding ", encoding_name(encoding), " (", encoding, ") is not a level encoding");
}

void check_levels(const uint8_t* levels, size_t n, int max_level, const char* what) {
  for (size_t i = 0; i < n; ++i)
    if (levels[i] > max_level) fail(what, " level ", int(levels[i]), " > the column's maximum ", max_level);
}

}  // namespace

class ColumnChunkReader::Impl {
 public:
  explicit Impl(const ChunkSource& src) : src_(src), leaf_(*src.leaf), meta_(*src.meta) {}

  void read(int64_t begin, int64_t end, RowAssembler& out) {
    int64_t start = meta_.data_page_offset;
    if (meta_.dictionary_page_offset > 0 && meta_.dictionary_page_offset < start) start = meta_.dictionary_page_offset;
    const int64_t size = meta_.total_compressed_size;
    if (start < 4 || size < 0 || start > static_cast<int64_t>(src_.file_size) || size > static_cast<int64_t>(src_.file_size) - start)
      fail("column chunk at byte ", start, " of ", size, " bytes lies outside the ", src_.file_size, "-byte file");
    if (meta_.num_values < 0) fail("column chunk has ", meta_.num_values, " values");
    if (!codec_supported(meta_.codec))
      fail("compression codec ", codec_name(meta_.codec), " (", meta_.codec, ") is not supported");
    const uint8_t* p = src_.file + start;
    const uint8_t* chunk_end = p + size;
    int64_t row = -1;  // the row of the last triple seen
    int64_t values = 0;
    bool data_seen = false;
    PageIndex* index = src_.index;
    if (index && begin > 0) {  // start at the last known page that starts a row at or before `begin`
      const PageIndex::Entry* from = nullptr;
      for (const PageIndex::Entry& e : index->pages)
        if (e.first_row <= begin) from = &e;
      if (from && from->offset > start) {
        if (index->dictionary_offset >= 0) read_dictionary_page_at(index->dictionary_offset, chunk_end);
        p = src_.file + from->offset;
        row = from->first_row - 1;
        values = from->values_before;
        data_seen = true;
      }
    }
    while (values < meta_.num_values && row + 1 <= end) {
      if (p >= chunk_end)
        fail("column chunk ends after ", values, " of its ", meta_.num_values, " values");
      page_at_ = static_cast<size_t>(p - src_.file);
      const int64_t row_before = row;
      try {
        const PageHeader h = parse_page_header(p, static_cast<size_t>(chunk_end - p));
        if (h.compressed_size < 0 || h.uncompressed_size < 0 || h.uncompressed_size > kMaxPageBytes)
          fail("page sizes ", h.compressed_size, " compressed / ", h.uncompressed_size, " uncompressed");
        const uint8_t* payload = p + h.header_size;
        if (h.compressed_size > chunk_end - payload)
          fail("page of ", h.compressed_size, " bytes overruns the column chunk (", chunk_end - payload, " bytes left)");
        if (static_cast<size_t>(h.uncompressed_size) >
            std::max(max_decompressed_size(meta_.codec, static_cast<size_t>(h.compressed_size)),
                     static_cast<size_t>(h.compressed_size)))
          fail("page of ", h.compressed_size, " bytes claims to decompress to ", h.uncompressed_size, " bytes (",
               codec_name(meta_.codec), " cannot)");
        p = payload + h.compressed_size;
        switch (static_cast<PageType>(h.type)) {
          case PageType::DictionaryPage:
            if (data_seen) fail("dictionary page after data pages");
            if (!h.has_dictionary) fail("dictionary page without its header");
            if (dict_payload_ != payload) {
              dict_header_ = h;
              dict_payload_ = payload;
              dict_decoded_ = false;
            }
            if (index) index->dictionary_offset = static_cast<int64_t>(page_at_);
            break;
          case PageType::IndexPage: break;
          case PageType::DataPage:
          case PageType::DataPageV2: {
            data_seen = true;
            const bool v2 = h.type == static_cast<int32_t>(PageType::DataPageV2);
            if (v2 ? !h.has_data_v2 : !h.has_data_v1) fail("data page without its header");
            if (h.num_values < 0 || h.num_values > meta_.num_values - values)
              fail("data page of ", h.num_values, " values, the column chunk has ", meta_.num_values - values, " left");
            data_page(h, payload, v2, begin, end, row, out);
            if (index && page_starts_row_ &&
                (index->pages.empty() || index->pages.back().offset < static_cast<int64_t>(page_at_)))
              index->pages.push_back({static_cast<int64_t>(page_at_), row_before + 1, values});
            values += h.num_values;
            break;
          }
          default: fail("unknown page type ", h.type);
        }
      } catch (const Error& e) {
        fail("page at byte ", page_at_, ": ", e.what());
      }
    }
    if (values == meta_.num_values && row + 1 < std::min(end, src_.row_group_rows))
      fail("column chunk holds ", row + 1, " rows, the row group has ", src_.row_group_rows);
  }

 private:
  // Rows the page starts, known from its header alone (-1: the levels must be read).
  int64_t rows_from_header(const PageHeader& h, bool v2) const {
    if (leaf_.max_rep == 0) return h.num_values;
    return v2 ? h.num_rows : -1;
  }

  // The dictionary page at `offset` (a chunk read that starts past it, from the page index).
  void read_dictionary_page_at(int64_t offset, const uint8_t* chunk_end) {
    const uint8_t* p = src_.file + offset;
    if (p >= chunk_end) fail("dictionary page offset ", offset, " outside the column chunk");
    const PageHeader h = parse_page_header(p, static_cast<size_t>(chunk_end - p));
    const uint8_t* payload = p + h.header_size;
    if (!h.has_dictionary || h.compressed_size < 0 || h.compressed_size > chunk_end - payload)
      fail("no dictionary page at byte ", offset);
    if (dict_payload_ != payload) {
      dict_header_ = h;
      dict_payload_ = payload;
      dict_decoded_ = false;
    }
  }

  void data_page(const PageHeader& h, const uint8_t* payload, bool v2, int64_t begin, int64_t end, int64_t& row,
                 RowAssembler& out) {
    const size_t n = static_cast<size_t>(h.num_values);
    if (skip_page_by_header(h, v2, begin, end, row)) return;
    // The page's levels (and below, its values) stay decoded while the next reads of the chunk (the next
    // rows) still fall in it.
    if (levels_page_ != page_at_) decode_levels(h, payload, v2);
    if (n > 0 && row < 0 && rep_[0] != 0) fail("the column chunk starts inside a row (repetition level ", int(rep_[0]), ")");
    page_starts_row_ = n > 0 && rep_[0] == 0;
    // The rows this page touches: skip it when they are all outside [begin, end).
    if (cursor_page_ != page_at_) {  // first visit of the decoded page: its totals, and a cursor at its start
      page_started_ = std::count(rep_.begin(), rep_.end(), uint8_t{0});
      page_present_ = static_cast<size_t>(std::count(def_.begin(), def_.end(), static_cast<uint8_t>(leaf_.max_def)));
      cursor_page_ = page_at_;
      cursor_page_row_ = row;
      cursor_ = {0, row, 0};
    }
    const int64_t started = page_started_;
    const int64_t first = (n > 0 && rep_[0] == 0) ? row + 1 : row;
    if (n == 0 || row + started < begin || first >= end) {
      row += started;
      return;
    }
    const PageRows r = rows_in_page(n, begin, end, row);
    page_values(h, r.v_lo, r.v_hi);
    row = r.lo < r.hi ? r.row_before_lo : r.row_at_stop;
    size_t vi = 0;
    for (size_t i = r.lo; i < r.hi; ++i) {
      row += rep_[i] == 0;
      const bool has = def_[i] == leaf_.max_def;
      out.add(row, rep_[i], def_[i], has ? &values_[vi] : nullptr);
      vi += has;
    }
    if (r.hi < n) row = end;  // past the rows asked for: the rest of the page is not needed
  }

  // A page that starts at a row boundary (known from its header alone) whose rows all lie outside [begin,
  // end): `row` moves past them and the page is not decoded.
  bool skip_page_by_header(const PageHeader& h, bool v2, int64_t begin, int64_t end, int64_t& row) {
    const size_t n = static_cast<size_t>(h.num_values);
    const int64_t known = rows_from_header(h, v2);
    page_starts_row_ = known >= 0 && known <= h.num_values && n > 0;
    if (known < 0 || known > h.num_values) return false;
    if (row + 1 >= end) {  // past the rows asked for
      row = end;
      return true;
    }
    if (row + known < begin) {  // every row the page starts ends before `begin`
      row += known;
      return true;
    }
    return false;
  }

  // A data page's level bytes and value bytes (decompressed into buffer_ where the page is compressed).
  struct PageBytes {
    const uint8_t* levels;
    size_t levels_size;
    const uint8_t* vals;
    size_t vals_size;
  };
  PageBytes page_bytes(const PageHeader& h, const uint8_t* payload, bool v2) {
    PageBytes pb{payload, 0, nullptr, 0};
    const size_t comp = static_cast<size_t>(h.compressed_size);
    if (v2) {  // the levels uncompressed, then the values' body
      if (h.rep_length < 0 || h.def_length < 0 ||
          static_cast<size_t>(h.rep_length) + static_cast<size_t>(h.def_length) > comp ||
          h.rep_length + static_cast<int64_t>(h.def_length) > h.uncompressed_size)
        fail("level lengths ", h.rep_length, " + ", h.def_length, " exceed the page");
      pb.levels_size = static_cast<size_t>(h.rep_length) + static_cast<size_t>(h.def_length);
      const uint8_t* body = payload + pb.levels_size;
      const size_t body_size = comp - pb.levels_size;
      const size_t raw_size = static_cast<size_t>(h.uncompressed_size) - pb.levels_size;
      if (h.is_compressed && meta_.codec != 0) {
        buffer_.resize(raw_size);
        decompress(meta_.codec, body, body_size, buffer_.data(), raw_size);
        pb.vals = buffer_.data();
        pb.vals_size = raw_size;
      } else {
        if (body_size != raw_size)
          fail("uncompressed v2 page body of ", body_size, " bytes, the header says ", raw_size);
        pb.vals = body;
        pb.vals_size = body_size;
      }
      return pb;
    }
    // v1: levels and values compressed together
    if (meta_.codec != 0) {
      buffer_.resize(static_cast<size_t>(h.uncompressed_size));
      decompress(meta_.codec, payload, comp, buffer_.data(), buffer_.size());
      pb.levels = buffer_.data();
      pb.levels_size = buffer_.size();
    } else {
      if (comp != static_cast<size_t>(h.uncompressed_size))
        fail("uncompressed page of ", comp, " bytes, the header says ", h.uncompressed_size);
      pb.levels_size = comp;
    }
    pb.vals = pb.levels;
    pb.vals_size = pb.levels_size;
    return pb;
  }

  // The page's repetition then definition levels (rep_, def_), checked; where its values' bytes start (vals_).
  void decode_levels(const PageHeader& h, const uint8_t* payload, bool v2) {
    const size_t n = static_cast<size_t>(h.num_values);
    PageBytes pb = page_bytes(h, payload, v2);
    const uint8_t* levels = pb.levels;
    const size_t levels_size = pb.levels_size;
    rep_.assign(n, 0);
    def_.assign(n, 0);
    if (v2) {
      if (leaf_.max_rep > 0)
        decode_rle_hybrid(levels, static_cast<size_t>(h.rep_length), bit_width_of(static_cast<uint64_t>(leaf_.max_rep)),
                          n, rep_.data());
      if (leaf_.max_def > 0)
        decode_rle_hybrid(levels + h.rep_length, static_cast<size_t>(h.def_length),
                          bit_width_of(static_cast<uint64_t>(leaf_.max_def)), n, def_.data());
    } else {
      size_t used = 0;
      if (leaf_.max_rep > 0)
        used += read_v1_levels(levels, levels_size, h.rep_encoding, leaf_.max_rep, n, rep_.data(), "repetition");
      if (leaf_.max_def > 0)
        used += read_v1_levels(levels + used, levels_size - used, h.def_encoding, leaf_.max_def, n, def_.data(),
                               "definition");
      pb.vals = levels + used;
      pb.vals_size = levels_size - used;
    }
    check_levels(rep_.data(), n, leaf_.max_rep, "repetition");
    check_levels(def_.data(), n, leaf_.max_def, "definition");
    levels_page_ = page_at_;
    values_page_ = SIZE_MAX;
    vals_ = pb.vals;
    vals_size_ = pb.vals_size;
  }

  // The triples [lo, hi) of the page whose rows lie in [begin, end), their non-null values [v_lo, v_hi), the
  // row before lo and the row where the scan stopped. Consecutive reads resume from where the last one
  // stopped (the cursor) instead of rescanning the page.
  struct PageRows {
    size_t lo, hi, v_lo, v_hi;
    int64_t row_before_lo, row_at_stop;
  };
  PageRows rows_in_page(size_t n, int64_t begin, int64_t end, int64_t row) {
    Cursor c{0, row, 0};
    if (cursor_page_row_ == row && cursor_.row < begin) c = cursor_;
    size_t lo = n, hi = n, v_lo = 0;
    int64_t row_before_lo = c.row;
    for (size_t i = c.triple; i < n; ++i) {
      const int64_t ri = c.row + (rep_[i] == 0);
      if (ri >= begin && lo == n) {
        lo = i;
        v_lo = c.present;
        row_before_lo = c.row;
      }
      if (ri >= end) {
        hi = i;
        break;
      }
      c = {i + 1, ri, c.present + (def_[i] == leaf_.max_def)};
    }
    cursor_ = c;
    if (lo > hi) lo = hi;
    return {lo, hi, v_lo, c.present, row_before_lo, c.row};
  }

  // The page's non-null values [v_lo, v_hi) as JSON (values_): all are decoded once per page (encodings are
  // sequential), only those of the rows asked for become JSON.
  void page_values(const PageHeader& h, size_t v_lo, size_t v_hi) {
    const size_t present = page_present_;
    values_.clear();
    values_.reserve(v_hi - v_lo);
    const bool dictionary = is_dictionary_encoding(h.encoding);
    if (values_page_ != page_at_) {
      if (dictionary) {
        decode_dictionary();
        decode_dictionary_indexes(vals_, vals_size_, present, indexes_);
      } else {
        raw_.clear();
        decode_values(h.encoding, leaf_.type, leaf_.type_length, vals_, vals_size_, present, raw_);
      }
      values_page_ = page_at_;
    }
    if (dictionary) {
      for (size_t v = v_lo; v < v_hi; ++v) {
        const uint32_t ix = indexes_[v];
        if (ix >= dictionary_.size()) fail("dictionary index ", ix, " >= the dictionary's ", dictionary_.size(), " values");
        values_.push_back(dictionary_[ix]);
      }
    } else {
      append_json_values(leaf_, raw_, v_lo, v_hi - v_lo, values_);
    }
  }

  void decode_dictionary() {
    if (dict_decoded_) return;
    if (!dict_payload_) fail("dictionary-encoded page without a dictionary page");
    const PageHeader& h = dict_header_;
    if (h.num_values < 0) fail("dictionary page of ", h.num_values, " values");
    const uint8_t* data = dict_payload_;
    if (meta_.codec != 0) {
      dict_buffer_.resize(static_cast<size_t>(h.uncompressed_size));
      decompress(meta_.codec, dict_payload_, static_cast<size_t>(h.compressed_size), dict_buffer_.data(), dict_buffer_.size());
      data = dict_buffer_.data();
    } else if (h.compressed_size != h.uncompressed_size) {
      fail("uncompressed dictionary page of ", h.compressed_size, " bytes, the header says ", h.uncompressed_size);
    }
    if (h.encoding != static_cast<int32_t>(Encoding::Plain) && h.encoding != static_cast<int32_t>(Encoding::PlainDictionary))
      fail("dictionary page encoded ", encoding_name(h.encoding), " (only PLAIN is defined)");
    if (static_cast<uint64_t>(h.num_values) > static_cast<uint64_t>(h.uncompressed_size) * 8 + 8)
      fail("dictionary page claims ", h.num_values, " values in ", h.uncompressed_size, " bytes");
    RawValues raw;
    decode_values(static_cast<int32_t>(Encoding::Plain), leaf_.type, leaf_.type_length, data,
                  static_cast<size_t>(h.uncompressed_size), static_cast<size_t>(h.num_values), raw);
    dictionary_.clear();
    append_json_values(leaf_, raw, 0, static_cast<size_t>(h.num_values), dictionary_);
    dict_decoded_ = true;
  }

  const ChunkSource src_;
  const LeafColumn& leaf_;
  const ColumnMeta& meta_;
  size_t page_at_ = 0;
  size_t levels_page_ = SIZE_MAX, values_page_ = SIZE_MAX;  // the page whose levels / values are decoded
  // Where the last read of the decoded page stopped: triples before `triple` are read, the last of them
  // in row `row`, with `present` values among them.
  struct Cursor {
    size_t triple;
    int64_t row;
    size_t present;
  };
  size_t cursor_page_ = SIZE_MAX;
  int64_t cursor_page_row_ = 0;  // the row before the page's first triple
  Cursor cursor_{0, 0, 0};
  int64_t page_started_ = 0;  // rows the page starts
  size_t page_present_ = 0;   // its non-null values
  const uint8_t* vals_ = nullptr;                            // that page's values (in buffer_ or the file)
  size_t vals_size_ = 0;
  bool page_starts_row_ = false;  // the last data page's first value starts a row
  PageHeader dict_header_;
  const uint8_t* dict_payload_ = nullptr;
  bool dict_decoded_ = false;
  std::vector<uint8_t> dict_buffer_, buffer_, rep_, def_;
  std::vector<uint32_t> indexes_;
  std::vector<nlohmann::json> dictionary_, values_;
  RawValues raw_;
};


void RowAssembler::add(int64_t row, int rep, int def, nlohmann::json* value) {
  nlohmann::json* slot = &rows_[static_cast<size_t>(row - begin_)][path_[0].field->name];
  for (size_t i = 0; i < path_.size(); ++i) {
    const Field& f = *path_[i].field;
    if (def < f.def) return;  // null here (the slot stays null)
    switch (f.kind) {
      case Field::Kind::Leaf: *slot = std::move(*value); return;
      case Field::Kind::Struct:
        if (!slot->is_object()) *slot = nlohmann::json::object();
        slot = &(*slot)[f.children[static_cast<size_t>(path_[i].child)].name];
        break;
      case Field::Kind::List:
      case Field::Kind::Map: {
        if (!slot->is_array()) *slot = nlohmann::json::array();
        if (def < f.elem_def) return;  // an empty list
        size_t& k = index_[static_cast<size_t>(f.elem_rep)];
        if (rep < f.elem_rep) k = 0;
        else if (rep == f.elem_rep) ++k;
        if (k == slot->size()) slot->push_back(nullptr);
        else if (k > slot->size()) fail("repetition level ", rep, " continues a list element that does not exist");
        slot = &(*slot)[k];
        if (f.kind == Field::Kind::Map) {
          if (!slot->is_array()) *slot = nlohmann::json::array({nullptr, nullptr});
          slot = &(*slot)[static_cast<size_t>(path_[i].child)];
        }
        break;
      }
    }
  }
}

ColumnChunkReader::ColumnChunkReader(const ChunkSource& src) : impl_(std::make_unique<Impl>(src)) {}
ColumnChunkReader::~ColumnChunkReader() = default;

void ColumnChunkReader::read(int64_t begin, int64_t end, RowAssembler& out) { impl_->read(begin, end, out); }

}  // namespace grpo::parquet
