// The instruction-set bodies of ops::gemv (kernels/paged_ops.h), chosen in gemv.cpp: AVX-512 (gemv.cpp)
// and AVX2 + FMA (gemv_avx2.cpp); the AMX tiles have their own header (gemv_amx.h). Sizes are checked by the caller; x_scratch holds B x K bf16 values.
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace grpo::ops::cpu_gemv {

// y [B, N] = x [B, K] . W [N, K]^T, W f32 or bf16 (then x is rounded to bf16 first, into x_scratch).
// The vector body of the level in use (AVX-512 or AVX2), never the AMX tiles: ops::gemv below amx, or
// where the tiles failed their self-check, and the benchmarks' comparison with the tiles at amx.
void gemv_vector(float* y, const float* x, bf16_t* x_scratch, const void* W, DType w_dtype, int64_t B, int64_t N,
                 int64_t K);
// The AVX2 body (gemv_avx2.cpp).
void gemv_avx2(float* y, const float* x, bf16_t* x_scratch, const void* W, DType w_dtype, int64_t B, int64_t N,
               int64_t K);

}  // namespace grpo::ops::cpu_gemv
