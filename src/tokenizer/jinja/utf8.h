// UTF-8 helpers for the Jinja interpreter: Python strings index code points, so lengths, slices,
// case mapping and whitespace tests work on code points of the UTF-8 text.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace grpo::jinja {

// Decodes the code point at s[i] and advances i. A byte that does not start a valid sequence decodes
// as itself (0x80..0xFF) so that no input is ever lost or read out of bounds.
char32_t next_codepoint(std::string_view s, size_t& i);
void append_utf8(std::string& out, char32_t cp);
bool is_ascii(std::string_view s);
size_t codepoint_count(std::string_view s);
// Byte offset of every code point, plus s.size() at the end: [n_codepoints + 1].
std::vector<size_t> codepoint_offsets(std::string_view s);
std::vector<char32_t> to_codepoints(std::string_view s);
std::string from_codepoints(const std::vector<char32_t>& cps);

bool is_space(char32_t cp);      // Python str.isspace
bool is_printable(char32_t cp);  // Python str.isprintable (used by repr)
bool is_alpha(char32_t cp);
bool is_digit(char32_t cp);
bool is_lower_char(char32_t cp);  // Unicode category Ll
bool is_upper_char(char32_t cp);  // Lu or Lt
bool is_cased(char32_t cp);       // Lu, Ll or Lt
char32_t to_upper(char32_t cp);
char32_t to_lower(char32_t cp);
std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string title_char(char32_t cp);  // Python's titlecase of one code point (ß -> "Ss")
// Python str.splitlines() without keepends.
std::vector<std::string> split_lines(std::string_view s);

}  // namespace grpo::jinja
