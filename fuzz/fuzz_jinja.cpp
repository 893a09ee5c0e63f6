// libFuzzer target: the Jinja template parser (chat templates of tokenizer_config.json) over arbitrary
// text. A template either parses or throws grpo::Error naming the line; never a crash, an overflow or
// another exception. Parsing only: rendering an arbitrary template may legitimately run for long.
// Seeds: fuzz/corpus/jinja/.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "tokenizer/jinja/parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)grpo::jinja::parse_template(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.jinja");
  } catch (const grpo::Error&) {
  }
  return 0;
}
