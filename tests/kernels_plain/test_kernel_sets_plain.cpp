// The DecoderKernels sets: each entry points at its own namespace's kernel, and a small RMSNorm + SwiGLU
// run through both sets gives the same numbers (the decoder switches sets through these pointers).
#include <gtest/gtest.h>

#include <vector>

#include "kernels/plain_ops.h"
#include "kernels_plain/plain_test_util.h"

namespace grpo {
namespace {

using plain_test::random_floats;
using plain_test::rel_err;

TEST(KernelSets, EntriesPointAtTheirNamespace) {
  const DecoderKernels& f = fused_kernels();
  const DecoderKernels& p = plain_kernels();
  EXPECT_STREQ(f.name, "fused");
  EXPECT_STREQ(p.name, "plain");
  EXPECT_FALSE(f.full_logits);
  EXPECT_TRUE(p.full_logits);
  EXPECT_EQ(f.attention_forward, &ops::attention_forward);
  EXPECT_EQ(f.lm_head_backward, &ops::lm_head_backward);
  EXPECT_EQ(f.add_inplace, &ops::add_inplace);
  EXPECT_EQ(p.rmsnorm_forward, &plain::rmsnorm_forward);
  EXPECT_EQ(p.rmsnorm_backward, &plain::rmsnorm_backward);
  EXPECT_EQ(p.rmsnorm_backward_ws_floats, &plain::rmsnorm_backward_ws_floats);
  EXPECT_EQ(p.rope_forward, &plain::rope_forward);
  EXPECT_EQ(p.rope_backward, &plain::rope_backward);
  EXPECT_EQ(p.swiglu_forward, &plain::swiglu_forward);
  EXPECT_EQ(p.swiglu_backward, &plain::swiglu_backward);
  EXPECT_EQ(p.attention_ws_floats, &plain::attention_ws_floats);
  EXPECT_EQ(p.attention_forward, &plain::attention_forward);
  EXPECT_EQ(p.attention_backward, &plain::attention_backward);
  EXPECT_EQ(p.lm_head_ws_floats, &plain::lm_head_ws_floats);
  EXPECT_EQ(p.lm_head_forward, &plain::lm_head_forward);
  EXPECT_EQ(p.lm_head_backward, &plain::lm_head_backward);
  EXPECT_EQ(p.embedding_forward, &plain::embedding_forward);
  EXPECT_EQ(p.embedding_backward, &plain::embedding_backward);
  EXPECT_EQ(p.add_inplace, &plain::add_inplace);
}

TEST(KernelSets, BothSetsComputeTheSameLayerPieces) {
  const int64_t T = 13, C = 24, F = 10;
  const std::vector<float> x = random_floats(T * C, 1), w = random_floats(C, 2), gu = random_floats(T * 2 * F, 3);
  std::vector<std::vector<float>> y, act;
  for (const DecoderKernels* set : {&fused_kernels(), &plain_kernels()}) {
    std::vector<float> out(T * C), rstd(T), a(T * F);
    set->rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), T, C, 1e-6f);
    set->swiglu_forward(a.data(), gu.data(), T, F);
    y.push_back(out);
    act.push_back(a);
  }
  EXPECT_LT(rel_err(y[1], y[0]), 1e-5);
  EXPECT_LT(rel_err(act[1], act[0]), 1e-5);
}

}  // namespace
}  // namespace grpo
