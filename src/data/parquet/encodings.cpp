// Parquet encodings (see encodings.h).
#include "data/parquet/encodings.h"

#include <cstring>

#include "core/error.h"

namespace grpo::parquet {
namespace {

uint64_t read_uleb(const uint8_t*& p, const uint8_t* end, const char* what) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p >= end) fail(what, ": truncated varint");
    const uint8_t b = *p++;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  fail(what, ": varint longer than 10 bytes");
}

int64_t read_zigzag(const uint8_t*& p, const uint8_t* end, const char* what) {
  const uint64_t v = read_uleb(p, end, what);
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

// `width` bits (0..64) starting at bit `bit` of p (least significant bit first); the caller has checked
// that the bytes exist.
uint64_t bits_at(const uint8_t* p, uint64_t bit, int width) {
  if (width == 0) return 0;
  const uint8_t* b = p + bit / 8;
  const int shift = static_cast<int>(bit % 8);
  const int nbytes = (shift + width + 7) / 8;  // <= 9
  uint64_t lo = 0;
  const int first = nbytes < 8 ? nbytes : 8;
  std::memcpy(&lo, b, static_cast<size_t>(first));
  uint64_t v = lo >> shift;
  if (nbytes == 9) v |= static_cast<uint64_t>(b[8]) << (64 - shift);
  return width == 64 ? v : v & ((uint64_t{1} << width) - 1);
}

template <typename T>
void rle_hybrid(const uint8_t* p, size_t size, int bit_width, size_t count, T* out) {
  if (bit_width < 0 || bit_width > 32) fail("RLE: bit width ", bit_width, " outside 0..32");
  const uint8_t* end = p + size;
  const size_t value_bytes = static_cast<size_t>(bit_width + 7) / 8;
  const uint64_t max_value = bit_width == 32 ? UINT32_MAX : (uint64_t{1} << bit_width) - 1;
  if (max_value > static_cast<uint64_t>(T(~T(0)))) fail("RLE: bit width ", bit_width, " too wide for these values");
  size_t done = 0;
  while (done < count) {
    const uint64_t header = read_uleb(p, end, "RLE run header");
    if (header & 1) {  // bit-packed: (header >> 1) groups of 8 values
      const uint64_t groups = header >> 1;
      if (groups == 0 || groups > (uint64_t{1} << 40)) fail("RLE: bit-packed run of ", groups, " groups");
      const uint64_t n_run = groups * 8;
      const uint64_t avail_bits = static_cast<uint64_t>(end - p) * 8;
      const size_t take = static_cast<size_t>(n_run < count - done ? n_run : count - done);
      if (static_cast<uint64_t>(take) * bit_width > avail_bits)
        fail("RLE: bit-packed run needs ", (take * static_cast<uint64_t>(bit_width) + 7) / 8, " bytes, ", end - p,
             " left");
      for (size_t i = 0; i < take; ++i) out[done + i] = static_cast<T>(bits_at(p, i * static_cast<uint64_t>(bit_width), bit_width));
      done += take;
      const uint64_t run_bytes = groups * static_cast<uint64_t>(bit_width);
      p += run_bytes < static_cast<uint64_t>(end - p) ? run_bytes : static_cast<uint64_t>(end - p);
    } else {  // a run of one repeated value
      const uint64_t n_run = header >> 1;
      if (value_bytes > static_cast<size_t>(end - p)) fail("RLE: truncated run value");
      uint32_t v = 0;
      for (size_t i = 0; i < value_bytes; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
      p += value_bytes;
      if (v > max_value) fail("RLE: run value ", v, " wider than ", bit_width, " bits");
      const size_t take = static_cast<size_t>(n_run < count - done ? n_run : count - done);
      for (size_t i = 0; i < take; ++i) out[done + i] = static_cast<T>(v);
      done += take;
    }
  }
}

void need(size_t want, size_t have, const char* what) {
  if (want > have) fail(what, ": needs ", want, " bytes, ", have, " left");
}

// Appends `count` little-endian values of type Narrow, stored back to back at p, to `out` (wider elements).
template <typename Narrow, typename Wide>
void append_widened(const uint8_t* p, size_t count, std::vector<Wide>& out) {
  for (size_t i = 0; i < count; ++i) {
    Narrow v;
    std::memcpy(&v, p + sizeof(Narrow) * i, sizeof(Narrow));
    out.push_back(static_cast<Wide>(v));
  }
}

void decode_plain(PhysicalType type, int32_t type_length, const uint8_t* p, size_t size, size_t count,
                  RawValues& out) {
  switch (type) {
    case PhysicalType::Boolean:
      need((count + 7) / 8, size, "PLAIN BOOLEAN");
      for (size_t i = 0; i < count; ++i) out.ints.push_back((p[i / 8] >> (i % 8)) & 1);
      return;
    case PhysicalType::Int32:
      need(count * 4, size, "PLAIN INT32");
      append_widened<int32_t>(p, count, out.ints);
      return;
    case PhysicalType::Int64:
      need(count * 8, size, "PLAIN INT64");
      out.ints.resize(out.ints.size() + count);
      if (count) std::memcpy(out.ints.data() + out.ints.size() - count, p, count * 8);
      return;
    case PhysicalType::Float:
      need(count * 4, size, "PLAIN FLOAT");
      append_widened<float>(p, count, out.reals);
      return;
    case PhysicalType::Double:
      need(count * 8, size, "PLAIN DOUBLE");
      out.reals.resize(out.reals.size() + count);
      if (count) std::memcpy(out.reals.data() + out.reals.size() - count, p, count * 8);
      return;
    case PhysicalType::Int96:
    case PhysicalType::FixedLenByteArray: {
      const size_t w = type == PhysicalType::Int96 ? 12 : static_cast<size_t>(type_length);
      if (w != 0 && count > size / w) fail("PLAIN: ", count, " values of ", w, " bytes overrun the ", size, "-byte page");
      for (size_t i = 0; i < count; ++i) out.bytes.emplace_back(reinterpret_cast<const char*>(p + i * w), w);
      return;
    }
    case PhysicalType::ByteArray: {
      const uint8_t* end = p + size;
      for (size_t i = 0; i < count; ++i) {
        if (end - p < 4) fail("PLAIN BYTE_ARRAY: value ", i, " of ", count, ": truncated length");
        uint32_t n;
        std::memcpy(&n, p, 4);
        p += 4;
        if (n > static_cast<size_t>(end - p)) fail("PLAIN BYTE_ARRAY: value ", i, " of ", n, " bytes overruns the page");
        out.bytes.emplace_back(reinterpret_cast<const char*>(p), n);
        p += n;
      }
      return;
    }
  }
  fail("PLAIN: unknown physical type ", static_cast<int>(type));
}

// DELTA_BINARY_PACKED: `count` values into out (as 64-bit; INT32 columns wrap at 32 bits); returns the
// position after the last miniblock used.
const uint8_t* decode_delta_binary_packed(const uint8_t* p, const uint8_t* end, size_t count, bool is32,
                                          std::vector<int64_t>& out) {
  const char* what = "DELTA_BINARY_PACKED";
  const uint64_t block_size = read_uleb(p, end, what);
  const uint64_t miniblocks = read_uleb(p, end, what);
  const uint64_t total = read_uleb(p, end, what);
  uint64_t value = static_cast<uint64_t>(read_zigzag(p, end, what));
  if (block_size == 0 || block_size % 128 != 0 || block_size > (1u << 20))
    fail(what, ": block size ", block_size, " is not a positive multiple of 128");
  if (miniblocks == 0 || block_size % miniblocks != 0 || (block_size / miniblocks) % 32 != 0)
    fail(what, ": ", miniblocks, " miniblocks do not split a block of ", block_size, " into multiples of 32");
  if (total < count) fail(what, ": holds ", total, " values, the page needs ", count);
  const uint64_t per_mini = block_size / miniblocks;
  const int max_width = is32 ? 32 : 64;
  out.reserve(out.size() + count);
  if (count == 0) return p;
  out.push_back(is32 ? static_cast<int32_t>(value) : static_cast<int64_t>(value));
  size_t done = 1;
  while (done < count) {
    const uint64_t min_delta = static_cast<uint64_t>(read_zigzag(p, end, what));
    need(miniblocks, static_cast<size_t>(end - p), what);
    const uint8_t* widths = p;
    p += miniblocks;
    for (uint64_t m = 0; m < miniblocks && done < count; ++m) {
      const int w = widths[m];
      if (w > max_width) fail(what, ": miniblock bit width ", w, " > ", max_width);
      const uint64_t bytes = per_mini * static_cast<uint64_t>(w) / 8;
      const size_t take = static_cast<size_t>(per_mini < count - done ? per_mini : count - done);
      // The last miniblock in use may be cut short by some writers: only the bits of its values must exist.
      const uint64_t used = (static_cast<uint64_t>(take) * w + 7) / 8;
      need(static_cast<size_t>(used), static_cast<size_t>(end - p), what);
      for (size_t i = 0; i < take; ++i) {
        value += min_delta + bits_at(p, i * static_cast<uint64_t>(w), w);
        out.push_back(is32 ? static_cast<int32_t>(static_cast<uint32_t>(value)) : static_cast<int64_t>(value));
      }
      done += take;
      p += bytes < static_cast<uint64_t>(end - p) ? bytes : static_cast<uint64_t>(end - p);
    }
  }
  return p;
}

// DELTA_LENGTH_BYTE_ARRAY: lengths (DELTA_BINARY_PACKED), then the bytes back to back.
const uint8_t* decode_delta_length(const uint8_t* p, const uint8_t* end, size_t count,
                                   std::vector<std::string_view>& out) {
  std::vector<int64_t> lengths;
  p = decode_delta_binary_packed(p, end, count, true, lengths);
  for (size_t i = 0; i < count; ++i) {
    if (lengths[i] < 0 || lengths[i] > end - p)
      fail("DELTA_LENGTH_BYTE_ARRAY: value ", i, " of length ", lengths[i], " overruns the page (", end - p, " bytes left)");
    out.emplace_back(reinterpret_cast<const char*>(p), static_cast<size_t>(lengths[i]));
    p += lengths[i];
  }
  return p;
}

void decode_delta_byte_array(const uint8_t* p, const uint8_t* end, size_t count, bool fixed, int32_t type_length,
                             RawValues& out) {
  std::vector<int64_t> prefixes;
  p = decode_delta_binary_packed(p, end, count, true, prefixes);
  std::vector<std::string_view> suffixes;
  decode_delta_length(p, end, count, suffixes);
  std::string_view prev;
  for (size_t i = 0; i < count; ++i) {
    if (prefixes[i] < 0 || static_cast<size_t>(prefixes[i]) > prev.size())
      fail("DELTA_BYTE_ARRAY: value ", i, " takes a prefix of ", prefixes[i], " bytes from a ", prev.size(),
           "-byte value");
    std::string& v = out.owned.emplace_back();
    v.reserve(static_cast<size_t>(prefixes[i]) + suffixes[i].size());
    v.append(prev.substr(0, static_cast<size_t>(prefixes[i])));
    v.append(suffixes[i]);
    if (fixed && v.size() != static_cast<size_t>(type_length))
      fail("DELTA_BYTE_ARRAY: value ", i, " has ", v.size(), " bytes, the column's fixed length is ", type_length);
    out.bytes.emplace_back(v);
    prev = v;
  }
}

void decode_byte_stream_split(PhysicalType type, int32_t type_length, const uint8_t* p, size_t size, size_t count,
                              RawValues& out) {
  size_t w = 0;
  switch (type) {
    case PhysicalType::Int32:
    case PhysicalType::Float: w = 4; break;
    case PhysicalType::Int64:
    case PhysicalType::Double: w = 8; break;
    case PhysicalType::FixedLenByteArray: w = static_cast<size_t>(type_length); break;
    default: fail("BYTE_STREAM_SPLIT is not defined for ", physical_type_name(static_cast<int32_t>(type)));
  }
  if (w == 0 || size % w != 0) fail("BYTE_STREAM_SPLIT: ", size, " bytes are not a whole number of ", w, "-byte values");
  const size_t n = size / w;  // values in the page (the streams' length)
  if (count > n) fail("BYTE_STREAM_SPLIT: ", n, " values, the page needs ", count);
  uint8_t buf[8];
  for (size_t i = 0; i < count; ++i) {
    if (type == PhysicalType::FixedLenByteArray) {
      std::string& v = out.owned.emplace_back(w, '\0');
      for (size_t b = 0; b < w; ++b) v[b] = static_cast<char>(p[b * n + i]);
      out.bytes.emplace_back(v);
      continue;
    }
    for (size_t b = 0; b < w; ++b) buf[b] = p[b * n + i];
    if (type == PhysicalType::Int32) {
      int32_t v;
      std::memcpy(&v, buf, 4);
      out.ints.push_back(v);
    } else if (type == PhysicalType::Int64) {
      int64_t v;
      std::memcpy(&v, buf, 8);
      out.ints.push_back(v);
    } else if (type == PhysicalType::Float) {
      float v;
      std::memcpy(&v, buf, 4);
      out.reals.push_back(v);
    } else {
      double v;
      std::memcpy(&v, buf, 8);
      out.reals.push_back(v);
    }
  }
}

}  // namespace

void RawValues::clear() {
  ints.clear();
  reals.clear();
  bytes.clear();
  owned.clear();
}

void decode_rle_hybrid(const uint8_t* p, size_t size, int bit_width, size_t count, uint32_t* out) {
  rle_hybrid(p, size, bit_width, count, out);
}

void decode_rle_hybrid(const uint8_t* p, size_t size, int bit_width, size_t count, uint8_t* out) {
  rle_hybrid(p, size, bit_width, count, out);
}

size_t decode_bit_packed_levels(const uint8_t* p, size_t size, int bit_width, size_t count, uint8_t* out) {
  if (bit_width < 0 || bit_width > 8) fail("BIT_PACKED levels: bit width ", bit_width, " outside 0..8");
  const uint64_t bits = static_cast<uint64_t>(count) * bit_width;
  const size_t bytes = static_cast<size_t>((bits + 7) / 8);
  need(bytes, size, "BIT_PACKED levels");
  for (size_t i = 0; i < count; ++i) {
    uint32_t v = 0;
    for (int b = 0; b < bit_width; ++b) {
      const uint64_t bit = i * static_cast<uint64_t>(bit_width) + b;
      v = (v << 1) | ((p[bit / 8] >> (7 - bit % 8)) & 1);
    }
    out[i] = static_cast<uint8_t>(v);
  }
  return bytes;
}

int bit_width_of(uint64_t max_value) {
  int w = 0;
  while (max_value) {
    ++w;
    max_value >>= 1;
  }
  return w;
}

void decode_values(int32_t encoding, PhysicalType type, int32_t type_length, const uint8_t* p, size_t size,
                   size_t count, RawValues& out) {
  const uint8_t* end = p + size;
  const bool is_int = type == PhysicalType::Int32 || type == PhysicalType::Int64;
  const bool is_bytes = type == PhysicalType::ByteArray || type == PhysicalType::FixedLenByteArray;
  switch (static_cast<Encoding>(encoding)) {
    case Encoding::Plain: decode_plain(type, type_length, p, size, count, out); return;
    case Encoding::Rle: {
      if (type != PhysicalType::Boolean) fail("RLE values are only defined for BOOLEAN columns");
      need(4, size, "RLE BOOLEAN length");
      uint32_t n;
      std::memcpy(&n, p, 4);
      need(n, size - 4, "RLE BOOLEAN");
      std::vector<uint8_t> bits(count);
      decode_rle_hybrid(p + 4, n, 1, count, bits.data());
      for (uint8_t b : bits) out.ints.push_back(b);
      return;
    }
    case Encoding::DeltaBinaryPacked:
      if (!is_int) fail("DELTA_BINARY_PACKED is only defined for INT32 / INT64 columns");
      decode_delta_binary_packed(p, end, count, type == PhysicalType::Int32, out.ints);
      return;
    case Encoding::DeltaLengthByteArray:
      if (type != PhysicalType::ByteArray) fail("DELTA_LENGTH_BYTE_ARRAY is only defined for BYTE_ARRAY columns");
      decode_delta_length(p, end, count, out.bytes);
      return;
    case Encoding::DeltaByteArray:
      if (!is_bytes) fail("DELTA_BYTE_ARRAY is only defined for BYTE_ARRAY / FIXED_LEN_BYTE_ARRAY columns");
      decode_delta_byte_array(p, end, count, type == PhysicalType::FixedLenByteArray, type_length, out);
      return;
    case Encoding::ByteStreamSplit: decode_byte_stream_split(type, type_length, p, size, count, out); return;
    default: fail("value encoding ", encoding_name(encoding), " (", encoding, ") is not supported here");
  }
}

void decode_dictionary_indexes(const uint8_t* p, size_t size, size_t count, std::vector<uint32_t>& out) {
  out.resize(count);
  if (count == 0) return;
  if (size < 1) fail("dictionary indexes: missing bit width byte");
  decode_rle_hybrid(p + 1, size - 1, p[0], count, out.data());
}

}  // namespace grpo::parquet
