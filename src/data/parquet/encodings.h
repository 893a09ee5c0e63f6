// Parquet value and level encodings (parquet-format's Encodings.md): PLAIN, the RLE / bit-packing hybrid
// (levels, dictionary indexes, booleans), the deprecated BIT_PACKED levels, DELTA_BINARY_PACKED,
// DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY and BYTE_STREAM_SPLIT. Decoders read a bounded byte range and
// throw grpo::Error when the data runs short or a width, count or length is out of range; they produce the
// physical values, which schema.h's converters turn into JSON.
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "data/parquet/metadata.h"

namespace grpo::parquet {

// The physical values of one page (or of a dictionary), in order. Views point into the page buffer, or into
// `owned` for DELTA_BYTE_ARRAY (whose values are rebuilt from prefixes).
struct RawValues {
  std::vector<int64_t> ints;            // BOOLEAN (0 / 1), INT32, INT64
  std::vector<double> reals;            // FLOAT, DOUBLE
  std::vector<std::string_view> bytes;  // BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY, INT96 (12 bytes each)
  std::deque<std::string> owned;
  void clear();
};

// The RLE / bit-packing hybrid without length prefix: `count` values of `bit_width` bits (0..32) from
// [p, p + size). Values past the end of the data are an error; a short final bit-packed group is accepted.
void decode_rle_hybrid(const uint8_t* p, size_t size, int bit_width, size_t count, uint32_t* out);
void decode_rle_hybrid(const uint8_t* p, size_t size, int bit_width, size_t count, uint8_t* out);

// The deprecated BIT_PACKED level encoding (most significant bit first); returns the bytes used.
size_t decode_bit_packed_levels(const uint8_t* p, size_t size, int bit_width, size_t count, uint8_t* out);

// Bits needed for values 0..max_value.
int bit_width_of(uint64_t max_value);

// Decodes `count` values of a data page (or dictionary page) encoded with `encoding`, other than the
// dictionary encodings (their indexes are decoded by the caller). type_length: FIXED_LEN_BYTE_ARRAY's width.
void decode_values(int32_t encoding, PhysicalType type, int32_t type_length, const uint8_t* p, size_t size,
                   size_t count, RawValues& out);

// Reads a dictionary page's or data page's dictionary indexes (a bit-width byte, then the hybrid).
void decode_dictionary_indexes(const uint8_t* p, size_t size, size_t count, std::vector<uint32_t>& out);

}  // namespace grpo::parquet
