// Implementation of the UTF-8 helpers (see utf8.h). Sequence validity follows the Unicode standard's
// table of well-formed byte sequences (Table 3-7), which also defines the "maximal subpart" rule.
#include "tokenizer/utf8.h"

#include <cstdio>

#include "core/error.h"

namespace grpo::utf8 {
namespace {

// Allowed range of the second byte for a lead byte (Table 3-7); the other continuation bytes are 80..BF.
struct LeadInfo {
  uint8_t length;  // 0 = not a lead byte
  uint8_t second_lo, second_hi;
};

LeadInfo lead_info(uint8_t b) {
  if (b < 0x80) return {1, 0, 0};
  if (b < 0xC2) return {0, 0, 0};
  if (b < 0xE0) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b < 0xF0) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b < 0xF4) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

// Number of bytes at s[i] that form a valid prefix of a sequence (the "maximal subpart"), and whether
// that prefix is the whole sequence.
size_t valid_prefix_length(std::string_view s, size_t i, bool* complete) {
  const auto b0 = static_cast<uint8_t>(s[i]);
  const LeadInfo info = lead_info(b0);
  *complete = false;
  if (info.length == 0) return 0;
  if (info.length == 1) {
    *complete = true;
    return 1;
  }
  size_t n = 1;
  for (; n < info.length && i + n < s.size(); ++n) {
    const auto b = static_cast<uint8_t>(s[i + n]);
    const uint8_t lo = n == 1 ? info.second_lo : 0x80, hi = n == 1 ? info.second_hi : 0xBF;
    if (b < lo || b > hi) return n;
  }
  *complete = n == info.length;
  return n;
}

}  // namespace

size_t valid_sequence_length(std::string_view s, size_t i) {
  bool complete = false;
  const size_t n = valid_prefix_length(s, i, &complete);
  return complete ? n : 0;
}

bool is_valid(std::string_view s, size_t* bad_offset) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    // ASCII fast path, 8 bytes at a time.
    while (i + 8 <= n) {
      uint64_t w;
      __builtin_memcpy(&w, s.data() + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t len = valid_sequence_length(s, i);
    if (len == 0) {
      if (bad_offset) *bad_offset = i;
      return false;
    }
    i += len;
  }
  return true;
}

void check_valid(std::string_view s, const std::string& source) {
  size_t bad = 0;
  if (is_valid(s, &bad)) return;
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned>(static_cast<uint8_t>(s[bad])));
  fail(source, ": text is not valid UTF-8 (byte offset ", bad, ", byte ", hex, ")");
}

char32_t next_code_point(std::string_view s, size_t& i) {
  const auto b0 = static_cast<uint8_t>(s[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  if (b0 < 0xE0) {
    const char32_t cp = ((b0 & 0x1Fu) << 6) | (static_cast<uint8_t>(s[i + 1]) & 0x3Fu);
    i += 2;
    return cp;
  }
  if (b0 < 0xF0) {
    const char32_t cp = ((b0 & 0x0Fu) << 12) | ((static_cast<uint8_t>(s[i + 1]) & 0x3Fu) << 6) |
                        (static_cast<uint8_t>(s[i + 2]) & 0x3Fu);
    i += 3;
    return cp;
  }
  const char32_t cp = ((b0 & 0x07u) << 18) | ((static_cast<uint8_t>(s[i + 1]) & 0x3Fu) << 12) |
                      ((static_cast<uint8_t>(s[i + 2]) & 0x3Fu) << 6) | (static_cast<uint8_t>(s[i + 3]) & 0x3Fu);
  i += 4;
  return cp;
}

void append_code_point(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

void append_lossy(std::string& out, std::string_view bytes) {
  size_t i = 0, run_start = 0;
  while (i < bytes.size()) {
    if (static_cast<uint8_t>(bytes[i]) < 0x80) {
      ++i;
      continue;
    }
    bool complete = false;
    const size_t n = valid_prefix_length(bytes, i, &complete);
    if (complete) {
      i += n;
      continue;
    }
    out.append(bytes.substr(run_start, i - run_start));
    out.append(kReplacement);
    i += n == 0 ? 1 : n;
    run_start = i;
  }
  out.append(bytes.substr(run_start));
}

size_t incomplete_tail_length(std::string_view bytes) {
  // A lead byte of an incomplete sequence lies at most 3 bytes before the end.
  const size_t n = bytes.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto b = static_cast<uint8_t>(bytes[n - back]);
    if ((b & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    bool complete = false;
    const size_t len = valid_prefix_length(bytes, n - back, &complete);
    return (!complete && len == back) ? back : 0;
  }
  return 0;
}

}  // namespace grpo::utf8
