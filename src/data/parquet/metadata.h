// Parquet file metadata: the footer (FileMetaData: schema, row groups, column chunks) and page headers, as
// parquet-format's parquet.thrift defines them, decoded from the Thrift compact protocol. Only the fields
// this reader uses are kept; statistics, indexes and bloom filters are skipped.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace grpo::parquet {

enum class PhysicalType : int32_t {
  Boolean = 0, Int32 = 1, Int64 = 2, Int96 = 3, Float = 4, Double = 5, ByteArray = 6, FixedLenByteArray = 7,
};

enum class Repetition : int32_t { Required = 0, Optional = 1, Repeated = 2, Vector = 3 };

// parquet.thrift's ConvertedType values used here (the deprecated annotation, still written by many writers).
namespace converted {
constexpr int32_t kNone = -1, kUtf8 = 0, kMap = 1, kMapKeyValue = 2, kList = 3, kEnum = 4, kDecimal = 5,
                  kDate = 6, kTimeMillis = 7, kTimeMicros = 8, kTimestampMillis = 9, kTimestampMicros = 10,
                  kUint8 = 11, kUint16 = 12, kUint32 = 13, kUint64 = 14, kInt8 = 15, kInt16 = 16, kInt32 = 17,
                  kInt64 = 18, kJson = 19, kBson = 20, kInterval = 21;
}

// The LogicalType union (field ids of parquet.thrift; 0: absent).
enum class Logical : int32_t {
  None = 0, String = 1, Map = 2, List = 3, Enum = 4, Decimal = 5, Date = 6, Time = 7, Timestamp = 8,
  Integer = 10, Unknown = 11, Json = 12, Bson = 13, Uuid = 14, Float16 = 15, Variant = 16, Geometry = 17,
  Geography = 18,
};

enum class TimeUnit : int32_t { Millis = 1, Micros = 2, Nanos = 3 };

struct LogicalType {
  Logical kind = Logical::None;
  int32_t scale = 0, precision = 0;  // DECIMAL
  TimeUnit unit = TimeUnit::Millis;  // TIME, TIMESTAMP
  bool utc = false;                  // TIME, TIMESTAMP: isAdjustedToUTC
  int32_t bit_width = 0;             // INTEGER
  bool is_signed = true;             // INTEGER
};

struct SchemaElement {
  int32_t type = -1;  // PhysicalType, -1 for groups
  int32_t type_length = 0;
  int32_t repetition = -1;  // Repetition, -1 when absent (the root)
  std::string name;
  int32_t num_children = 0;
  int32_t converted_type = converted::kNone;
  int32_t scale = 0, precision = 0;
  LogicalType logical;
};

struct ColumnMeta {
  int32_t type = -1;
  std::vector<std::string> path;
  int32_t codec = 0;
  int64_t num_values = 0;
  int64_t total_compressed_size = 0;
  int64_t data_page_offset = -1;
  int64_t dictionary_page_offset = -1;  // -1: absent
};

struct ColumnChunkMeta {
  std::string file_path;  // set: the data lives in another file (not supported)
  bool has_meta = false;
  bool encrypted = false;
  ColumnMeta meta;
};

struct RowGroupMeta {
  std::vector<ColumnChunkMeta> columns;
  int64_t num_rows = 0;
};

struct FileMetaData {
  int32_t version = 0;
  std::vector<SchemaElement> schema;
  int64_t num_rows = 0;
  std::vector<RowGroupMeta> row_groups;
};

enum class PageType : int32_t { DataPage = 0, IndexPage = 1, DictionaryPage = 2, DataPageV2 = 3 };

// Encoding values (parquet.thrift's Encoding enum).
enum class Encoding : int32_t {
  Plain = 0, PlainDictionary = 2, Rle = 3, BitPacked = 4, DeltaBinaryPacked = 5, DeltaLengthByteArray = 6,
  DeltaByteArray = 7, RleDictionary = 8, ByteStreamSplit = 9,
};

enum class Codec : int32_t {
  Uncompressed = 0, Snappy = 1, Gzip = 2, Lzo = 3, Brotli = 4, Lz4 = 5, Zstd = 6, Lz4Raw = 7,
};

struct PageHeader {
  int32_t type = -1;
  int32_t uncompressed_size = 0;
  int32_t compressed_size = 0;
  size_t header_size = 0;  // bytes of the Thrift header itself
  bool has_data_v1 = false, has_data_v2 = false, has_dictionary = false;
  // DataPageHeader / DataPageHeaderV2 / DictionaryPageHeader
  int32_t num_values = 0;
  int32_t encoding = 0;
  int32_t def_encoding = 0, rep_encoding = 0;  // v1
  int32_t num_nulls = 0, num_rows = 0;         // v2
  int32_t def_length = 0, rep_length = 0;      // v2
  bool is_compressed = true;                   // v2
};

// Decodes the footer's FileMetaData from `size` bytes; throws grpo::Error ("thrift: ..." or the field).
FileMetaData parse_file_metadata(const uint8_t* data, size_t size);

// Decodes the page header at the start of [data, data + size); header_size tells where the page starts.
PageHeader parse_page_header(const uint8_t* data, size_t size);

const char* encoding_name(int32_t encoding);
const char* codec_name(int32_t codec);
const char* physical_type_name(int32_t type);

}  // namespace grpo::parquet
