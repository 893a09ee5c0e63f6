// UTF-8 decoding/encoding and Unicode character classes (via utf8proc) with Python's semantics.
#include "tokenizer/jinja/utf8.h"

#include <utf8proc.h>

namespace grpo::jinja {

char32_t next_codepoint(std::string_view s, size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  size_t len = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xE ? 3 : (b0 >> 3) == 0x1E ? 4 : 0;
  if (len <= 1 || i + len > s.size()) {
    ++i;
    return b0;
  }
  char32_t cp = b0 & (0xFF >> (len + 1));
  for (size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) {
      ++i;
      return b0;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  i += len;
  return cp;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool is_ascii(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

size_t codepoint_count(std::string_view s) {
  if (is_ascii(s)) return s.size();
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++n) next_codepoint(s, i);
  return n;
}

std::vector<size_t> codepoint_offsets(std::string_view s) {
  std::vector<size_t> offsets;
  offsets.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size();) {
    offsets.push_back(i);
    next_codepoint(s, i);
  }
  offsets.push_back(s.size());
  return offsets;
}

std::vector<char32_t> to_codepoints(std::string_view s) {
  std::vector<char32_t> cps;
  cps.reserve(s.size());
  for (size_t i = 0; i < s.size();) cps.push_back(next_codepoint(s, i));
  return cps;
}

std::string from_codepoints(const std::vector<char32_t>& cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t cp : cps) append_utf8(out, cp);
  return out;
}

bool is_space(char32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F);
  if (cp == 0x85) return true;
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL || cat == UTF8PROC_CATEGORY_ZP;
}

bool is_printable(char32_t cp) {
  if (cp == ' ') return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZS:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
      return false;
    default:
      return true;
  }
}

bool is_alpha(char32_t cp) {
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO;
}

bool is_digit(char32_t cp) { return utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_ND; }

bool is_lower_char(char32_t cp) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_LL;
}
bool is_upper_char(char32_t cp) {
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LT;
}
bool is_cased(char32_t cp) { return is_lower_char(cp) || is_upper_char(cp); }

char32_t to_upper(char32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') ? cp - 32 : cp;
  return static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(cp)));
}

char32_t to_lower(char32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)));
}

// Python's str.upper()/lower() apply Unicode's full (one-to-many) mappings where they exist; these are
// the ones outside Greek/Armenian (which keep the simple mapping here).
std::string upper(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const char32_t cp = next_codepoint(s, i);
    switch (cp) {
      case 0xDF: out += "SS"; break;    // ß
      case 0xFB00: out += "FF"; break;  // ﬀ
      case 0xFB01: out += "FI"; break;
      case 0xFB02: out += "FL"; break;
      case 0xFB03: out += "FFI"; break;
      case 0xFB04: out += "FFL"; break;
      case 0xFB05:
      case 0xFB06: out += "ST"; break;
      default: append_utf8(out, to_upper(cp));
    }
  }
  return out;
}

std::string title_char(char32_t cp) {
  switch (cp) {
    case 0xDF: return "Ss";
    case 0xFB00: return "Ff";
    case 0xFB01: return "Fi";
    case 0xFB02: return "Fl";
    case 0xFB03: return "Ffi";
    case 0xFB04: return "Ffl";
    case 0xFB05:
    case 0xFB06: return "St";
    default: {
      std::string out;
      append_utf8(out, static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(cp))));
      return out;
    }
  }
}

std::string lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const char32_t cp = next_codepoint(s, i);
    if (cp == 0x130) {  // İ -> i + combining dot above
      out += "i\xCC\x87";
      continue;
    }
    append_utf8(out, to_lower(cp));
  }
  return out;
}

std::vector<std::string> split_lines(std::string_view s) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t at = i;
    const char32_t cp = next_codepoint(s, i);
    const bool is_break = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || (cp >= 0x1C && cp <= 0x1E) ||
                          cp == 0x85 || cp == 0x2028 || cp == 0x2029;
    if (!is_break) continue;
    lines.emplace_back(s.substr(start, at - start));
    if (cp == '\r' && i < s.size() && s[i] == '\n') ++i;
    start = i;
  }
  if (start < s.size()) lines.emplace_back(s.substr(start));
  return lines;
}

}  // namespace grpo::jinja
