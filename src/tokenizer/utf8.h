// UTF-8 helpers of the tokenizer: validation (with the offset of the first bad byte), code point
// iteration, lossy conversion that replaces each maximal invalid subpart with U+FFFD exactly like Rust's
// String::from_utf8_lossy (what Hugging Face tokenizers' decoders use), and the incomplete tail that a
// streaming decoder must hold back.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace grpo::utf8 {

inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid UTF-8 sequence starting at s[i], or 0 when the bytes there are not one
// (bad lead byte, bad continuation, overlong, surrogate, > U+10FFFF, or cut off by the end).
size_t valid_sequence_length(std::string_view s, size_t i);

// True when `s` is valid UTF-8; otherwise false and *bad_offset = the offset of the first invalid byte.
bool is_valid(std::string_view s, size_t* bad_offset = nullptr);

// Throws grpo::Error "<source>: text is not valid UTF-8 (byte offset N, byte 0xXX)" when s is invalid.
void check_valid(std::string_view s, const std::string& source);

// Decodes the code point at s[i] (s must be valid UTF-8 there) and advances i past it.
char32_t next_code_point(std::string_view s, size_t& i);

void append_code_point(std::string& out, char32_t cp);

// Appends `bytes` to out, replacing each maximal subpart of an ill-formed sequence with U+FFFD.
void append_lossy(std::string& out, std::string_view bytes);

// Number of trailing bytes of `bytes` that form a valid but incomplete UTF-8 sequence (0..3): the bytes
// that may still become a character when more bytes arrive.
size_t incomplete_tail_length(std::string_view bytes);

}  // namespace grpo::utf8
