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
