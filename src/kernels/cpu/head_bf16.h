// Private to the head kernels (convert, lm_head): single-threaded f32 -> bf16 conversion of one row, the
// building block of ops::f32_to_bf16. Uses AVX-512 BF16 when the CPU has it, the scalar rounding of
// core/dtype.h otherwise; both give the same bits (round to nearest even, NaN kept quiet, denormals kept).
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace grpo::ops::detail {

void f32_to_bf16_row(bf16_t* dst, const float* src, int64_t n);

}  // namespace grpo::ops::detail
