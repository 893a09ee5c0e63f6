// The encodings against byte strings worked out by hand from parquet-format's Encodings.md, and their
// bounds checks.
#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "data/parquet/encodings.h"
#include "data/parquet/thrift_compact.h"

namespace grpo::parquet {
namespace {

TEST(ParquetEncodings, RleHybridRunsAndBitPacking) {
  // Encodings.md's example: 0..7 bit-packed with width 3 is one group: header (1 << 1) | 1 = 3, then
  // 10001000 11000110 11111010.
  const uint8_t packed[] = {0x03, 0x88, 0xc6, 0xfa};
  uint32_t out[8];
  decode_rle_hybrid(packed, sizeof packed, 3, 8, out);
  for (uint32_t i = 0; i < 8; ++i) EXPECT_EQ(out[i], i);
  // An RLE run: 5 times the value 300 (width 9: two bytes), then bit-packed.
  const uint8_t run[] = {0x0a, 0x2c, 0x01};
  uint32_t five[5];
  decode_rle_hybrid(run, sizeof run, 9, 5, five);
  for (uint32_t v : five) EXPECT_EQ(v, 300u);
  // Too few bytes for the values asked for, a run value wider than the bit width, a width over 32.
  EXPECT_THROW(decode_rle_hybrid(run, 2, 9, 5, five), Error);
  EXPECT_THROW(decode_rle_hybrid(run, sizeof run, 4, 5, five), Error);  // 0x2c > 15
  EXPECT_THROW(decode_rle_hybrid(packed, sizeof packed, 33, 8, out), Error);
  EXPECT_THROW(decode_rle_hybrid(packed, sizeof packed, 3, 9, out), Error);  // 9 values, one group of 8
  uint8_t levels[3];
  EXPECT_THROW(decode_rle_hybrid(run, sizeof run, 9, 3, levels), Error);  // 9-bit values into bytes
}

TEST(ParquetEncodings, DeltaBinaryPacked) {
  // Encodings.md's example 1: 1 2 3 4 5 -> deltas 1 1 1 1, min delta 1, bit width 0.
  // Header: block 128, 4 miniblocks, 5 values, first value 1 (zigzag 2); block: min delta 1 (zigzag 2),
  // widths 0 0 0 0.
  const uint8_t data[] = {0x80, 0x01, 0x04, 0x05, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00};
  RawValues raw;
  decode_values(static_cast<int32_t>(Encoding::DeltaBinaryPacked), PhysicalType::Int64, 0, data, sizeof data, 5, raw);
  EXPECT_EQ(raw.ints, (std::vector<int64_t>{1, 2, 3, 4, 5}));
  raw.clear();
  EXPECT_THROW(decode_values(static_cast<int32_t>(Encoding::DeltaBinaryPacked), PhysicalType::Int64, 0, data,
                             sizeof data, 6, raw),
               Error);  // holds 5 values
  uint8_t bad_block[sizeof data];
  std::copy(data, data + sizeof data, bad_block);
  bad_block[0] = 0x40;  // block size 64: not a multiple of 128
  raw.clear();
  EXPECT_THROW(decode_values(static_cast<int32_t>(Encoding::DeltaBinaryPacked), PhysicalType::Int64, 0, bad_block,
                             sizeof bad_block, 5, raw),
               Error);
}

TEST(ParquetEncodings, PlainByteArrayAndByteStreamSplitBounds) {
  const uint8_t strings[] = {2, 0, 0, 0, 'h', 'i', 0, 0, 0, 0, 5, 0, 0, 0, 'x'};
  RawValues raw;
  decode_values(0, PhysicalType::ByteArray, 0, strings, 10, 2, raw);
  ASSERT_EQ(raw.bytes.size(), 2u);
  EXPECT_EQ(raw.bytes[0], "hi");
  EXPECT_EQ(raw.bytes[1], "");
  raw.clear();
  EXPECT_THROW(decode_values(0, PhysicalType::ByteArray, 0, strings, sizeof strings, 3, raw), Error);
  // BYTE_STREAM_SPLIT of two floats 1.0f (00 00 80 3f) and -2.0f (00 00 00 c0): byte streams interleaved.
  const uint8_t split[] = {0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x3f, 0xc0};
  raw.clear();
  decode_values(static_cast<int32_t>(Encoding::ByteStreamSplit), PhysicalType::Float, 0, split, sizeof split, 2, raw);
  EXPECT_EQ(raw.reals, (std::vector<double>{1.0, -2.0}));
  raw.clear();
  EXPECT_THROW(decode_values(static_cast<int32_t>(Encoding::ByteStreamSplit), PhysicalType::Float, 0, split, 7, 1, raw),
               Error);
}

TEST(ParquetEncodings, ThriftVarintsAndSkipsAreBounded) {
  const uint8_t endless[] = {0x15, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  ThriftReader r(endless, sizeof endless);
  r.begin_struct();
  ThriftField f;
  ASSERT_TRUE(r.next_field(f));
  EXPECT_THROW(r.read_i32(f, "x"), Error);
  // A list claiming more elements than bytes.
  const uint8_t list[] = {0x19, 0xf5, 0xff, 0xff, 0x03};
  ThriftReader l(list, sizeof list);
  l.begin_struct();
  ASSERT_TRUE(l.next_field(f));
  EXPECT_THROW(l.skip(f.type), Error);
}

}  // namespace
}  // namespace grpo::parquet
