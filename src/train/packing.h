// Training micro-batches: padding-free packing by token budget (first-fit-decreasing bin packing,
// verl `use_dynamic_bsz` + `ppo_max_token_len_per_gpu`) and fixed-size micro-batches
// (`ppo_micro_batch_size_per_gpu` sequences), each optionally padded to its longest sequence (verl without
// `use_remove_padding`).
//
// Packing efficiency, the one definition (perf/packing_efficiency): useful tokens / tokens computed. Useful
// tokens are the sequences' own; tokens computed are those of the batches the model runs, so padding
// counts where a micro-batch is padded, and the unused part of a token budget does not (no compute is
// spent on it: a packed micro-batch holds only its sequences).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace grpo::train {

struct MicroBatch {
  std::vector<int64_t> sequences;  // indices into the input lengths, ascending
  int64_t real_tokens = 0;         // sum of the sequences' lengths (useful tokens)
  int64_t computed_tokens = 0;     // tokens of the built batch: real_tokens, or size x longest when padded
};

struct MicroBatchPlan {
  std::vector<MicroBatch> micro_batches;
  int64_t real_tokens = 0;
  int64_t computed_tokens = 0;
  double efficiency() const {  // useful / computed, 1 for an empty plan
    return computed_tokens > 0 ? static_cast<double>(real_tokens) / static_cast<double>(computed_tokens) : 1.0;
  }
};

// First-fit-decreasing: sequences sorted by length (longest first, ties by index) each go into the first
// micro-batch with room, so no micro-batch holds more than max_tokens real tokens. A sequence longer than
// max_tokens is an error naming it. Lengths must be >= 1. `padded`: each micro-batch is computed padded to
// its longest sequence.
MicroBatchPlan pack_by_token_budget(std::span<const int64_t> lengths, int64_t max_tokens, bool padded = false);

// Consecutive groups of micro_batch_size sequences in input order (the last may be smaller); `padded`:
// each computed as (sequences in it) x (its longest sequence).
MicroBatchPlan split_fixed(std::span<const int64_t> lengths, int64_t micro_batch_size, bool padded);

}  // namespace grpo::train
