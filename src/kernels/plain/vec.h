// Row primitives of the plain kernel set: one elementary op over n contiguous floats, vectorised for
// AVX-512 or AVX2 (chosen at run time, like ATen's CPU kernel dispatch). Single-threaded: the plain
// kernels split their passes over rows with OpenMP and call these on each row. out may alias any input.
#pragma once
#include <cstdint>

namespace grpo::plain::vec {

void add(float* out, const float* a, const float* b, int64_t n);  // out = a + b
void sub(float* out, const float* a, const float* b, int64_t n);  // out = a - b
void mul(float* out, const float* a, const float* b, int64_t n);  // out = a * b
void add_scalar(float* out, const float* a, float s, int64_t n);  // out = a + s
void mul_scalar(float* out, const float* a, float s, int64_t n);  // out = a * s
void square(float* out, const float* a, int64_t n);               // out = a * a
void exp(float* out, const float* a, int64_t n);                  // out = e^a (exactly 0 for -inf)
void sigmoid(float* out, const float* a, int64_t n);              // out = 1 / (1 + e^-a)
// out = g * s * (1 + x * (1 - s)) with s = sigmoid(x) given: ATen's silu_backward kernel.
void silu_backward(float* out, const float* g, const float* x, const float* s, int64_t n);
void fill(float* out, float value, int64_t n);
float sum(const float* a, int64_t n);
float dot(const float* a, const float* b, int64_t n);  // sum a * b
float max(const float* a, int64_t n);  // -inf for n = 0
// out = softmax(a); returns log-sum-exp(a). Entries of -inf get probability 0.
float softmax(float* out, const float* a, int64_t n);
// out = a - logsumexp(a); returns log-sum-exp(a).
float log_softmax(float* out, const float* a, int64_t n);

}  // namespace grpo::plain::vec
