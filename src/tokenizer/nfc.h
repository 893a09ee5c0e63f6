// Unicode NFC normalisation for the tokenizer's "NFC" normalizer: a quick check that proves most text
// (ASCII, CJK, most precomposed Latin) already NFC without touching utf8proc, and utf8proc for the rest.
#pragma once
#include <string>
#include <string_view>

namespace grpo::nfc {

// True when `text` (valid UTF-8) is certainly in NFC: no code point in it can change under NFC
// (no combining marks, no characters that decompose or compose with a neighbour). False = maybe.
bool quick_check(std::string_view text);

// Appends NFC(text) to out (text must be valid UTF-8).
void normalize(std::string_view text, std::string& out);

}  // namespace grpo::nfc
