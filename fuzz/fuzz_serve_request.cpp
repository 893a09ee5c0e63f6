// libFuzzer target over the server's request mapping (src/serve/openai_request.cpp): any body, as a chat or a
// completions request (the first byte chooses), for a model with the byte tokenizer. A body is either
// mapped to engine requests that the engine's own validation accepts, or refused with an ApiError; nothing
// else may escape, crash or hang.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "rollout/request.h"
#include "serve/api_error.h"
#include "serve/openai_request.h"
#include "tokenizer/byte_tokenizer.h"

namespace {
const grpo::Tokenizer& tokenizer() {
  static const grpo::Tokenizer tok = [] {
    const std::string dir = (std::filesystem::temp_directory_path() / "grpo_fuzz_serve_tokenizer").string();
    grpo::write_byte_tokenizer(dir);
    return grpo::Tokenizer::load(dir);
  }();
  return tok;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const grpo::serve::ModelInfo info{
      .name = "tiny", .tok = &tokenizer(), .vocab = 384, .context = 256, .stop_ids = {258}};
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    const grpo::serve::ParsedRequest p = data[0] % 2 == 0 ? grpo::serve::parse_chat_request(body, info, 1)
                                                          : grpo::serve::parse_completion_request(body, info, 1);
    for (size_t i = 0; i < p.requests.size(); ++i)
      grpo::rollout::validate_request(p.requests[i], i, info.vocab, info.context, true);  // throws: a mapping bug
  } catch (const grpo::serve::ApiError&) {
  }
  return 0;
}
