// First-fit-decreasing token-budget packing and fixed-size micro-batches, padded or not (see packing.h).
#include "train/packing.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"

namespace grpo::train {

namespace {

void check_lengths(std::span<const int64_t> lengths) {
  for (size_t i = 0; i < lengths.size(); ++i)
    GRPO_CHECK(lengths[i] >= 1, "[packing] sequence ", i, " has length ", lengths[i], ", expected >= 1");
}

// Fills in each micro-batch's computed tokens and the plan's totals.
void finish_plan(MicroBatchPlan& plan, std::span<const int64_t> lengths, bool padded) {
  for (MicroBatch& mb : plan.micro_batches) {
    int64_t longest = 0;
    for (int64_t s : mb.sequences) longest = std::max(longest, lengths[static_cast<size_t>(s)]);
    mb.computed_tokens = padded ? longest * static_cast<int64_t>(mb.sequences.size()) : mb.real_tokens;
    plan.real_tokens += mb.real_tokens;
    plan.computed_tokens += mb.computed_tokens;
  }
}

}  // namespace

MicroBatchPlan pack_by_token_budget(std::span<const int64_t> lengths, int64_t max_tokens, bool padded) {
  GRPO_CHECK(max_tokens >= 1, "[packing] token budget (ppo_max_token_len_per_gpu) must be >= 1, got ", max_tokens);
  check_lengths(lengths);
  std::vector<int64_t> order(lengths.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return lengths[a] > lengths[b]; });

  MicroBatchPlan plan;
  std::vector<int64_t> room;  // free tokens per micro-batch
  for (int64_t seq : order) {
    const int64_t len = lengths[static_cast<size_t>(seq)];
    GRPO_CHECK(len <= max_tokens, "[packing] sequence ", seq, " has ", len,
               " tokens, more than the micro-batch token budget ", max_tokens,
               " (raise actor_rollout_ref.actor.ppo_max_token_len_per_gpu)");
    size_t bin = 0;
    while (bin < room.size() && room[bin] < len) ++bin;
    if (bin == room.size()) {
      room.push_back(max_tokens);
      plan.micro_batches.emplace_back();
    }
    room[bin] -= len;
    plan.micro_batches[bin].sequences.push_back(seq);
    plan.micro_batches[bin].real_tokens += len;
  }
  for (MicroBatch& mb : plan.micro_batches) std::sort(mb.sequences.begin(), mb.sequences.end());
  finish_plan(plan, lengths, padded);
  return plan;
}

MicroBatchPlan split_fixed(std::span<const int64_t> lengths, int64_t micro_batch_size, bool padded) {
  GRPO_CHECK(micro_batch_size >= 1, "[packing] micro-batch size (ppo_micro_batch_size_per_gpu) must be >= 1, got ",
             micro_batch_size);
  check_lengths(lengths);
  MicroBatchPlan plan;
  for (size_t begin = 0; begin < lengths.size(); begin += static_cast<size_t>(micro_batch_size)) {
    const size_t end = std::min(lengths.size(), begin + static_cast<size_t>(micro_batch_size));
    MicroBatch mb;
    for (size_t i = begin; i < end; ++i) {
      mb.sequences.push_back(static_cast<int64_t>(i));
      mb.real_tokens += lengths[i];
    }
    plan.micro_batches.push_back(std::move(mb));
  }
  finish_plan(plan, lengths, padded);
  return plan;
}

}  // namespace grpo::train
