// Private to gemm.cpp and its tests: a look at the GEMM shape cache (how many primitives it holds, and a
// smaller bound so that a test can make it overflow with a few shapes instead of a thousand).
#pragma once
#include <cstddef>

namespace grpo::ops::detail {

size_t gemm_cache_size();
size_t gemm_cache_capacity();
void set_gemm_cache_capacity(size_t capacity);  // >= 1

}  // namespace grpo::ops::detail
