// Run-time dispatch of the plain row primitives (vec.h): vec_impl.h compiled once for AVX-512 and once for
// AVX2+FMA, each call going to the copy that the one ISA decision picks (cpu::nn_use_avx512(), as the fused kernels).
#include "kernels/plain/vec.h"

#include <cmath>
#include <cstdint>

#include "kernels/cpu/nn_simd.h"

namespace grpo::plain {
NN_BEGIN_AVX512
namespace vec_avx512 {
using V = cpu::Vec512;
#include "kernels/plain/vec_impl.h"
}  // namespace vec_avx512
NN_END_TARGET
NN_BEGIN_AVX2
namespace vec_avx2 {
using V = cpu::Vec256;
#include "kernels/plain/vec_impl.h"
}  // namespace vec_avx2
NN_END_TARGET
}  // namespace grpo::plain

namespace grpo::plain::vec {
#define PLAIN_VEC_DISPATCH(name, ...) \
  (cpu::nn_use_avx512() ? vec_avx512::name(__VA_ARGS__) : vec_avx2::name(__VA_ARGS__))

void add(float* out, const float* a, const float* b, int64_t n) { PLAIN_VEC_DISPATCH(add, out, a, b, n); }
void sub(float* out, const float* a, const float* b, int64_t n) { PLAIN_VEC_DISPATCH(sub, out, a, b, n); }
void mul(float* out, const float* a, const float* b, int64_t n) { PLAIN_VEC_DISPATCH(mul, out, a, b, n); }
void add_scalar(float* out, const float* a, float s, int64_t n) { PLAIN_VEC_DISPATCH(add_scalar, out, a, s, n); }
void mul_scalar(float* out, const float* a, float s, int64_t n) { PLAIN_VEC_DISPATCH(mul_scalar, out, a, s, n); }
void square(float* out, const float* a, int64_t n) { PLAIN_VEC_DISPATCH(square, out, a, n); }
void exp(float* out, const float* a, int64_t n) { PLAIN_VEC_DISPATCH(exp, out, a, n); }
void sigmoid(float* out, const float* a, int64_t n) { PLAIN_VEC_DISPATCH(sigmoid, out, a, n); }
void silu_backward(float* out, const float* g, const float* x, const float* s, int64_t n) {
  PLAIN_VEC_DISPATCH(silu_backward, out, g, x, s, n);
}
void fill(float* out, float value, int64_t n) { PLAIN_VEC_DISPATCH(fill, out, value, n); }
float sum(const float* a, int64_t n) { return PLAIN_VEC_DISPATCH(sum, a, n); }
float dot(const float* a, const float* b, int64_t n) { return PLAIN_VEC_DISPATCH(dot, a, b, n); }
float max(const float* a, int64_t n) { return PLAIN_VEC_DISPATCH(max, a, n); }
float softmax(float* out, const float* a, int64_t n) { return PLAIN_VEC_DISPATCH(softmax, out, a, n); }
float log_softmax(float* out, const float* a, int64_t n) { return PLAIN_VEC_DISPATCH(log_softmax, out, a, n); }

#undef PLAIN_VEC_DISPATCH

}  // namespace grpo::plain::vec
