// The engine's text callback for a model's tokenizer: decodes generated ids with special tokens skipped.
// Ids past the tokenizer's vocabulary (padding rows of the embedding table) carry no text, as in Hugging
// Face's decode.
#pragma once
#include "rollout/incremental_text.h"
#include "tokenizer/tokenizer.h"

namespace grpo::rollout {

// `tok` must outlive the returned function.
inline DecodeFn tokenizer_decode_fn(const Tokenizer& tok) {
  return [&tok](std::span<const int32_t> ids) {
    std::vector<int32_t> known;
    known.reserve(ids.size());
    for (int32_t id : ids)
      if (id >= 0 && id < tok.vocab_size()) known.push_back(id);
    return tok.decode(known, true);
  };
}

}  // namespace grpo::rollout
