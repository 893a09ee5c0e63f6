// Tests of the vision-tower kernels of vision_ops.h against the double reference (kernels/ref/ref_vision.h),
// on both SIMD paths and odd sizes: LayerNorm, GELU (tanh and erf) fused with the bias, bias add / grad,
// per-row rotary (2D vision rotary and M-RoPE) and the M-RoPE gather, non-causal attention within segments,
// and the bilinear position embedding. Every backward is checked against central finite differences of the
// reference; guard bytes after every output; identical bits for 1 and 2 threads; bad inputs are errors.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "kernels/ops.h"
#include "kernels/ref/ref_vision.h"
#include "kernels/vision_ops.h"
#include "nn_test_util.h"

using namespace grpo;
using namespace nn_test;

namespace {

std::string trace(grpo::Isa isa, const std::string& what) { return std::string(grpo::isa_name(isa)) + " " + what; }

// Runs f with 1 and with 2 threads and expects identical outputs.
template <typename F>
void expect_thread_invariant(F f) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const auto one = f();
  omp_set_num_threads(2);
  const auto two = f();
  omp_set_num_threads(saved);
  EXPECT_EQ(one, two);
}

}  // namespace

TEST(VisionLayerNorm, MatchesReferenceAndFiniteDifferences) {
  for (auto isa : available_isas())
    for (auto [N, C] : {std::pair<int64_t, int64_t>{5, 37}, {70, 64}, {3, 1152}}) {
      ForceIsa force(isa);
      SCOPED_TRACE(trace(isa, "N=" + std::to_string(N) + " C=" + std::to_string(C)));
      auto x = randn(N * C, 1, 2.0f);
      for (int64_t i = 0; i < N * C; ++i) x[i] += 3.0f;  // a mean far from 0: the centred variance matters
      const auto w = randn(C, 2), b = randn(C, 3), dy = randn(N * C, 4), dw0 = randn(C, 5), db0 = randn(C, 6);
      Guarded y(N * C), mean(N), rstd(N), dx(N * C), dw(dw0), db(db0);
      Guarded ws(ops::layernorm_backward_ws_floats(N, C));
      ops::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C, 1e-6f);
      ops::layernorm_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), mean.data(), rstd.data(),
                              N, C, ws.data());
      auto xd = to_double(x);
      const auto wd = to_double(w), bd = to_double(b), dyd = to_double(dy);
      std::vector<double> yr(N * C), mr(N), rr(N), dxr(N * C), dwr = to_double(dw0), dbr = to_double(db0);
      ref::layernorm_forward(yr.data(), mr.data(), rr.data(), xd.data(), wd.data(), bd.data(), N, C, 1e-6);
      ref::layernorm_backward(dxr.data(), dwr.data(), dbr.data(), dyd.data(), xd.data(), wd.data(), mr.data(),
                              rr.data(), N, C);
      EXPECT_LT(max_rel_err(y.vec(), yr), 2e-6);
      EXPECT_LT(max_rel_err(rstd.vec(), rr), 2e-6);
      EXPECT_LT(max_rel_err(dx.vec(), dxr), 1e-5);
      EXPECT_LT(max_rel_err(dw.vec(), dwr), 1e-5);
      EXPECT_LT(max_rel_err(db.vec(), dbr), 1e-5);
      EXPECT_TRUE(y.guards_intact() && mean.guards_intact() && rstd.guards_intact() && dx.guards_intact() &&
                  dw.guards_intact() && db.guards_intact() && ws.guards_intact());
      if (C > 100) continue;
      // d/d(x, w, b) sum(dy * layernorm(x)) by central differences of the double reference.
      auto wv = wd, bv = bd;
      auto loss = [&] {
        std::vector<double> yy(N * C), m(N), r(N);
        ref::layernorm_forward(yy.data(), m.data(), r.data(), xd.data(), wv.data(), bv.data(), N, C, 1e-6);
        double l = 0;
        for (int64_t i = 0; i < N * C; ++i) l += dyd[i] * yy[i];
        return l;
      };
      std::vector<float> gw(C), gb(C);
      for (int64_t c = 0; c < C; ++c) {
        gw[c] = dw.data()[c] - dw0[c];
        gb[c] = db.data()[c] - db0[c];
      }
      expect_matches_finite_differences(loss, xd, dx.vec(), 150, 1e-4, "layernorm dx");
      expect_matches_finite_differences(loss, wv, gw, 40, 1e-4, "layernorm dw");
      expect_matches_finite_differences(loss, bv, gb, 40, 1e-4, "layernorm db");
    }
  expect_thread_invariant([] {
    const int64_t N = 300, C = 200;
    const auto x = randn(N * C, 7), w = randn(C, 8), b = randn(C, 9), dy = randn(N * C, 10);
    std::vector<float> y(N * C), m(N), r(N), dx(N * C), dw(C, 0.0f), db(C, 0.0f), ws(ops::layernorm_backward_ws_floats(N, C));
    ops::layernorm_forward(y.data(), m.data(), r.data(), x.data(), w.data(), b.data(), N, C, 1e-6f);
    ops::layernorm_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), m.data(), r.data(), N, C,
                            ws.data());
    return std::vector<std::vector<float>>{y, dx, dw, db};
  });
}

TEST(VisionGelu, BothFormsMatchReferenceAndFiniteDifferences) {
  for (auto isa : available_isas())
    for (ops::Gelu kind : {ops::Gelu::Tanh, ops::Gelu::Erf})
      for (auto [N, F] : {std::pair<int64_t, int64_t>{3, 37}, {9, 200}}) {
        ForceIsa force(isa);
        SCOPED_TRACE(trace(isa, std::string(kind == ops::Gelu::Tanh ? "tanh" : "erf") + " F=" + std::to_string(F)));
        const auto x0 = randn(N * F, 11, 3.0f), b = randn(F, 12), dy = randn(N * F, 13), db0 = randn(F, 14);
        Guarded x(x0), y(N * F), dx(N * F), db(db0);
        ops::bias_gelu_forward(y.data(), x.data(), b.data(), N, F, kind);
        ops::gelu_backward(dx.data(), db.data(), dy.data(), x.data(), N, F, kind);
        auto xd = to_double(x0), bd = to_double(b);
        const auto dyd = to_double(dy);
        std::vector<double> yr(N * F), xr = xd, dxr(N * F), dbr = to_double(db0);
        ref::bias_gelu_forward(yr.data(), xr.data(), bd.data(), N, F, kind);
        ref::gelu_backward(dxr.data(), dbr.data(), dyd.data(), xr.data(), N, F, kind);
        // x + b is one float rounding; tanh through exp and erf through A&S 7.1.26 are within ~2e-7 absolute.
        EXPECT_LT(max_rel_err(x.vec(), xr), 1e-7);
        EXPECT_LT(max_rel_err(y.vec(), yr), 1e-6);
        EXPECT_LT(max_rel_err(dx.vec(), dxr), 2e-6);
        EXPECT_LT(max_rel_err(db.vec(), dbr), 2e-6);
        EXPECT_TRUE(x.guards_intact() && y.guards_intact() && dx.guards_intact() && db.guards_intact());
        // d/d(x, b) sum(dy * gelu(x + b)) by central differences.
        auto loss = [&] {
          std::vector<double> yy(N * F), xx = xd;
          ref::bias_gelu_forward(yy.data(), xx.data(), bd.data(), N, F, kind);
          double l = 0;
          for (int64_t i = 0; i < N * F; ++i) l += dyd[i] * yy[i];
          return l;
        };
        std::vector<float> gb(F);
        for (int64_t c = 0; c < F; ++c) gb[c] = db.data()[c] - db0[c];
        expect_matches_finite_differences(loss, xd, dx.vec(), 100, 1e-5, "gelu dx");
        expect_matches_finite_differences(loss, bd, gb, 50, 1e-5, "gelu db");
      }
}

TEST(VisionGelu, TheTwoFormsDifferAndSaturate) {
  // gelu_tanh and exact gelu differ by up to 4.7e-4 (at x = 2.7; 4.1e-4 at -3): the reference case tells them apart.
  const std::vector<float> x0{-3.0f, -0.5f, 0.0f, 0.5f, 2.0f, -30.0f, 30.0f, -7.0f};
  std::vector<float> t(x0.size()), e(x0.size()), xt = x0, xe = x0;
  ops::bias_gelu_forward(t.data(), xt.data(), nullptr, 1, 8, ops::Gelu::Tanh);
  ops::bias_gelu_forward(e.data(), xe.data(), nullptr, 1, 8, ops::Gelu::Erf);
  EXPECT_NEAR(t[0] - e[0], 4.123e-4, 2e-6);
  EXPECT_EQ(t[2], 0.0f);
  EXPECT_EQ(e[2], 0.0f);
  EXPECT_EQ(t[6], 30.0f);
  EXPECT_EQ(e[6], 30.0f);
  EXPECT_NEAR(t[5], 0.0f, 1e-30);
  EXPECT_NEAR(e[7], 0.0f, 1e-10);
  EXPECT_EQ(xt, x0);  // no bias: the input is left as it is
}

TEST(VisionBias, AddAndGradMatchReference) {
  for (auto isa : available_isas()) {
    ForceIsa force(isa);
    SCOPED_TRACE(isa_name(isa));
    const int64_t N = 77, F = 131;
    const auto y0 = randn(N * F, 15), b = randn(F, 16), db0 = randn(F, 17);
    Guarded y(y0), db(db0);
    ops::bias_add(y.data(), b.data(), N, F);
    ops::bias_grad(db.data(), y0.data(), N, F);
    auto yr = to_double(y0), dbr = to_double(db0);
    ref::bias_add(yr.data(), to_double(b).data(), N, F);
    ref::bias_grad(dbr.data(), to_double(y0).data(), N, F);
    EXPECT_LT(max_rel_err(y.vec(), yr), 1e-7);
    EXPECT_LT(max_rel_err(db.vec(), dbr), 1e-5);
    EXPECT_TRUE(y.guards_intact() && db.guards_intact());
  }
  expect_thread_invariant([] {
    const int64_t N = 1000, F = 300;
    const auto dy = randn(N * F, 18);
    std::vector<float> db(F, 0.0f);
    ops::bias_grad(db.data(), dy.data(), N, F);
    return db;
  });
}

TEST(VisionRopeRows, MatchesReferenceFiniteDifferencesAndPlainRope) {
  for (auto isa : available_isas())
    for (auto [T, nh, D] : {std::tuple<int64_t, int64_t, int64_t>{7, 3, 72}, {1, 2, 8}, {20, 4, 128}}) {
      ForceIsa force(isa);
      SCOPED_TRACE(trace(isa, "D=" + std::to_string(D)));
      const int64_t half = D / 2;
      std::vector<float> cos(T * half), sin(T * half);
      for (int64_t i = 0; i < T * half; ++i) {
        cos[i] = std::cos(0.37f * static_cast<float>(i));
        sin[i] = std::sin(0.37f * static_cast<float>(i));
      }
      const auto x0 = randn(T * nh * D, 19), dy = randn(T * nh * D, 20);
      Guarded x(x0), dx(dy);
      ops::rope_rows_forward(x.data(), cos.data(), sin.data(), T, nh, D);
      ops::rope_rows_backward(dx.data(), cos.data(), sin.data(), T, nh, D);
      auto xr = to_double(x0), dxr = to_double(dy);
      const auto cd = to_double(cos), sd = to_double(sin);
      ref::rope_rows(xr.data(), cd.data(), sd.data(), T, nh, D, false);
      ref::rope_rows(dxr.data(), cd.data(), sd.data(), T, nh, D, true);
      EXPECT_LT(max_rel_err(x.vec(), xr), 1e-6);
      EXPECT_LT(max_rel_err(dx.vec(), dxr), 1e-6);
      EXPECT_TRUE(x.guards_intact() && dx.guards_intact());
      auto xd = to_double(x0);
      const auto dyd = to_double(dy);
      auto loss = [&] {
        auto y = xd;
        ref::rope_rows(y.data(), cd.data(), sd.data(), T, nh, D, false);
        double l = 0;
        for (size_t i = 0; i < y.size(); ++i) l += dyd[i] * y[i];
        return l;
      };
      expect_matches_finite_differences(loss, xd, dx.vec(), 100, 1e-5, "rope_rows dx");
      // Row t of the table at position pos[t]: the same bits as ops::rope_forward with the plain table.
      std::vector<int32_t> pos(T);
      std::iota(pos.begin(), pos.end(), 0);
      auto plain = x0;
      ops::rope_forward(plain.data(), pos.data(), cos.data(), sin.data(), T, nh, D);
      EXPECT_EQ(plain, x.vec());
    }
}

TEST(VisionMrope, GatherFollowsTheAxisOfEachFrequency) {
  const int64_t T = 5, P = 9, half = 6;
  std::vector<float> ct(P * half), st(P * half);
  for (int64_t i = 0; i < P * half; ++i) {
    ct[i] = static_cast<float>(i);
    st[i] = -static_cast<float>(i);
  }
  const std::vector<uint8_t> axis{0, 1, 2, 0, 1, 0};
  std::vector<int32_t> pos3(3 * T);
  for (int64_t t = 0; t < T; ++t) {
    pos3[t] = static_cast<int32_t>(t);
    pos3[T + t] = static_cast<int32_t>(8 - t);
    pos3[2 * T + t] = static_cast<int32_t>((t * 3) % P);
  }
  Guarded c(T * half), s(T * half);
  ops::mrope_tables(c.data(), s.data(), pos3.data(), axis.data(), ct.data(), st.data(), T, P, half);
  std::vector<double> cr(T * half), sr(T * half);
  ref::mrope_tables(cr.data(), sr.data(), pos3.data(), axis.data(), to_double(ct).data(), to_double(st).data(), T, half);
  EXPECT_EQ(max_rel_err(c.vec(), cr), 0.0);
  EXPECT_EQ(max_rel_err(s.vec(), sr), 0.0);
  EXPECT_EQ(c.data()[1 * half + 1], ct[7 * half + 1]);  // token 1, frequency 1 (height): position 7
  EXPECT_TRUE(c.guards_intact() && s.guards_intact());
  pos3[2 * T + 1] = static_cast<int32_t>(P);
  EXPECT_THROW(ops::mrope_tables(c.data(), s.data(), pos3.data(), axis.data(), ct.data(), st.data(), T, P, half), Error);
}

namespace {

struct SegCase {
  std::vector<int32_t> lens;
  int64_t H, K, D;
  int64_t T() const { return std::accumulate(lens.begin(), lens.end(), int64_t{0}); }
  std::vector<int32_t> cu() const {
    std::vector<int32_t> c{0};
    for (int32_t l : lens) c.push_back(c.back() + l);
    return c;
  }
  float scale() const { return 1.0f / std::sqrt(static_cast<float>(D)); }
};

struct SegRun {
  std::vector<float> o, lse, dq, dk, dv;
  bool operator==(const SegRun& r) const { return o == r.o && lse == r.lse && dq == r.dq && dk == r.dk && dv == r.dv; }
};

SegRun run_segments(const SegCase& c, const std::vector<float>& q, const std::vector<float>& k,
                    const std::vector<float>& v, const std::vector<float>& dout) {
  const int64_t T = c.T(), H = c.H, K = c.K, D = c.D, S = static_cast<int64_t>(c.lens.size());
  const auto cu = c.cu();
  Guarded o(T * H * D), lse(T * H), dq(T * H * D), dk(T * K * D), dv(T * K * D), ws(ops::attention_ws_floats(T, H, K, D));
  ops::bidirectional_attention_forward(o.data(), lse.data(), q.data(), k.data(), v.data(), cu.data(), S, T, H, K, D,
                                       c.scale(), ws.data());
  ops::bidirectional_attention_backward(dq.data(), dk.data(), dv.data(), dout.data(), q.data(), k.data(), v.data(),
                                        o.data(), lse.data(), cu.data(), S, T, H, K, D, c.scale(), ws.data());
  EXPECT_TRUE(o.guards_intact() && lse.guards_intact() && dq.guards_intact() && dk.guards_intact() &&
              dv.guards_intact() && ws.guards_intact());
  return {o.vec(), lse.vec(), dq.vec(), dk.vec(), dv.vec()};
}

}  // namespace

TEST(VisionAttention, MatchesReferenceAndFiniteDifferences) {
  const std::vector<SegCase> cases = {
      {{24, 4, 8}, 2, 2, 8},     // the reference model's pictures (4x6, 2x2, 2x4 patches), head dim 8
      {{70, 1, 131}, 3, 3, 72},  // Qwen3-VL-8B head dim 72 (padded to 128), tiles crossing, a 1-patch picture
      {{64, 65}, 4, 2, 64},      // exact tile and tile + 1, GQA (the kernel allows it)
  };
  for (auto isa : available_isas())
    for (const SegCase& c : cases) {
      ForceIsa force(isa);
      SCOPED_TRACE(trace(isa, "T=" + std::to_string(c.T()) + " D=" + std::to_string(c.D)));
      const int64_t T = c.T(), H = c.H, K = c.K, D = c.D, S = static_cast<int64_t>(c.lens.size());
      const auto q = randn(T * H * D, 21, 1.5f), k = randn(T * K * D, 22, 1.5f), v = randn(T * K * D, 23),
                 dout = randn(T * H * D, 24);
      const SegRun got = run_segments(c, q, k, v, dout);
      const auto cu = c.cu();
      auto qd = to_double(q), kd = to_double(k), vd = to_double(v);
      const auto dd = to_double(dout);
      std::vector<double> o(T * H * D), lse(T * H), dq(T * H * D), dk(T * K * D), dv(T * K * D);
      ref::bidirectional_attention_forward(o.data(), lse.data(), qd.data(), kd.data(), vd.data(), cu.data(), S, H, K,
                                           D, double{c.scale()});
      ref::bidirectional_attention_backward(dq.data(), dk.data(), dv.data(), dd.data(), qd.data(), kd.data(), vd.data(),
                                            cu.data(), S, T, H, K, D, double{c.scale()});
      EXPECT_LT(max_rel_err(got.o, o), 1e-5);
      EXPECT_LT(max_rel_err(got.lse, lse), 1e-5);
      EXPECT_LT(max_rel_err(got.dq.data(), dq.data(), T * H * D, 1.0), 3e-5);
      EXPECT_LT(max_rel_err(got.dk.data(), dk.data(), T * K * D, 1.0), 3e-5);
      EXPECT_LT(max_rel_err(got.dv, dv), 3e-5);
      if (T > 40) continue;
      auto loss = [&] {
        std::vector<double> oo(T * H * D), ll(T * H);
        ref::bidirectional_attention_forward(oo.data(), ll.data(), qd.data(), kd.data(), vd.data(), cu.data(), S, H, K,
                                             D, double{c.scale()});
        double l = 0;
        for (int64_t i = 0; i < T * H * D; ++i) l += dd[i] * oo[i];
        return l;
      };
      expect_matches_finite_differences(loss, qd, got.dq, 60, 5e-5, "dq");
      expect_matches_finite_differences(loss, kd, got.dk, 60, 5e-5, "dk");
      expect_matches_finite_differences(loss, vd, got.dv, 60, 5e-5, "dv");
    }
}

// The first patch of a picture sees its last one (not causal), and nothing outside its picture.
TEST(VisionAttention, SeesTheWholeSegmentAndNothingElse) {
  const SegCase c{{9, 100, 20}, 2, 2, 72};
  const int64_t H = c.H, K = c.K, D = c.D, T = c.T();
  const auto cu = c.cu();
  const auto q = randn(T * H * D, 31, 1.5f), k = randn(T * K * D, 32, 1.5f), v = randn(T * K * D, 33),
             dout = randn(T * H * D, 34);
  const SegRun base = run_segments(c, q, k, v, dout);
  auto v2 = v;
  const int64_t last = cu[2] - 1;  // the last patch of segment 1
  for (int64_t d = 0; d < K * D; ++d) v2[last * K * D + d] += 4.0f;
  const SegRun run = run_segments(c, q, k, v2, dout);
  for (int64_t row = 0; row < T; ++row) {
    const bool inside = row >= cu[1] && row < cu[2];
    bool same = true;
    for (int64_t i = row * H * D; i < (row + 1) * H * D; ++i) same = same && run.o[i] == base.o[i];
    EXPECT_EQ(same, !inside) << "row " << row;
  }
  expect_thread_invariant([&] { return run_segments(c, q, k, v, dout); });
}

TEST(VisionBilinear, ForwardBackwardMatchReferenceAndFiniteDifferences) {
  const int64_t P = 25, N = 36;
  std::vector<int32_t> idx(4 * N);
  std::vector<float> w(4 * N);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < 4; ++k) {
      idx[k * N + n] = static_cast<int32_t>((n * 7 + k * 5) % P);  // repeated rows: the backward sums them
      w[k * N + n] = 0.1f + 0.2f * static_cast<float>(k) + 0.01f * static_cast<float>(n % 5);
    }
  for (auto isa : available_isas())
    for (int64_t C : {int64_t{16}, int64_t{1152}}) {
      ForceIsa force(isa);
      SCOPED_TRACE(trace(isa, "C=" + std::to_string(C)));
      const auto table = randn(P * C, 41), dout = randn(N * C, 42), dt0 = randn(P * C, 43);
      Guarded out(N * C), dt(dt0);
      ops::bilinear_embed_forward(out.data(), idx.data(), w.data(), table.data(), N, P, C);
      ops::bilinear_embed_backward(dt.data(), dout.data(), idx.data(), w.data(), N, P, C);
      auto td = to_double(table);
      const auto wd = to_double(w), dd = to_double(dout);
      std::vector<double> outr(N * C), dtr = to_double(dt0);
      ref::bilinear_embed_forward(outr.data(), idx.data(), wd.data(), td.data(), N, C);
      ref::bilinear_embed_backward(dtr.data(), dd.data(), idx.data(), wd.data(), N, C);
      EXPECT_LT(max_rel_err(out.vec(), outr), 1e-6);
      EXPECT_LT(max_rel_err(dt.vec(), dtr), 1e-6);
      EXPECT_TRUE(out.guards_intact() && dt.guards_intact());
      auto loss = [&] {
        std::vector<double> o(N * C);
        ref::bilinear_embed_forward(o.data(), idx.data(), wd.data(), td.data(), N, C);
        double l = 0;
        for (int64_t i = 0; i < N * C; ++i) l += dd[i] * o[i];
        return l;
      };
      std::vector<float> g(P * C);
      for (int64_t i = 0; i < P * C; ++i) g[i] = dt.data()[i] - dt0[i];
      expect_matches_finite_differences(loss, td, g, 100, 1e-5, "bilinear dtable");
    }
  expect_thread_invariant([&] {
    const int64_t C = 700;
    const auto dout = randn(N * C, 44);
    std::vector<float> dt(P * C, 0.0f);
    ops::bilinear_embed_backward(dt.data(), dout.data(), idx.data(), w.data(), N, P, C);
    return dt;
  });
  std::vector<float> out(N * 16), table(P * 16);
  idx[3] = P;
  EXPECT_THROW(ops::bilinear_embed_forward(out.data(), idx.data(), w.data(), table.data(), N, P, 16), Error);
  idx[3] = -1;
  EXPECT_THROW(ops::bilinear_embed_backward(table.data(), out.data(), idx.data(), w.data(), N, P, 16), Error);
}
