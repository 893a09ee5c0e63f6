// Implementation of NFC normalisation (see nfc.h). The quick check uses a bitmap over all code points of
// those that NFC might change or combine: non-zero combining class, a canonical decomposition that NFC
// does not recompose (singletons, composition exclusions), and every code point that appears after the
// first in some canonical decomposition (the possible second elements of a composition, incl. Hangul
// vowel and trailing jamo). The bitmap is built once from utf8proc's tables.
#include "tokenizer/nfc.h"

#include <utf8proc.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace grpo::nfc {
namespace {

constexpr char32_t kCodePoints = 0x110000;

class UnsafeSet {
 public:
  UnsafeSet() : bits_(kCodePoints / 64, 0) {
    utf8proc_int32_t decomposition[8];
    for (char32_t cp = 0x80; cp < kCodePoints; ++cp) {
      if (cp >= 0xD800 && cp < 0xE000) continue;
      const utf8proc_property_t* prop = utf8proc_get_property(static_cast<utf8proc_int32_t>(cp));
      if (prop->combining_class != 0) set(cp);
      int last_boundclass = 0;
      const utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), decomposition, 8,
                                                         UTF8PROC_DECOMPOSE, &last_boundclass);
      if (n <= 0 || (n == 1 && decomposition[0] == static_cast<utf8proc_int32_t>(cp))) continue;
      for (utf8proc_ssize_t k = 1; k < n; ++k) set(static_cast<char32_t>(decomposition[k]));
      if (!composes_back(cp)) set(cp);
    }
  }
  bool contains(char32_t cp) const { return (bits_[cp >> 6] >> (cp & 63)) & 1; }

 private:
  void set(char32_t cp) { bits_[cp >> 6] |= uint64_t{1} << (cp & 63); }

  static bool composes_back(char32_t cp) {
    std::string s;
    utf8::append_code_point(s, cp);
    utf8proc_uint8_t* out = nullptr;
    const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                            static_cast<utf8proc_ssize_t>(s.size()), &out,
                                            static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    const bool same = n >= 0 && std::string_view(reinterpret_cast<const char*>(out), static_cast<size_t>(n)) == s;
    std::free(out);
    return same;
  }

  std::vector<uint64_t> bits_;
};

const UnsafeSet& unsafe_set() {
  static const UnsafeSet set;
  return set;
}

}  // namespace

bool quick_check(std::string_view text) {
  size_t i = 0;
  const size_t n = text.size();
  const UnsafeSet* unsafe = nullptr;
  while (i < n) {
    if (static_cast<uint8_t>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const char32_t cp = utf8::next_code_point(text, i);
    if (!unsafe) unsafe = &unsafe_set();
    if (unsafe->contains(cp)) return false;
  }
  return true;
}

void normalize(std::string_view text, std::string& out) {
  if (quick_check(text)) {
    out.append(text);
    return;
  }
  utf8proc_uint8_t* mapped = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                          static_cast<utf8proc_ssize_t>(text.size()), &mapped,
                                          static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) {
    std::free(mapped);
    fail("[tokenizer] NFC normalisation failed: ", utf8proc_errmsg(n));
  }
  out.append(reinterpret_cast<const char*>(mapped), static_cast<size_t>(n));
  std::free(mapped);
}

}  // namespace grpo::nfc
