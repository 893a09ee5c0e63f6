// Page decompression with Debian's codec libraries: SNAPPY (libsnappy), GZIP (zlib), ZSTD (libzstd), LZ4_RAW and
// the Hadoop-framed LZ4 (liblz4), BROTLI (libbrotli). LZO is refused. The output must be exactly the size the
// page header states; anything else throws grpo::Error saying what the codec reported.
#pragma once
#include <cstddef>
#include <cstdint>

namespace grpo::parquet {

// Decompresses `in` (in_size bytes, codec `codec` as in parquet.thrift) into out[0, out_size).
void decompress(int32_t codec, const uint8_t* in, size_t in_size, uint8_t* out, size_t out_size);

// The most bytes `in_size` bytes can decompress to with `codec` where the format bounds it (DEFLATE: 1032x,
// LZ4: 255x), so that a corrupt page header cannot make the reader allocate far more than the data holds.
size_t max_decompressed_size(int32_t codec, size_t in_size);

// Whether `codec` is one this reader decodes.
bool codec_supported(int32_t codec);

}  // namespace grpo::parquet
