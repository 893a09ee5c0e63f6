// Parquet footer and page header decoding (see metadata.h). Field ids follow parquet.thrift.
#include "data/parquet/metadata.h"

#include "core/error.h"
#include "data/parquet/thrift_compact.h"

namespace grpo::parquet {
namespace {

// Calls on_field(field) for each field of the struct that starts here; the callback reads the value
// or returns false to have it skipped.
template <typename F>
void read_struct(ThriftReader& r, F&& on_field) {
  r.begin_struct();
  ThriftField f;
  while (r.next_field(f))
    if (!on_field(f)) r.skip(f.type);
  r.end_struct();
}

// The union TimeUnit: which of its (empty) structs is set.
TimeUnit read_time_unit(ThriftReader& r) {
  int32_t unit = 0;
  read_struct(r, [&](const ThriftField& f) {
    if (f.id >= 1 && f.id <= 3) unit = f.id;
    return false;
  });
  if (unit == 0) fail("TimeUnit with no unit set");
  return static_cast<TimeUnit>(unit);
}

LogicalType read_logical_type(ThriftReader& r) {
  LogicalType lt;
  read_struct(r, [&](const ThriftField& f) {
    if (f.type != ThriftType::Struct) return false;
    lt.kind = static_cast<Logical>(f.id);
    switch (lt.kind) {
      case Logical::Decimal:
        read_struct(r, [&](const ThriftField& g) {
          if (g.id == 1) lt.scale = r.read_i32(g, "DecimalType.scale");
          else if (g.id == 2) lt.precision = r.read_i32(g, "DecimalType.precision");
          else return false;
          return true;
        });
        return true;
      case Logical::Time:
      case Logical::Timestamp:
        read_struct(r, [&](const ThriftField& g) {
          if (g.id == 1) {
            lt.utc = r.read_bool(g, "isAdjustedToUTC");
          } else if (g.id == 2) {
            r.expect_struct(g, "unit");
            lt.unit = read_time_unit(r);
          } else {
            return false;
          }
          return true;
        });
        return true;
      case Logical::Integer:
        read_struct(r, [&](const ThriftField& g) {
          if (g.id == 1) lt.bit_width = r.read_i32(g, "IntType.bitWidth");
          else if (g.id == 2) lt.is_signed = r.read_bool(g, "IntType.isSigned");
          else return false;
          return true;
        });
        return true;
      default:
        return false;  // empty struct (or one whose fields this reader does not need)
    }
  });
  return lt;
}

SchemaElement read_schema_element(ThriftReader& r) {
  SchemaElement e;
  bool has_name = false;
  read_struct(r, [&](const ThriftField& f) {
    switch (f.id) {
      case 1: e.type = r.read_i32(f, "SchemaElement.type"); return true;
      case 2: e.type_length = r.read_i32(f, "SchemaElement.type_length"); return true;
      case 3: e.repetition = r.read_i32(f, "SchemaElement.repetition_type"); return true;
      case 4: e.name = r.read_string(f, "SchemaElement.name"); has_name = true; return true;
      case 5: e.num_children = r.read_i32(f, "SchemaElement.num_children"); return true;
      case 6: e.converted_type = r.read_i32(f, "SchemaElement.converted_type"); return true;
      case 7: e.scale = r.read_i32(f, "SchemaElement.scale"); return true;
      case 8: e.precision = r.read_i32(f, "SchemaElement.precision"); return true;
      case 10: r.expect_struct(f, "SchemaElement.logicalType"); e.logical = read_logical_type(r); return true;
      default: return false;
    }
  });
  if (!has_name) fail("a schema element has no name");
  return e;
}

ColumnMeta read_column_meta(ThriftReader& r) {
  ColumnMeta m;
  read_struct(r, [&](const ThriftField& f) {
    switch (f.id) {
      case 1: m.type = r.read_i32(f, "ColumnMetaData.type"); return true;
      case 3: {
        const ThriftList l = r.read_list(f, "ColumnMetaData.path_in_schema");
        for (int64_t i = 0; i < l.size; ++i) m.path.push_back(r.read_string_element(l.elem, "path_in_schema"));
        return true;
      }
      case 4: m.codec = r.read_i32(f, "ColumnMetaData.codec"); return true;
      case 5: m.num_values = r.read_i64(f, "ColumnMetaData.num_values"); return true;
      case 7: m.total_compressed_size = r.read_i64(f, "ColumnMetaData.total_compressed_size"); return true;
      case 9: m.data_page_offset = r.read_i64(f, "ColumnMetaData.data_page_offset"); return true;
      case 11: m.dictionary_page_offset = r.read_i64(f, "ColumnMetaData.dictionary_page_offset"); return true;
      default: return false;
    }
  });
  return m;
}

ColumnChunkMeta read_column_chunk(ThriftReader& r) {
  ColumnChunkMeta c;
  read_struct(r, [&](const ThriftField& f) {
    switch (f.id) {
      case 1: c.file_path = r.read_string(f, "ColumnChunk.file_path"); return true;
      case 3:
        r.expect_struct(f, "ColumnChunk.meta_data");
        c.meta = read_column_meta(r);
        c.has_meta = true;
        return true;
      case 8:
      case 9: c.encrypted = true; return false;
      default: return false;
    }
  });
  return c;
}

RowGroupMeta read_row_group(ThriftReader& r) {
  RowGroupMeta g;
  read_struct(r, [&](const ThriftField& f) {
    switch (f.id) {
      case 1: {
        const ThriftList l = r.read_list(f, "RowGroup.columns");
        r.expect_struct_elements(l, "RowGroup.columns");
        for (int64_t i = 0; i < l.size; ++i) g.columns.push_back(read_column_chunk(r));
        return true;
      }
      case 3: g.num_rows = r.read_i64(f, "RowGroup.num_rows"); return true;
      default: return false;
    }
  });
  return g;
}

}  // namespace

FileMetaData parse_file_metadata(const uint8_t* data, size_t size) {
  ThriftReader r(data, size);
  FileMetaData md;
  read_struct(r, [&](const ThriftField& f) {
    switch (f.id) {
      case 1: md.version = r.read_i32(f, "FileMetaData.version"); return true;
      case 2: {
        const ThriftList l = r.read_list(f, "FileMetaData.schema");
        r.expect_struct_elements(l, "FileMetaData.schema");
        for (int64_t i = 0; i < l.size; ++i) md.schema.push_back(read_schema_element(r));
        return true;
      }
      case 3: md.num_rows = r.read_i64(f, "FileMetaData.num_rows"); return true;
      case 4: {
        const ThriftList l = r.read_list(f, "FileMetaData.row_groups");
        r.expect_struct_elements(l, "FileMetaData.row_groups");
        for (int64_t i = 0; i < l.size; ++i) md.row_groups.push_back(read_row_group(r));
        return true;
      }
      case 8: fail("the footer is encrypted (encryption_algorithm set): encrypted files are not supported");
      default: return false;
    }
  });
  return md;
}

PageHeader parse_page_header(const uint8_t* data, size_t size) {
  ThriftReader r(data, size);
  PageHeader h;
  read_struct(r, [&](const ThriftField& f) {
    switch (f.id) {
      case 1: h.type = r.read_i32(f, "PageHeader.type"); return true;
      case 2: h.uncompressed_size = r.read_i32(f, "PageHeader.uncompressed_page_size"); return true;
      case 3: h.compressed_size = r.read_i32(f, "PageHeader.compressed_page_size"); return true;
      case 5:
        r.expect_struct(f, "PageHeader.data_page_header");
        h.has_data_v1 = true;
        read_struct(r, [&](const ThriftField& g) {
          switch (g.id) {
            case 1: h.num_values = r.read_i32(g, "DataPageHeader.num_values"); return true;
            case 2: h.encoding = r.read_i32(g, "DataPageHeader.encoding"); return true;
            case 3: h.def_encoding = r.read_i32(g, "DataPageHeader.definition_level_encoding"); return true;
            case 4: h.rep_encoding = r.read_i32(g, "DataPageHeader.repetition_level_encoding"); return true;
            default: return false;
          }
        });
        return true;
      case 7:
        r.expect_struct(f, "PageHeader.dictionary_page_header");
        h.has_dictionary = true;
        read_struct(r, [&](const ThriftField& g) {
          switch (g.id) {
            case 1: h.num_values = r.read_i32(g, "DictionaryPageHeader.num_values"); return true;
            case 2: h.encoding = r.read_i32(g, "DictionaryPageHeader.encoding"); return true;
            default: return false;
          }
        });
        return true;
      case 8:
        r.expect_struct(f, "PageHeader.data_page_header_v2");
        h.has_data_v2 = true;
        read_struct(r, [&](const ThriftField& g) {
          switch (g.id) {
            case 1: h.num_values = r.read_i32(g, "DataPageHeaderV2.num_values"); return true;
            case 2: h.num_nulls = r.read_i32(g, "DataPageHeaderV2.num_nulls"); return true;
            case 3: h.num_rows = r.read_i32(g, "DataPageHeaderV2.num_rows"); return true;
            case 4: h.encoding = r.read_i32(g, "DataPageHeaderV2.encoding"); return true;
            case 5: h.def_length = r.read_i32(g, "DataPageHeaderV2.definition_levels_byte_length"); return true;
            case 6: h.rep_length = r.read_i32(g, "DataPageHeaderV2.repetition_levels_byte_length"); return true;
            case 7: h.is_compressed = r.read_bool(g, "DataPageHeaderV2.is_compressed"); return true;
            default: return false;
          }
        });
        return true;
      default: return false;
    }
  });
  h.header_size = r.position();
  return h;
}

const char* encoding_name(int32_t encoding) {
  switch (encoding) {
    case 0: return "PLAIN";
    case 1: return "GROUP_VAR_INT";
    case 2: return "PLAIN_DICTIONARY";
    case 3: return "RLE";
    case 4: return "BIT_PACKED";
    case 5: return "DELTA_BINARY_PACKED";
    case 6: return "DELTA_LENGTH_BYTE_ARRAY";
    case 7: return "DELTA_BYTE_ARRAY";
    case 8: return "RLE_DICTIONARY";
    case 9: return "BYTE_STREAM_SPLIT";
    default: return "an unknown encoding";
  }
}

const char* codec_name(int32_t codec) {
  switch (codec) {
    case 0: return "UNCOMPRESSED";
    case 1: return "SNAPPY";
    case 2: return "GZIP";
    case 3: return "LZO";
    case 4: return "BROTLI";
    case 5: return "LZ4";
    case 6: return "ZSTD";
    case 7: return "LZ4_RAW";
    default: return "an unknown codec";
  }
}

const char* physical_type_name(int32_t type) {
  switch (type) {
    case 0: return "BOOLEAN";
    case 1: return "INT32";
    case 2: return "INT64";
    case 3: return "INT96";
    case 4: return "FLOAT";
    case 5: return "DOUBLE";
    case 6: return "BYTE_ARRAY";
    case 7: return "FIXED_LEN_BYTE_ARRAY";
    default: return "an unknown type";
  }
}

}  // namespace grpo::parquet
