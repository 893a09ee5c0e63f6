// The GPT-2 byte-level alphabet: every byte 0..255 is shown as one printable Unicode character
// ('!'..'~', U+00A1..U+00AC and U+00AE..U+00FF stand for themselves, the other 68 bytes map to U+0100..
// U+0143 in byte order), so that byte-level BPE vocabularies are strings like "Ġthe" (Ġ = space).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace grpo::byte_level {

// The character that stands for byte b.
char32_t char_of_byte(uint8_t b);

// The byte that character c stands for, or -1 when c is not in the alphabet.
int byte_of_char(char32_t c);

// Byte-level string (UTF-8) of raw bytes: "a b" -> "aĠb".
std::string encode(std::string_view bytes);

// Raw bytes of a byte-level token string. Like Hugging Face's ByteLevel decoder, a token that has
// any character outside the alphabet (e.g. an added token with a space) is kept as its own UTF-8 bytes.
// `token` must be valid UTF-8.
std::string decode(std::string_view token);

}  // namespace grpo::byte_level
