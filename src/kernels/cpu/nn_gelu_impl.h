// GELU row kernels written against the vector type V (see nn_simd.h), plus two per-ISA helpers the including
// namespace defines: vabs(x) = |x| and vselect_ge0(x, a, b) = x >= 0 ? a : b lane by lane. No include guard on
// purpose: gelu.cpp includes this body once per instruction set, inside a namespace that defines V.
//
// tanh(u) = 1 - 2 / (1 + e^(2u)) with the vector exp (saturates to +-1 as exp clamps); erf(z) for z >= 0 is
// 1 - q(z) with q(z) = P(t) e^(-z^2), t = 1 / (1 + p z) (Abramowitz & Stegun 7.1.26, |error| <= 1.5e-7), odd
// for z < 0. The derivatives are the exact ones of the exact functions (not of the approximations).

using Reg = typename V::reg;

inline constexpr float kSqrt2OverPi = 0.7978845608028654f;  // sqrt(2 / pi)
inline constexpr float kGeluCubic = 0.044715f;
inline constexpr float kInvSqrt2 = 0.7071067811865476f;
inline constexpr float kInvSqrt2Pi = 0.3989422804014327f;  // 1 / sqrt(2 pi)

inline Reg vtanh(Reg u) {
  const Reg one = V::set1(1.0f);
  return V::sub(one, V::div(V::set1(2.0f), V::add(one, V::exp(V::add(u, u)))));
}

// 1 + erf(z), which the exact GELU needs, without cancellation for negative z.
inline Reg one_plus_erf(Reg z) {
  const Reg az = vabs(z);
  const Reg t = V::div(V::set1(1.0f), V::fmadd(V::set1(0.3275911f), az, V::set1(1.0f)));
  Reg p = V::set1(1.061405429f);
  p = V::fmadd(p, t, V::set1(-1.453152027f));
  p = V::fmadd(p, t, V::set1(1.421413741f));
  p = V::fmadd(p, t, V::set1(-0.284496736f));
  p = V::fmadd(p, t, V::set1(0.254829592f));
  const Reg q = V::mul(V::mul(p, t), V::exp(V::sub(V::zero(), V::mul(az, az))));  // 1 - erf(|z|)
  return vselect_ge0(z, V::sub(V::set1(2.0f), q), q);
}

template <Gelu kKind>
inline Reg gelu(Reg x) {
  const Reg half_x = V::mul(V::set1(0.5f), x);
  if constexpr (kKind == Gelu::Tanh) {
    const Reg x3 = V::mul(V::mul(x, x), x);
    const Reg u = V::mul(V::set1(kSqrt2OverPi), V::fmadd(V::set1(kGeluCubic), x3, x));
    return V::fmadd(half_x, vtanh(u), half_x);
  } else {
    return V::mul(half_x, one_plus_erf(V::mul(x, V::set1(kInvSqrt2))));
  }
}

// d gelu / dx.
template <Gelu kKind>
inline Reg gelu_grad(Reg x) {
  const Reg half = V::set1(0.5f), one = V::set1(1.0f);
  if constexpr (kKind == Gelu::Tanh) {
    const Reg x2 = V::mul(x, x);
    const Reg u = V::mul(V::set1(kSqrt2OverPi), V::fmadd(V::set1(kGeluCubic), V::mul(x2, x), x));
    const Reg t = vtanh(u);
    const Reg du = V::mul(V::set1(kSqrt2OverPi), V::fmadd(V::set1(3.0f * kGeluCubic), x2, one));
    // 0.5 (1 + t) + 0.5 x (1 - t^2) du
    return V::fmadd(V::mul(V::mul(half, x), V::fnmadd(t, t, one)), du, V::mul(half, V::add(one, t)));
  } else {
    const Reg pdf = V::mul(V::set1(kInvSqrt2Pi), V::exp(V::mul(V::set1(-0.5f), V::mul(x, x))));
    return V::fmadd(x, pdf, V::mul(half, one_plus_erf(V::mul(x, V::set1(kInvSqrt2)))));
  }
}

// One row: x [F] += b (b may be null), y [F] = gelu(x). Whole vectors with plain loads and stores, the tail
// masked (masked stores are slow on some CPUs: AMD's vmaskmovps).
template <Gelu kKind>
inline void bias_gelu_row(float* y, float* x, const float* b, int64_t F) {
  int64_t i = 0;
  for (; i + V::W <= F; i += V::W) {
    Reg xv = V::load(x + i);
    if (b) {
      xv = V::add(xv, V::load(b + i));
      V::store(x + i, xv);
    }
    V::store(y + i, gelu<kKind>(xv));
  }
  if (i == F) return;
  const int64_t n = F - i;
  Reg xv = V::load_n(x + i, n);
  if (b) {
    xv = V::add(xv, V::load_n(b + i, n));
    V::store_n(x + i, xv, n);
  }
  V::store_n(y + i, gelu<kKind>(xv), n);
}

// Columns [c0, c0 + width) of rows [0, N): dx = dy gelu'(x) (row stride F); db[c] += the column sums in row
// order when db is not null. width <= kGeluColumns.
inline constexpr int64_t kGeluColumns = 4 * 16;
template <Gelu kKind>
inline void gelu_backward_columns(float* dx, float* db, const float* dy, const float* x, int64_t N, int64_t F,
                                  int64_t c0, int64_t width) {
  constexpr int kRegs = static_cast<int>(kGeluColumns / V::W);
  Reg acc[kRegs];
  for (int r = 0; r < kRegs; ++r) acc[r] = V::zero();
  const int full = static_cast<int>(width / V::W);  // whole vectors; the rest of the block is masked
  for (int64_t row = 0; row < N; ++row) {
    const int64_t off = row * F + c0;
    for (int r = 0; r < full; ++r) {
      const int64_t c = r * V::W;
      const Reg g = V::mul(V::load(dy + off + c), gelu_grad<kKind>(V::load(x + off + c)));
      V::store(dx + off + c, g);
      acc[r] = V::add(acc[r], g);
    }
    if (full < kRegs && full * V::W < width) {
      const int64_t c = full * V::W, n = width - c;
      const Reg g = V::mul(V::load_n(dy + off + c, n), gelu_grad<kKind>(V::load_n(x + off + c, n)));
      V::store_n(dx + off + c, g, n);
      acc[full] = V::add(acc[full], g);
    }
  }
  if (!db) return;
  for (int r = 0; r < kRegs; ++r) {
    const int64_t c = r * V::W;
    if (c >= width) break;
    const int64_t n = width - c < V::W ? width - c : V::W;
    V::store_n(db + c0 + c, V::add(V::load_n(db + c0 + c, n), acc[r]), n);
  }
}
