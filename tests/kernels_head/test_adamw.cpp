// Tests of the optimizer kernels: ops::adamw_step against the reference over several steps (weight decay,
// gradient scale, a buffer large enough for the threaded path with a ragged last block), a step computed by
// hand, guard values, argument errors; ops::sum_squares against a double sum, thread-count invariance.
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/threads.h"
#include "kernels/ops.h"
#include "kernels/ref/ref_head.h"
#include "kernels_head/head_test_util.h"

namespace grpo {
namespace {

TEST(AdamW, MatchesReferenceOverSeveralSteps) {
  const int64_t n = 100003;
  test::Guarded p(test::uniform(n, 1)), m(n), v(n);
  std::vector<double> pr = test::to_double(p.values()), mr(n, 0.0), vr(n, 0.0);
  for (int64_t step = 1; step <= 5; ++step) {
    const auto g = test::uniform(n, 100 + step, -3, 3);
    ops::adamw_step(p.data(), g.data(), m.data(), v.data(), n, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, step, 0.5f);
    ref::adamw_step<double>(pr.data(), test::to_double(g).data(), mr.data(), vr.data(), n, 1e-2, 0.9, 0.95, 1e-8,
                            0.1, step, 0.5);
  }
  // fp32 state against double: a few roundings per step on values of order 1.
  EXPECT_LT(test::max_rel_err(p.values(), pr), 1e-6);
  EXPECT_LT(test::max_rel_err(m.values(), mr), 1e-6);
  EXPECT_LT(test::max_rel_err(v.values(), vr), 1e-6);
  EXPECT_TRUE(p.guards_intact() && m.guards_intact() && v.guards_intact());
}

TEST(AdamW, FirstStepByHand) {
  // step 1: m = 0.1 g, v = 0.001 g^2; bias-corrected m / sqrt(v) = g / |g| = 1 for g = 0.5.
  // p = 1 (1 - 0.1 * 0.01) - 0.1 * 1 = 0.899
  float p = 1.0f, m = 0.0f, v = 0.0f;
  const float g = 0.25f;  // times grad_scale 2 -> 0.5
  ops::adamw_step(&p, &g, &m, &v, 1, 0.1f, 0.9f, 0.999f, 0.0f, 0.01f, 1, 2.0f);
  EXPECT_FLOAT_EQ(p, 0.899f);
  EXPECT_FLOAT_EQ(m, 0.05f);
  EXPECT_NEAR(v, 0.00025f, 1e-8f);  // 1 - 0.999f = 0.00099998713: the float beta2, not 0.001
}

TEST(AdamW, RejectsBadArguments) {
  float p = 0, g = 0, m = 0, v = 0;
  EXPECT_THROW(ops::adamw_step(&p, &g, &m, &v, 1, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 0, 1.0f), Error);
  EXPECT_THROW(ops::adamw_step(&p, &g, &m, &v, 1, 1e-3f, 1.0f, 0.999f, 1e-8f, 0.0f, 1, 1.0f), Error);
  EXPECT_THROW(ops::adamw_step(&p, &g, &m, &v, 1, -1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 1, 1.0f), Error);
  EXPECT_THROW(ops::adamw_step(&p, &g, &m, &v, -1, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 1, 1.0f), Error);
  EXPECT_NO_THROW(ops::adamw_step(nullptr, nullptr, nullptr, nullptr, 0, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 1, 1.0f));
}

TEST(SumSquares, MatchesDoubleSumAndIgnoresThreadCount) {
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{17}, int64_t{1000003}}) {
    const auto x = test::uniform(n, 7 + n, -4, 4);
    const double want = ref::sum_squares<double>(test::to_double(x).data(), n);
    const int threads = num_threads();
    set_num_threads(1);
    const double one = ops::sum_squares(x.data(), n);
    set_num_threads(2);
    const double two = ops::sum_squares(x.data(), n);
    set_num_threads(threads);
    EXPECT_NEAR(one, want, 1e-12 * want) << "n=" << n;  // float squares are exact in double
    EXPECT_EQ(one, two) << "n=" << n;
  }
  EXPECT_THROW(ops::sum_squares(nullptr, -1), Error);
}

}  // namespace
}  // namespace grpo
