// Predetermined response lengths for benchmarks (actor_rollout_ref.rollout.response_lengths: long_tail):
// each sample stops at a length drawn for it from a seeded long-tailed distribution, keyed by what
// identifies the sample in every configuration (the step, the generation batch, the prompt's place in the
// batch, the sample's index in its group), so configurations that schedule the rollout differently (one
// request per group or per sample, continuous or static batching) generate the same number of tokens, in a
// different order, and keep the long tail that continuous batching and token-budget packing exist for.
//
// The distribution is that of the reference run the engine's optimisations come from (a Qwen3-VL-8B GRPO
// run on 8 accelerators: responses of ~50 tokens under a 1,024-token limit, a tail past
// 500, a few at the limit), scaled to the limit L: log-normal with median L / 20 and sigma 1.4, rounded and
// clamped to [1, L]. 5% of the responses are longer than L / 2 and ~1.6% reach L; the mean is ~0.13 L.
#pragma once
#include <cstdint>

#include "core/names.h"

namespace grpo {

// actor_rollout_ref.rollout.response_lengths: off (responses end at a stop token or the limit) or long_tail.
enum class ResponseLengths { Off, LongTail };
inline constexpr auto kResponseLengthsNames =
    name_table<ResponseLengths>({{ResponseLengths::Off, "off"}, {ResponseLengths::LongTail, "long_tail"}});

int32_t long_tail_response_length(uint64_t seed, int64_t step, int64_t batch, int64_t prompt, int64_t sample,
                                  int32_t limit);

}  // namespace grpo
