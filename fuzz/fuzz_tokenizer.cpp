// libFuzzer target: tokenizer.json text -> Tokenizer::from_json_text; a file it accepts must encode and
// decode a fixed text (ids inside its vocabulary); anything else must throw grpo::Error. Never a crash, an
// overflow, or an allocation sized by an id the file merely claims (a vocab id of 1e9 is refused, not
// allocated). Seeds: fuzz/corpus/tokenizer/.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const grpo::Tokenizer tok = grpo::Tokenizer::from_json_text(text, "", "fuzz/tokenizer.json");
    const std::vector<int32_t> ids = tok.encode("Hello, world! 12 + 30 = 42 <|im_end|>\n\xC3\xA9", true);
    for (int32_t id : ids)
      if (id < 0 || id >= tok.vocab_size()) std::abort();  // an id outside the tokenizer's own vocabulary
    (void)tok.decode(ids, false);
  } catch (const grpo::Error&) {
  }
  return 0;
}
