// Shared by the tokenizer tests: the Qwen3 tokenizer from shared/models, loaded once per test binary.
#pragma once
#include "tokenizer/tokenizer.h"

namespace grpo {

inline const Tokenizer& qwen3_tokenizer() {
  static const Tokenizer tok = Tokenizer::load(std::string(GRPO_SHARED_DIR) + "/models/qwen3-tokenizer");
  return tok;
}

}  // namespace grpo
