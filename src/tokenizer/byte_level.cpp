// Implementation of the byte-level alphabet (see byte_level.h).
#include "tokenizer/byte_level.h"

#include "tokenizer/utf8.h"

namespace grpo::byte_level {
namespace {

struct Tables {
  std::array<char32_t, 256> char_of{};
  std::array<int16_t, 0x144> byte_of{};  // indexed by character; every alphabet character is < U+0144

  Tables() {
    byte_of.fill(-1);
    int next_extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const char32_t c = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + next_extra++);
      char_of[b] = c;
      byte_of[c] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

char32_t char_of_byte(uint8_t b) { return tables().char_of[b]; }

int byte_of_char(char32_t c) { return c < tables().byte_of.size() ? tables().byte_of[c] : -1; }

std::string encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char b : bytes) utf8::append_code_point(out, char_of_byte(static_cast<uint8_t>(b)));
  return out;
}

std::string decode(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  size_t i = 0;
  while (i < token.size()) {
    const int b = byte_of_char(utf8::next_code_point(token, i));
    if (b < 0) return std::string(token);
    out.push_back(static_cast<char>(b));
  }
  return out;
}

}  // namespace grpo::byte_level
