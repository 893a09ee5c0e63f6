// SHA-256 against the test vectors of FIPS 180-4 (NIST's examples), fed whole and in uneven pieces, and of a
// file.
#include <gtest/gtest.h>

#include <string>

#include "core/files.h"
#include "core/sha256.h"
#include "test_util.h"

using namespace grpo;

TEST(Sha256, NistVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  const std::string million(1000000, 'a');
  EXPECT_EQ(sha256_hex(million), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  Sha256 pieces;  // the same bytes in pieces that straddle the 64-byte blocks
  for (size_t at = 0, step = 1; at < million.size(); at += step, step = step % 97 + 13)
    pieces.update(million.data() + at, std::min(step, million.size() - at));
  EXPECT_EQ(pieces.hex_digest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, OfAFile) {
  const std::string dir = test::fresh_temp_dir("Sha256", "OfAFile");
  write_file_atomic(dir + "/abc", "abc");
  EXPECT_EQ(sha256_file(dir + "/abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_THROW(sha256_file(dir + "/missing"), Error);
}

// A file's blocks: each block's digest is that of its bytes (the last one shorter), in one pass that also
// gives the whole file's; a range of the file hashes as its bytes do.
TEST(Sha256, BlocksAndRangesOfAFile) {
  const std::string dir = test::fresh_temp_dir("Sha256", "Blocks");
  std::string bytes(3 * (1 << 20) + 12345, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 2654435761u) >> 13);
  write_file_atomic(dir + "/f", bytes);
  for (const int64_t block : {int64_t{1} << 20, int64_t{1000}, int64_t{7} << 20}) {
    std::vector<std::string> blocks;
    EXPECT_EQ(sha256_file(dir + "/f", block, &blocks), sha256_hex(bytes));
    ASSERT_EQ(static_cast<int64_t>(blocks.size()), (static_cast<int64_t>(bytes.size()) + block - 1) / block);
    for (size_t b = 0; b < blocks.size(); b += blocks.size() / 3 + 1)
      EXPECT_EQ(blocks[b], sha256_hex(std::string_view(bytes).substr(b * block, block))) << block << " " << b;
    EXPECT_EQ(blocks.back(), sha256_hex(std::string_view(bytes).substr((blocks.size() - 1) * block)));
  }
  EXPECT_EQ(sha256_file_range(dir + "/f", 777, 1 << 20), sha256_hex(std::string_view(bytes).substr(777, 1 << 20)));
  EXPECT_EQ(sha256_file_range(dir + "/f", 5, 0), sha256_hex(""));
  EXPECT_THROW(sha256_file_range(dir + "/f", static_cast<int64_t>(bytes.size()) - 2, 10), Error);
}
