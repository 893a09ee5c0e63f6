// The two decoder kernel sets (plain_ops.h): the fused ops:: kernels and the plain:: baseline.
#include "kernels/plain_ops.h"

namespace grpo {

const DecoderKernels& fused_kernels() {
  static const DecoderKernels set{
      "fused",
      ops::rmsnorm_forward,     ops::rmsnorm_backward,   ops::rmsnorm_backward_ws_floats,
      ops::rope_forward,        ops::rope_backward,      ops::swiglu_forward,
      ops::swiglu_backward,     ops::attention_ws_floats, ops::attention_forward,
      ops::attention_backward,  ops::lm_head_ws_floats,  ops::lm_head_forward,
      ops::lm_head_backward,    ops::embedding_forward,  ops::embedding_backward,
      ops::add_inplace,         /*full_logits=*/false, /*attention_ws_per_sequence=*/false};
  return set;
}

const DecoderKernels& plain_kernels() {
  static const DecoderKernels set{
      "plain",
      plain::rmsnorm_forward,     plain::rmsnorm_backward,    plain::rmsnorm_backward_ws_floats,
      plain::rope_forward,        plain::rope_backward,       plain::swiglu_forward,
      plain::swiglu_backward,     plain::attention_ws_floats, plain::attention_forward,
      plain::attention_backward,  plain::lm_head_ws_floats,   plain::lm_head_forward,
      plain::lm_head_backward,    plain::embedding_forward,   plain::embedding_backward,
      plain::add_inplace,         /*full_logits=*/true, /*attention_ws_per_sequence=*/true};
  return set;
}

}  // namespace grpo
