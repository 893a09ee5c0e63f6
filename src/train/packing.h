// Training micro-batches: padding-free packing by token budget (first-fit-decreasing bin packing,
// verl `use_dynamic_bsz` + `ppo_max_token_len_per_gpu`) and the fixed-size padded baseline
// (`ppo_micro_batch_size_per_gpu` sequences per micro-batch, each padded to its longest), with the
// packing efficiency of each: real tokens / tokens paid for.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace grpo::train {

struct MicroBatch {
  std::vector<int64_t> sequences;  // indices into the input lengths, ascending
  int64_t real_tokens = 0;         // sum of the sequences' lengths
  int64_t paid_tokens = 0;         // token budget (packed) or size x longest (padded)
};

struct MicroBatchPlan {
  std::vector<MicroBatch> micro_batches;
  int64_t real_tokens = 0;
  int64_t paid_tokens = 0;
  double efficiency() const {  // real / paid, 1 for an empty plan
    return paid_tokens > 0 ? static_cast<double>(real_tokens) / static_cast<double>(paid_tokens) : 1.0;
  }
};

// First-fit-decreasing: sequences sorted by length (longest first, ties by index) each go into the first
// micro-batch with room, so no micro-batch holds more than max_tokens tokens. Each micro-batch pays
// max_tokens. A sequence longer than max_tokens is an error naming it. Lengths must be >= 1.
MicroBatchPlan pack_by_token_budget(std::span<const int64_t> lengths, int64_t max_tokens);

// Baseline: consecutive groups of micro_batch_size sequences in input order (the last may be smaller),
// each paying (sequences in it) x (its longest sequence).
MicroBatchPlan split_fixed_padded(std::span<const int64_t> lengths, int64_t micro_batch_size);

}  // namespace grpo::train
