// Overflow-checked integer arithmetic for sizes (bytes, blocks, tokens) computed from user-given numbers:
// a product or sum that does not fit int64 is a grpo::Error naming what was being computed, never
// undefined behaviour or a silently wrapped size.
#pragma once
#include <cstdint>

#include "core/error.h"

namespace grpo {

// a * b, or an Error "[component] <what>: a x b overflows int64" (what names the quantity, e.g.
// "[rollout] KV blocks of max_num_seqs sequences").
inline int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) fail(what, ": ", a, " x ", b, " overflows a 64-bit integer");
  return r;
}

inline int64_t checked_add(int64_t a, int64_t b, const char* what) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) fail(what, ": ", a, " + ", b, " overflows a 64-bit integer");
  return r;
}

}  // namespace grpo
