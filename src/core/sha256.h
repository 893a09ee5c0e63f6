// SHA-256 (FIPS 180-4) of bytes, incrementally, and of a whole file: the checksums of sharded checkpoints'
// manifests (loop/flat_shards.h). Written out here rather than taken from a crypto library, since the
// engine needs nothing else of one; tests/core checks it against the standard's test vectors.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace grpo {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  std::string hex_digest();  // ends the hash: 64 lowercase hex digits

 private:
  void block(const uint8_t* p);  // one 64-byte block into state_
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buf_;
  size_t buffered_ = 0;
  uint64_t total_ = 0;  // bytes hashed
};

std::string sha256_hex(std::string_view bytes);
// The file's SHA-256 (read in blocks); throws grpo::Error naming the file when it cannot be read.
std::string sha256_file(const std::string& path);
// The same, and in `blocks` the SHA-256 of each `block_bytes` of the file in order (the last one shorter):
// one pass over the file.
std::string sha256_file(const std::string& path, int64_t block_bytes, std::vector<std::string>* blocks);
// SHA-256 of the file's bytes [offset, offset + bytes).
std::string sha256_file_range(const std::string& path, int64_t offset, int64_t bytes);

}  // namespace grpo
