// Overflow-checked size arithmetic: products and sums of counts, lengths and byte sizes that come from
// user input (config keys, file headers). On overflow they throw grpo::Error naming what was computed
// instead of wrapping around (undefined behaviour for signed integers).
//
//   const int64_t bytes = checked_mul(checked_mul(seqs, tokens, "KV tokens"), bytes_per_token, "KV bytes");
#pragma once
#include <cstdint>
#include <string_view>

#include "core/error.h"

namespace grpo {

inline int64_t checked_mul(int64_t a, int64_t b, std::string_view what) {
  int64_t out;
  if (__builtin_mul_overflow(a, b, &out)) fail(what, ": ", a, " x ", b, " does not fit a 64-bit integer");
  return out;
}

inline int64_t checked_add(int64_t a, int64_t b, std::string_view what) {
  int64_t out;
  if (__builtin_add_overflow(a, b, &out)) fail(what, ": ", a, " + ", b, " does not fit a 64-bit integer");
  return out;
}

}  // namespace grpo
