// Private to the CPU kernels (convert, lm_head, gemm): single-threaded f32 <-> bf16 conversion of one row,
// the building blocks of ops::f32_to_bf16 / ops::bf16_to_f32. The body is the one ISA decision's
// (vcvtneps2bf16 at avx512_bf16, 8-lane integer rounding below); every body gives the bits of core/dtype.h
// (round to nearest even, NaN kept quiet, denormals kept). Take the function outside parallel regions (the
// decision may throw on an unusable CPU), call it inside.
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace grpo::ops::detail {

using F32ToBf16Row = void (*)(bf16_t* dst, const float* src, int64_t n);
using Bf16ToF32Row = void (*)(float* dst, const bf16_t* src, int64_t n);

F32ToBf16Row f32_to_bf16_row();
Bf16ToF32Row bf16_to_f32_row();

}  // namespace grpo::ops::detail
