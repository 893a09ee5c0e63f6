// Page decompression (see decompress.h).
#include "data/parquet/decompress.h"

#include <brotli/decode.h>
#include <lz4.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <climits>
#include <cstdint>

#include "core/error.h"
#include "data/parquet/metadata.h"

namespace grpo::parquet {
namespace {

void inflate_gzip(const uint8_t* in, size_t in_size, uint8_t* out, size_t out_size) {
  z_stream zs{};
  // 15 + 32: a gzip or zlib header, detected.
  if (inflateInit2(&zs, 15 + 32) != Z_OK) fail("GZIP: zlib inflateInit2 failed");
  size_t produced = 0;
  int rc = Z_OK;
  zs.next_in = const_cast<uint8_t*>(in);
  zs.avail_in = static_cast<uInt>(in_size);
  // Members may be concatenated: inflate each until the input or the output is used up.
  while (true) {
    zs.next_out = out + produced;
    zs.avail_out = static_cast<uInt>(out_size - produced);
    rc = inflate(&zs, Z_FINISH);
    produced = out_size - zs.avail_out;
    if (rc == Z_STREAM_END && zs.avail_in > 0 && produced < out_size) {
      inflateReset(&zs);
      continue;
    }
    break;
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END && !(rc == Z_BUF_ERROR && produced == out_size))
    fail("GZIP: corrupt data (zlib error ", rc, ", ", zs.msg ? zs.msg : "no message", ")");
  if (produced != out_size) fail("GZIP: decompressed to ", produced, " bytes, the page header says ", out_size);
}

// LZ4 (codec 5) as Hadoop writes it: blocks of [4-byte big-endian decompressed size][4-byte big-endian
// compressed size][LZ4 block]. Returns false when the input is not in that framing.
bool lz4_hadoop(const uint8_t* in, size_t in_size, uint8_t* out, size_t out_size) {
  size_t ip = 0, op = 0;
  while (ip < in_size) {
    if (in_size - ip < 8) return false;
    const uint32_t raw = (uint32_t(in[ip]) << 24) | (uint32_t(in[ip + 1]) << 16) | (uint32_t(in[ip + 2]) << 8) | in[ip + 3];
    const uint32_t comp = (uint32_t(in[ip + 4]) << 24) | (uint32_t(in[ip + 5]) << 16) | (uint32_t(in[ip + 6]) << 8) | in[ip + 7];
    ip += 8;
    if (comp > in_size - ip || raw > out_size - op || comp > INT_MAX || raw > INT_MAX) return false;
    const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(in + ip), reinterpret_cast<char*>(out + op),
                                      static_cast<int>(comp), static_cast<int>(raw));
    if (n < 0 || static_cast<uint32_t>(n) != raw) return false;
    ip += comp;
    op += raw;
  }
  return op == out_size;
}

void lz4_raw(const uint8_t* in, size_t in_size, uint8_t* out, size_t out_size) {
  if (in_size > INT_MAX || out_size > INT_MAX) fail("LZ4: page larger than 2 GB");
  const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(in), reinterpret_cast<char*>(out),
                                    static_cast<int>(in_size), static_cast<int>(out_size));
  if (n < 0) fail("LZ4: corrupt data");
  if (static_cast<size_t>(n) != out_size) fail("LZ4: decompressed to ", n, " bytes, the page header says ", out_size);
}

}  // namespace

bool codec_supported(int32_t codec) {
  switch (static_cast<Codec>(codec)) {
    case Codec::Uncompressed:
    case Codec::Snappy:
    case Codec::Gzip:
    case Codec::Brotli:
    case Codec::Lz4:
    case Codec::Zstd:
    case Codec::Lz4Raw: return true;
    default: return false;
  }
}

size_t max_decompressed_size(int32_t codec, size_t in_size) {
  switch (static_cast<Codec>(codec)) {
    case Codec::Uncompressed: return in_size;
    case Codec::Gzip: return in_size * 1032 + 1024;
    case Codec::Lz4:
    case Codec::Lz4Raw: return in_size * 255 + 1024;
    default: return SIZE_MAX;  // SNAPPY and ZSTD state the size in their data; BROTLI has no bound
  }
}

void decompress(int32_t codec, const uint8_t* in, size_t in_size, uint8_t* out, size_t out_size) {
  switch (static_cast<Codec>(codec)) {
    case Codec::Uncompressed:
      if (in_size != out_size) fail("UNCOMPRESSED page of ", in_size, " bytes, the page header says ", out_size);
      if (out_size) std::copy(in, in + in_size, out);
      return;
    case Codec::Snappy: {
      size_t n = 0;
      if (snappy_uncompressed_length(reinterpret_cast<const char*>(in), in_size, &n) != SNAPPY_OK)
        fail("SNAPPY: corrupt data (no valid length header)");
      if (n != out_size) fail("SNAPPY: data decompresses to ", n, " bytes, the page header says ", out_size);
      if (snappy_uncompress(reinterpret_cast<const char*>(in), in_size, reinterpret_cast<char*>(out), &n) != SNAPPY_OK ||
          n != out_size)
        fail("SNAPPY: corrupt data");
      return;
    }
    case Codec::Gzip: inflate_gzip(in, in_size, out, out_size); return;
    case Codec::Zstd: {
      const unsigned long long content = ZSTD_getFrameContentSize(in, in_size);
      if (content == ZSTD_CONTENTSIZE_ERROR) fail("ZSTD: not a zstd frame");
      if (content != ZSTD_CONTENTSIZE_UNKNOWN && content != out_size)
        fail("ZSTD: frame holds ", content, " bytes, the page header says ", out_size);
      const size_t n = ZSTD_decompress(out, out_size, in, in_size);
      if (ZSTD_isError(n)) fail("ZSTD: ", ZSTD_getErrorName(n));
      if (n != out_size) fail("ZSTD: decompressed to ", n, " bytes, the page header says ", out_size);
      return;
    }
    case Codec::Lz4Raw: lz4_raw(in, in_size, out, out_size); return;
    case Codec::Lz4:
      // Older writers used Hadoop's framing, some wrote a bare block: try the framing first, as Arrow does.
      if (!lz4_hadoop(in, in_size, out, out_size)) lz4_raw(in, in_size, out, out_size);
      return;
    case Codec::Brotli: {
      size_t n = out_size;
      if (BrotliDecoderDecompress(in_size, in, &n, out) != BROTLI_DECODER_RESULT_SUCCESS)
        fail("BROTLI: corrupt data (or more than the ", out_size, " bytes the page header says)");
      if (n != out_size) fail("BROTLI: decompressed to ", n, " bytes, the page header says ", out_size);
      return;
    }
    default: fail("compression codec ", codec_name(codec), " (", codec, ") is not supported");
  }
}

}  // namespace grpo::parquet
