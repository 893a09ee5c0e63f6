// Plain causal GQA attention against the double-precision ref:: oracle and the fused ops:: kernel: several
// packed sequences of different lengths (including empty and single-token ones), GQA groups, odd head dims.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "kernels/ops.h"
#include "kernels/plain_ops.h"
#include "kernels/ref/ref_nn.h"
#include "kernels_plain/plain_test_util.h"

namespace grpo {
namespace {

using plain_test::Guarded;
using plain_test::random_floats;
using plain_test::rel_err;
using plain_test::to_double;

struct AttnCase {
  std::vector<int32_t> lens;
  int64_t H, K, D;
};

// Softmax over <= 70 keys and dot products over D terms in fp32: errors ~1e-6 of the magnitude.
constexpr double kAttentionTol = 3e-5;

void check_case(const AttnCase& c) {
  std::vector<int32_t> cu = {0};
  for (int32_t len : c.lens) cu.push_back(cu.back() + len);
  const int64_t S = static_cast<int64_t>(c.lens.size()), T = cu.back(), H = c.H, K = c.K, D = c.D;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const std::vector<float> q = random_floats(T * H * D, 50 + T, -2, 2), k = random_floats(T * K * D, 51, -2, 2),
                           v = random_floats(T * K * D, 52), dout = random_floats(T * H * D, 53);
  std::vector<float> ws(plain::attention_ws_floats(T, H, K, D));
  Guarded o(T * H * D), lse(T * H), dq(T * H * D), dk(T * K * D, 9.0f), dv(T * K * D, 9.0f);
  plain::attention_forward(o.data(), lse.data(), q.data(), k.data(), v.data(), cu.data(), S, T, H, K, D, scale,
                           ws.data());
  plain::attention_backward(dq.data(), dk.data(), dv.data(), dout.data(), q.data(), k.data(), v.data(), o.data(),
                            lse.data(), cu.data(), S, T, H, K, D, scale, ws.data());

  std::vector<double> o_ref(T * H * D), lse_ref(T * H), dq_ref(T * H * D), dk_ref(T * K * D), dv_ref(T * K * D);
  const std::vector<double> qd = to_double(q), kd = to_double(k), vd = to_double(v);
  ref::attention_forward(o_ref.data(), lse_ref.data(), qd.data(), kd.data(), vd.data(), cu.data(), S, H, K, D,
                         static_cast<double>(scale));
  ref::attention_backward(dq_ref.data(), dk_ref.data(), dv_ref.data(), to_double(dout).data(), qd.data(),
                          kd.data(), vd.data(), cu.data(), S, T, H, K, D, static_cast<double>(scale));
  const std::string what = ::testing::PrintToString(c.lens) + " H=" + std::to_string(H) + " K=" +
                           std::to_string(K) + " D=" + std::to_string(D);
  EXPECT_LT(rel_err(o.values(), o_ref), kAttentionTol) << what;
  EXPECT_LT(rel_err(lse.values(), lse_ref), kAttentionTol) << what;
  EXPECT_LT(rel_err(dq.values(), dq_ref), kAttentionTol) << what;
  EXPECT_LT(rel_err(dk.values(), dk_ref), kAttentionTol) << what;
  EXPECT_LT(rel_err(dv.values(), dv_ref), kAttentionTol) << what;
  EXPECT_TRUE(o.intact() && lse.intact() && dq.intact() && dk.intact() && dv.intact()) << what;

  // The fused kernel on the same inputs.
  std::vector<float> fws(ops::attention_ws_floats(T, H, K, D)), fo(T * H * D), flse(T * H), fdq(T * H * D),
      fdk(T * K * D), fdv(T * K * D);
  ops::attention_forward(fo.data(), flse.data(), q.data(), k.data(), v.data(), cu.data(), S, T, H, K, D, scale,
                         fws.data());
  ops::attention_backward(fdq.data(), fdk.data(), fdv.data(), dout.data(), q.data(), k.data(), v.data(), fo.data(),
                          flse.data(), cu.data(), S, T, H, K, D, scale, fws.data());
  EXPECT_LT(rel_err(o.values(), fo), kAttentionTol) << what;
  EXPECT_LT(rel_err(lse.values(), flse), kAttentionTol) << what;
  EXPECT_LT(rel_err(dq.values(), fdq), kAttentionTol) << what;
  EXPECT_LT(rel_err(dk.values(), fdk), kAttentionTol) << what;
  EXPECT_LT(rel_err(dv.values(), fdv), kAttentionTol) << what;
}

TEST(PlainAttention, MatchesRefAndFusedOnPackedSequences) {
  check_case({{5, 0, 1, 23, 12}, 4, 2, 16});  // an empty and a one-token sequence
  check_case({{70}, 6, 2, 13});               // odd head dim (vector tails), GQA 3:1
  check_case({{9, 31, 17}, 2, 2, 64});        // no GQA
  check_case({{33, 40}, 8, 1, 8});            // all heads share one kv head
}

TEST(PlainAttention, WorkspaceGrowsQuadraticallyInTokens) {
  // P and dS [H, T, T], delta [H, T], five [H, T, D] head-major copies.
  EXPECT_EQ(plain::attention_ws_floats(100, 4, 2, 64), 2 * 4 * 100 * 100 + 4 * 100 + 5 * 4 * 100 * 64);
  EXPECT_EQ(plain::attention_ws_floats(200, 4, 2, 64), 4 * (2 * 4 * 100 * 100) + 2 * 4 * 100 + 2 * 5 * 4 * 100 * 64);
}

TEST(PlainAttention, RejectsBadSequenceLayout) {
  const int64_t T = 4, H = 2, K = 1, D = 4;
  std::vector<float> q(T * H * D), kv(T * K * D), o(T * H * D), lse(T * H), ws(plain::attention_ws_floats(T, H, K, D));
  const std::vector<std::vector<int32_t>> bad = {{1, 4}, {0, 3}, {0, 3, 2, 4}};
  for (const auto& cu : bad) {
    const int64_t S = static_cast<int64_t>(cu.size()) - 1;
    EXPECT_THROW(plain::attention_forward(o.data(), lse.data(), q.data(), kv.data(), kv.data(), cu.data(), S, T, H,
                                          K, D, 1.0f, ws.data()),
                 Error);
  }
  const std::vector<int32_t> cu = {0, 4};
  EXPECT_THROW(plain::attention_forward(o.data(), lse.data(), q.data(), kv.data(), kv.data(), cu.data(), 1, T, 3, 2,
                                        D, 1.0f, ws.data()),
               Error);  // H not a multiple of K
}

}  // namespace
}  // namespace grpo
