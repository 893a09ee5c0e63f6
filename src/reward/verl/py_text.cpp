// Python str semantics over code points (see py_text.h). Character classes come from utf8proc's
// Unicode tables.
#include "reward/verl/py_text.h"

#include <utf8proc.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace grpo::verl {

PyStr from_utf8(std::string_view s) {
  PyStr out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(s.size());
  while (left > 0) {
    utf8proc_int32_t c = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(p, left, &c);
    if (n <= 0) {  // an invalid byte: one replacement character, then go on with the next byte
      out.push_back(0xFFFD);
      ++p;
      --left;
      continue;
    }
    out.push_back(static_cast<char32_t>(c));
    p += n;
    left -= n;
  }
  return out;
}

std::string to_utf8(const PyStr& s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) {
    utf8proc_uint8_t buf[4];
    const utf8proc_ssize_t n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(c), buf);
    out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
  }
  return out;
}

bool py_isspace(char32_t c) {
  if (c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F)) return true;
  if (c < 0x80) return false;
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
         c == 0x202F || c == 0x205F || c == 0x3000;
}

bool py_isdecimal(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  return utf8proc_category(static_cast<utf8proc_int32_t>(c)) == UTF8PROC_CATEGORY_ND;
}

bool py_isdigit(char32_t c) {
  if (py_isdecimal(c)) return true;
  // Numeric_Type=Digit: superscripts, subscripts, circled, parenthesised and dingbat digits, Ethiopic.
  return c == 0xB2 || c == 0xB3 || c == 0xB9 || c == 0x2070 || (c >= 0x2074 && c <= 0x2079) ||
         (c >= 0x2080 && c <= 0x2089) || (c >= 0x2460 && c <= 0x2468) || (c >= 0x2474 && c <= 0x247C) ||
         (c >= 0x2488 && c <= 0x2490) || c == 0x24EA || (c >= 0x24F5 && c <= 0x24FD) || c == 0x24FF ||
         (c >= 0x2776 && c <= 0x277E) || (c >= 0x2780 && c <= 0x2788) || (c >= 0x278A && c <= 0x2792) ||
         (c >= 0x1369 && c <= 0x1371);
}

bool py_isalpha(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO: return true;
    default: return false;
  }
}

bool py_isword(char32_t c) {
  if (c == '_' || py_isalpha(c)) return true;
  if (c < 0x80) return c >= '0' && c <= '9';
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO;
}

char32_t py_lower(char32_t c) {
  if (c < 0x80) return c >= 'A' && c <= 'Z' ? c + 32 : c;
  return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
}

PyStr lower(const PyStr& s) {
  PyStr out = s;
  for (char32_t& c : out) c = py_lower(c);
  return out;
}

PyStr strip(const PyStr& s) {
  size_t b = 0, e = s.size();
  while (b < e && py_isspace(s[b])) ++b;
  while (e > b && py_isspace(s[e - 1])) --e;
  return s.substr(b, e - b);
}

PyStr last(const PyStr& s, size_t n) { return s.size() > n ? s.substr(s.size() - n) : s; }

PyStr replace_all(const PyStr& s, const PyStr& from, const PyStr& to) {
  if (from.empty()) {  // Python inserts `to` between every character and at both ends
    PyStr out = to;
    for (char32_t c : s) out += c, out += to;
    return out;
  }
  PyStr out;
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != PyStr::npos; pos = hit + from.size()) {
    out.append(s, pos, hit - pos);
    out += to;
  }
  out.append(s, pos, PyStr::npos);
  return out;
}

std::vector<PyStr> split(const PyStr& s, const PyStr& sep) {
  std::vector<PyStr> out;
  size_t pos = 0;
  for (size_t hit; (hit = s.find(sep, pos)) != PyStr::npos; pos = hit + sep.size()) out.push_back(s.substr(pos, hit - pos));
  out.push_back(s.substr(pos));
  return out;
}

std::vector<PyStr> split_whitespace(const PyStr& s) {
  std::vector<PyStr> out;
  for (size_t i = 0; i < s.size();) {
    while (i < s.size() && py_isspace(s[i])) ++i;
    const size_t b = i;
    while (i < s.size() && !py_isspace(s[i])) ++i;
    if (i > b) out.push_back(s.substr(b, i - b));
  }
  return out;
}

bool contains(const PyStr& s, const PyStr& part) { return s.find(part) != PyStr::npos; }
bool starts_with(const PyStr& s, const PyStr& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

bool all_digits(const PyStr& s) {
  if (s.empty()) return false;
  for (char32_t c : s)
    if (!py_isdigit(c)) return false;
  return true;
}

namespace {

// The ASCII form of a numeric literal as float()/int() read it: surrounding whitespace stripped, Unicode
// decimal digits mapped to 0-9, underscores (only single ones between digits) removed. nullopt when the
// text holds a character float() never accepts.
std::optional<std::string> numeric_ascii(const PyStr& text) {
  const PyStr s = strip(text);
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const char32_t c = s[i];
    if (c == '_') {
      const bool between = i > 0 && i + 1 < s.size() && py_isdecimal(s[i - 1]) && py_isdecimal(s[i + 1]);
      if (!between) return std::nullopt;
      continue;
    }
    if (c >= 0x80 && py_isdecimal(c)) {  // Unicode decimal digits come in contiguous runs of ten, 0 first
      int before = 0;
      while (before < 1000 && py_isdecimal(c - before - 1)) ++before;
      out += static_cast<char>('0' + before % 10);
      continue;
    }
    if (c >= 0x80) return std::nullopt;
    out += static_cast<char>(c);
  }
  return out;
}

}  // namespace

std::optional<double> py_float(const PyStr& text) {
  const auto ascii = numeric_ascii(text);
  if (!ascii || ascii->empty()) return std::nullopt;
  const std::string& s = *ascii;
  size_t i = 0;
  if (s[i] == '+' || s[i] == '-') ++i;
  std::string word = s.substr(i);
  for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const double sign = s[0] == '-' ? -1.0 : 1.0;
  if (word == "inf" || word == "infinity") return sign * HUGE_VAL;
  if (word == "nan") return std::nan("");
  // digits [. digits] [e [sign] digits], with at least one digit in the mantissa
  size_t j = i, digits = 0;
  while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j, ++digits;
  if (j < s.size() && s[j] == '.') {
    ++j;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j, ++digits;
  }
  if (digits == 0) return std::nullopt;
  if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
    ++j;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
    size_t exp_digits = 0;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j, ++exp_digits;
    if (exp_digits == 0) return std::nullopt;
  }
  if (j != s.size()) return std::nullopt;
  errno = 0;
  return std::strtod(s.c_str(), nullptr);  // overflow gives inf, as Python's float() does
}

std::optional<long long> py_int(const PyStr& text) {
  const auto ascii = numeric_ascii(text);
  if (!ascii || ascii->empty()) return std::nullopt;
  const std::string& s = *ascii;
  size_t i = (s[0] == '+' || s[0] == '-') ? 1 : 0;
  if (i == s.size()) return std::nullopt;
  for (size_t j = i; j < s.size(); ++j)
    if (!std::isdigit(static_cast<unsigned char>(s[j]))) return std::nullopt;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), nullptr, 10);
  if (errno == ERANGE) return std::nullopt;
  return v;
}

}  // namespace grpo::verl
