// Thrift compact protocol reader: the encoding of a Parquet file's footer (FileMetaData) and of its page
// headers. Reads structs field by field over a bounded byte range; every varint, length and nesting depth is
// checked, and a malformed input throws grpo::Error saying what was wrong (the caller adds file and place).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace grpo::parquet {

// Compact protocol type codes (the low nibble of a field header).
enum class ThriftType : uint8_t {
  Stop = 0, BoolTrue = 1, BoolFalse = 2, Byte = 3, I16 = 4, I32 = 5, I64 = 6, Double = 7, Binary = 8, List = 9,
  Set = 10, Map = 11, Struct = 12,
};

struct ThriftField {
  int16_t id = 0;
  ThriftType type = ThriftType::Stop;
};

struct ThriftList {
  ThriftType elem = ThriftType::Stop;
  int64_t size = 0;
};

class ThriftReader {
 public:
  ThriftReader(const uint8_t* data, size_t size) : p_(data), begin_(data), end_(data + size) {}

  size_t position() const { return static_cast<size_t>(p_ - begin_); }

  // Struct framing: begin_struct(), then next_field() until it returns false (the stop byte), then end_struct().
  void begin_struct();
  bool next_field(ThriftField& f);
  void end_struct();

  // Values of a field (the type is checked against the field header; `what` names the field in errors).
  bool read_bool(const ThriftField& f, const char* what);
  int32_t read_i32(const ThriftField& f, const char* what);
  int64_t read_i64(const ThriftField& f, const char* what);
  std::string read_string(const ThriftField& f, const char* what);
  ThriftList read_list(const ThriftField& f, const char* what);  // then read the elements
  void expect_struct(const ThriftField& f, const char* what);    // then begin_struct()

  // List elements.
  std::string read_string_element(ThriftType elem, const char* what);
  void expect_struct_elements(const ThriftList& l, const char* what);

  // Skips a value of the given type (nested structs and containers included).
  void skip(ThriftType type);

 private:
  uint8_t byte();
  uint64_t varint();
  int64_t zigzag();
  void skip_value(ThriftType type, int depth);
  void check_type(const ThriftField& f, ThriftType want, const char* what) const;

  const uint8_t* p_;
  const uint8_t* begin_;
  const uint8_t* end_;
  std::vector<int16_t> last_ids_;  // the previous field id of each open struct
  int16_t last_id_ = 0;
};

}  // namespace grpo::parquet
