// SwiGLU row kernels written against the vector type V (see nn_simd.h). No include guard on purpose:
// swiglu.cpp includes this body once per instruction set, inside a namespace that defines V.

// silu(g) * u of one vector.
inline typename V::reg swiglu_vec(typename V::reg gv, typename V::reg uv) {
  const typename V::reg one = V::set1(1.0f);
  const typename V::reg sig = V::div(one, V::add(one, V::exp(V::sub(V::zero(), gv))));
  return V::mul(V::mul(gv, sig), uv);
}

// out [F] = silu(g) * u for one token; g, u [F] (the two halves of its gu row). Whole vectors with plain
// loads and stores, masked ones only for the tail (AVX2 masked stores are microcoded on AMD: 10x slower).
inline void swiglu_forward_row(float* out, const float* g, const float* u, int64_t F) {
  int64_t i = 0;
  for (; i + V::W <= F; i += V::W) V::store(out + i, swiglu_vec(V::load(g + i), V::load(u + i)));
  if (i < F) V::store_n(out + i, swiglu_vec(V::load_n(g + i, F - i), V::load_n(u + i, F - i)), F - i);
}

// dg = dout u s (1 + g (1 - s)), du = dout g s with s = sigmoid(g); dg, du [F] (the halves of a dgu row).
inline void swiglu_backward_row(float* dg, float* du, const float* dout, const float* g, const float* u, int64_t F) {
  const typename V::reg one = V::set1(1.0f);
  for (int64_t i = 0; i < F; i += V::W) {
    const int64_t n = F - i < V::W ? F - i : V::W;
    const typename V::reg gv = V::load_n(g + i, n), uv = V::load_n(u + i, n), dv = V::load_n(dout + i, n);
    const typename V::reg sig = V::div(one, V::add(one, V::exp(V::sub(V::zero(), gv))));
    const typename V::reg dsilu = V::mul(sig, V::fmadd(gv, V::sub(one, sig), one));
    V::store_n(dg + i, V::mul(V::mul(dv, uv), dsilu), n);
    V::store_n(du + i, V::mul(V::mul(dv, gv), sig), n);
  }
}
