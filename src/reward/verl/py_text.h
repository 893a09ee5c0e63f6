// Python `str` semantics for the verl reward rules (reward/verl/): text as Unicode code points (so that
// `s[-300:]` keeps the last 300 characters, not bytes), and the str methods and `re` classes those rules
// use, with Python's definitions: whitespace (str.isspace, `\s`), str.strip/split, str.isdigit,
// str.lower, `\w`, float(). Invalid UTF-8 bytes decode to U+FFFD (as `errors="replace"` would).
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace grpo::verl {

using PyStr = std::u32string;

PyStr from_utf8(std::string_view s);
std::string to_utf8(const PyStr& s);

bool py_isspace(char32_t c);  // str.isspace and re's \s
bool py_isdigit(char32_t c);  // str.isdigit: decimal digits and the digit-like (superscripts, circled)
bool py_isdecimal(char32_t c);  // re's \d (Unicode decimal digits)
bool py_isalpha(char32_t c);  // str.isalpha
bool py_isword(char32_t c);   // re's \w: letters, digits, underscore
char32_t py_lower(char32_t c);

PyStr lower(const PyStr& s);
PyStr strip(const PyStr& s);                       // str.strip()
PyStr last(const PyStr& s, size_t n);              // s[-n:]
PyStr replace_all(const PyStr& s, const PyStr& from, const PyStr& to);  // str.replace
std::vector<PyStr> split(const PyStr& s, const PyStr& sep);             // str.split(sep)
std::vector<PyStr> split_whitespace(const PyStr& s);                    // str.split()
bool contains(const PyStr& s, const PyStr& part);
bool starts_with(const PyStr& s, const PyStr& prefix);
bool all_digits(const PyStr& s);  // str.isdigit(): non-empty and every character a digit

// float(s): Python's syntax (surrounding whitespace, sign, digits with single underscores between them,
// decimals, exponent, inf/infinity/nan in any case); nullopt where float() raises ValueError.
std::optional<double> py_float(const PyStr& s);
// int(s) for a base-10 integer literal (sign, digits, underscores, surrounding whitespace) when it fits
// in 64 bits; nullopt otherwise.
std::optional<long long> py_int(const PyStr& s);

}  // namespace grpo::verl
