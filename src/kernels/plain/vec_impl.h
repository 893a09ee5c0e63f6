// Bodies of the plain row primitives (vec.h) written against the vector type V of kernels/cpu/nn_simd.h.
// No include guard on purpose: vec.cpp includes this once per instruction set, inside a namespace that
// defines V and under the matching target pragma. Each loop: whole vectors, then one masked tail.

inline typename V::reg vexp(typename V::reg x) { return V::exp2(V::mul(x, V::set1(cpu::kNnLog2e))); }

inline void add(float* out, const float* a, const float* b, int64_t n) {
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W) V::store(out + i, V::add(V::load(a + i), V::load(b + i)));
  if (i < n) V::store_n(out + i, V::add(V::load_n(a + i, n - i), V::load_n(b + i, n - i)), n - i);
}

inline void sub(float* out, const float* a, const float* b, int64_t n) {
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W) V::store(out + i, V::sub(V::load(a + i), V::load(b + i)));
  if (i < n) V::store_n(out + i, V::sub(V::load_n(a + i, n - i), V::load_n(b + i, n - i)), n - i);
}

inline void mul(float* out, const float* a, const float* b, int64_t n) {
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W) V::store(out + i, V::mul(V::load(a + i), V::load(b + i)));
  if (i < n) V::store_n(out + i, V::mul(V::load_n(a + i, n - i), V::load_n(b + i, n - i)), n - i);
}

inline void add_scalar(float* out, const float* a, float s, int64_t n) {
  const typename V::reg sv = V::set1(s);
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W) V::store(out + i, V::add(V::load(a + i), sv));
  if (i < n) V::store_n(out + i, V::add(V::load_n(a + i, n - i), sv), n - i);
}

inline void mul_scalar(float* out, const float* a, float s, int64_t n) {
  const typename V::reg sv = V::set1(s);
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W) V::store(out + i, V::mul(V::load(a + i), sv));
  if (i < n) V::store_n(out + i, V::mul(V::load_n(a + i, n - i), sv), n - i);
}

inline void square(float* out, const float* a, int64_t n) { mul(out, a, a, n); }

inline void exp(float* out, const float* a, int64_t n) {
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W) V::store(out + i, vexp(V::load(a + i)));
  if (i < n) V::store_n(out + i, vexp(V::load_n(a + i, n - i)), n - i);
}

inline typename V::reg vsigmoid(typename V::reg x) {
  const typename V::reg one = V::set1(1.0f);
  return V::div(one, V::add(one, vexp(V::sub(V::zero(), x))));
}

inline void sigmoid(float* out, const float* a, int64_t n) {
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W) V::store(out + i, vsigmoid(V::load(a + i)));
  if (i < n) V::store_n(out + i, vsigmoid(V::load_n(a + i, n - i)), n - i);
}

inline typename V::reg vsilu_backward(typename V::reg g, typename V::reg x, typename V::reg s) {
  const typename V::reg one = V::set1(1.0f);
  return V::mul(V::mul(g, s), V::fmadd(x, V::sub(one, s), one));
}

inline void silu_backward(float* out, const float* g, const float* x, const float* s, int64_t n) {
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W) V::store(out + i, vsilu_backward(V::load(g + i), V::load(x + i), V::load(s + i)));
  if (i < n) {
    const int64_t m = n - i;
    V::store_n(out + i, vsilu_backward(V::load_n(g + i, m), V::load_n(x + i, m), V::load_n(s + i, m)), m);
  }
}

inline void fill(float* out, float value, int64_t n) {
  const typename V::reg v = V::set1(value);
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W) V::store(out + i, v);
  if (i < n) V::store_n(out + i, v, n - i);
}

inline float sum(const float* a, int64_t n) {
  typename V::reg acc = V::zero();
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W) acc = V::add(acc, V::load(a + i));
  if (i < n) acc = V::add(acc, V::load_n(a + i, n - i));
  return V::reduce_add(acc);
}

inline float dot(const float* a, const float* b, int64_t n) {
  typename V::reg acc = V::zero();
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W) acc = V::fmadd(V::load(a + i), V::load(b + i), acc);
  if (i < n) acc = V::fmadd(V::load_n(a + i, n - i), V::load_n(b + i, n - i), acc);
  return V::reduce_add(acc);
}

inline float max(const float* a, int64_t n) {
  typename V::reg acc = V::set1(-INFINITY);
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W) acc = V::max(acc, V::load(a + i));
  float m = V::reduce_max(acc);
  for (; i < n; ++i) m = a[i] > m ? a[i] : m;
  return m;
}

// sum_i e^(a_i - m), storing the terms in out when out is not null.
inline float shifted_exp_sum(float* out, const float* a, float m, int64_t n) {
  const typename V::reg mv = V::set1(m);
  typename V::reg acc = V::zero();
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W) {
    const typename V::reg e = vexp(V::sub(V::load(a + i), mv));
    if (out) V::store(out + i, e);
    acc = V::add(acc, e);
  }
  float s = V::reduce_add(acc);
  if (i < n) {  // the masked-off lanes of the tail load are 0, whose e^(0 - m) must not enter the sum
    float tail[V::W];
    V::store(tail, vexp(V::sub(V::load_n(a + i, n - i), mv)));
    for (int64_t j = 0; j < n - i; ++j) {
      if (out) out[i + j] = tail[j];
      s += tail[j];
    }
  }
  return s;
}

inline float softmax(float* out, const float* a, int64_t n) {
  const float m = max(a, n);
  const float s = shifted_exp_sum(out, a, m, n);
  mul_scalar(out, out, 1.0f / s, n);
  return m + std::log(s);
}

inline float log_softmax(float* out, const float* a, int64_t n) {
  const float m = max(a, n);
  const float lse = m + std::log(shifted_exp_sum(nullptr, a, m, n));
  add_scalar(out, a, -lse, n);
  return lse;
}
