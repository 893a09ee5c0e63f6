// Answer extraction and comparison for the `math` and `exact` rewards: the content of the last
// \boxed{...} in a response (braces balanced), else its last number; numbers compare by value
// ("3/4" = "\frac{3}{4}" = "0.75", "1,000" = "1000", "-2" = "-2.0"), anything else as normalised text.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace grpo {

// Content of the last \boxed{...} (or \fbox{...}); nullopt when there is none or it is unbalanced.
std::optional<std::string> last_boxed(std::string_view text);
// The last number written in text: optional sign, digits with optional thousands commas ("1,000"),
// optional decimals, optional "/denominator". nullopt when there is none.
std::optional<std::string> last_number(std::string_view text);
// Boxed content, else the last number; nullopt when the response has neither.
std::optional<std::string> extract_answer(std::string_view response);

// The value of a number written as an integer, decimal, fraction a/b, \frac{a}{b} / \dfrac / \tfrac,
// with thousands commas, surrounding $ and spaces, a trailing "." and a leading "x =" allowed.
std::optional<double> parse_number(std::string_view text);
// Whitespace, $ and a trailing "." removed, for textual comparison.
std::string normalize_answer(std::string_view text);

// True when both parse as numbers equal within 1e-9 relative (1e-12 absolute), or, when the truth is
// not a number, when the normalised texts are equal.
bool answers_match(std::string_view predicted, std::string_view truth);

}  // namespace grpo
