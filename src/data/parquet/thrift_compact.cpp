// Thrift compact protocol reader (see thrift_compact.h).
#include "data/parquet/thrift_compact.h"

#include <cstring>

#include "core/error.h"

namespace grpo::parquet {
namespace {

constexpr int kMaxThriftDepth = 64;        // nested structs and containers
constexpr int64_t kMaxThriftElements = 1 << 26;  // list / map sizes (each element takes at least one byte anyway)

const char* thrift_type_name(ThriftType t) {
  switch (t) {
    case ThriftType::Stop: return "stop";
    case ThriftType::BoolTrue:
    case ThriftType::BoolFalse: return "bool";
    case ThriftType::Byte: return "byte";
    case ThriftType::I16: return "i16";
    case ThriftType::I32: return "i32";
    case ThriftType::I64: return "i64";
    case ThriftType::Double: return "double";
    case ThriftType::Binary: return "binary";
    case ThriftType::List: return "list";
    case ThriftType::Set: return "set";
    case ThriftType::Map: return "map";
    case ThriftType::Struct: return "struct";
  }
  return "unknown";
}

ThriftType type_of(uint8_t nibble) {
  if (nibble > 12) fail("thrift: unknown type code ", int(nibble));
  return static_cast<ThriftType>(nibble);
}

}  // namespace

uint8_t ThriftReader::byte() {
  if (p_ >= end_) fail("thrift: truncated (read past the end of ", end_ - begin_, " bytes)");
  return *p_++;
}

uint64_t ThriftReader::varint() {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    const uint8_t b = byte();
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  fail("thrift: varint longer than 10 bytes at byte ", position());
}

int64_t ThriftReader::zigzag() {
  const uint64_t v = varint();
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

void ThriftReader::begin_struct() {
  if (last_ids_.size() >= kMaxThriftDepth) fail("thrift: structs nested deeper than ", kMaxThriftDepth);
  last_ids_.push_back(last_id_);
  last_id_ = 0;
}

void ThriftReader::end_struct() {
  last_id_ = last_ids_.back();
  last_ids_.pop_back();
}

bool ThriftReader::next_field(ThriftField& f) {
  const uint8_t h = byte();
  if (h == 0) return false;
  f.type = type_of(h & 0x0f);
  if (f.type == ThriftType::Stop) fail("thrift: field header with type 0");
  const int delta = h >> 4;
  if (delta) {
    f.id = static_cast<int16_t>(last_id_ + delta);
  } else {
    const int64_t id = zigzag();
    if (id < INT16_MIN || id > INT16_MAX) fail("thrift: field id ", id, " out of range");
    f.id = static_cast<int16_t>(id);
  }
  last_id_ = f.id;
  return true;
}

void ThriftReader::check_type(const ThriftField& f, ThriftType want, const char* what) const {
  const bool ok = f.type == want ||
                  (want == ThriftType::BoolTrue && (f.type == ThriftType::BoolTrue || f.type == ThriftType::BoolFalse));
  if (!ok) fail("thrift: ", what, " (field ", f.id, ") is a ", thrift_type_name(f.type), ", expected ", thrift_type_name(want));
}

bool ThriftReader::read_bool(const ThriftField& f, const char* what) {
  check_type(f, ThriftType::BoolTrue, what);
  return f.type == ThriftType::BoolTrue;
}

int32_t ThriftReader::read_i32(const ThriftField& f, const char* what) {
  // Writers may widen or narrow integer fields: i8 / i16 / i32 are all accepted where an i32 is expected.
  if (f.type == ThriftType::Byte) return static_cast<int8_t>(byte());
  if (f.type != ThriftType::I16) check_type(f, ThriftType::I32, what);
  const int64_t v = zigzag();
  if (v < INT32_MIN || v > INT32_MAX) fail("thrift: ", what, " = ", v, " does not fit an i32");
  return static_cast<int32_t>(v);
}

int64_t ThriftReader::read_i64(const ThriftField& f, const char* what) {
  if (f.type == ThriftType::I32 || f.type == ThriftType::I16) return zigzag();
  check_type(f, ThriftType::I64, what);
  return zigzag();
}

std::string ThriftReader::read_string(const ThriftField& f, const char* what) {
  check_type(f, ThriftType::Binary, what);
  return read_string_element(ThriftType::Binary, what);
}

ThriftList ThriftReader::read_list(const ThriftField& f, const char* what) {
  if (f.type != ThriftType::Set) check_type(f, ThriftType::List, what);
  const uint8_t h = byte();
  ThriftList l;
  l.elem = type_of(h & 0x0f);
  l.size = h >> 4;
  if (l.size == 15) {
    const uint64_t n = varint();
    if (n > static_cast<uint64_t>(kMaxThriftElements)) fail("thrift: ", what, " claims ", n, " elements");
    l.size = static_cast<int64_t>(n);
  }
  if (l.size > end_ - p_) fail("thrift: ", what, " claims ", l.size, " elements in ", end_ - p_, " bytes");
  return l;
}

void ThriftReader::expect_struct(const ThriftField& f, const char* what) { check_type(f, ThriftType::Struct, what); }

std::string ThriftReader::read_string_element(ThriftType elem, const char* what) {
  if (elem != ThriftType::Binary) fail("thrift: ", what, " holds ", thrift_type_name(elem), ", expected binary");
  const uint64_t n = varint();
  if (n > static_cast<uint64_t>(end_ - p_)) fail("thrift: ", what, ": string of ", n, " bytes overruns the input");
  std::string s(reinterpret_cast<const char*>(p_), n);
  p_ += n;
  return s;
}

void ThriftReader::expect_struct_elements(const ThriftList& l, const char* what) {
  if (l.elem != ThriftType::Struct) fail("thrift: ", what, " holds ", thrift_type_name(l.elem), ", expected structs");
}

void ThriftReader::skip(ThriftType type) { skip_value(type, 0); }

void ThriftReader::skip_value(ThriftType type, int depth) {
  if (depth > kMaxThriftDepth) fail("thrift: values nested deeper than ", kMaxThriftDepth);
  switch (type) {
    case ThriftType::BoolTrue:
    case ThriftType::BoolFalse: return;  // a field's bool lives in its header
    case ThriftType::Byte: byte(); return;
    case ThriftType::I16:
    case ThriftType::I32:
    case ThriftType::I64: varint(); return;
    case ThriftType::Double:
      if (end_ - p_ < 8) fail("thrift: truncated double");
      p_ += 8;
      return;
    case ThriftType::Binary: {
      const uint64_t n = varint();
      if (n > static_cast<uint64_t>(end_ - p_)) fail("thrift: binary of ", n, " bytes overruns the input");
      p_ += n;
      return;
    }
    case ThriftType::List:
    case ThriftType::Set: {
      ThriftField f;
      f.type = ThriftType::List;
      const ThriftList l = read_list(f, "list");
      for (int64_t i = 0; i < l.size; ++i) {
        if (l.elem == ThriftType::BoolTrue || l.elem == ThriftType::BoolFalse) byte();  // one byte per element
        else skip_value(l.elem, depth + 1);
      }
      return;
    }
    case ThriftType::Map: {
      const uint64_t n = varint();
      if (n == 0) return;
      if (n > static_cast<uint64_t>(end_ - p_)) fail("thrift: map claims ", n, " entries");
      const uint8_t kv = byte();
      const ThriftType k = type_of(kv >> 4), v = type_of(kv & 0x0f);
      for (uint64_t i = 0; i < n; ++i) {
        for (ThriftType t : {k, v}) {
          if (t == ThriftType::BoolTrue || t == ThriftType::BoolFalse) byte();
          else skip_value(t, depth + 1);
        }
      }
      return;
    }
    case ThriftType::Struct: {
      begin_struct();
      ThriftField f;
      while (next_field(f)) skip_value(f.type, depth + 1);
      end_struct();
      return;
    }
    case ThriftType::Stop: fail("thrift: unexpected stop");
  }
}

}  // namespace grpo::parquet
