// Data-parallel balance: a mini-batch's sequences split across N ranks so that no rank waits for a longer
// one, then each rank's share packed into micro-batches, the same number on every rank (a rank runs its
// collectives once per micro-batch in step with the others).
//
// The split is Karmarkar-Karp's largest differencing method on token counts (verl's
// get_seqlen_balanced_partitions): start with one N-way partition per sequence, repeatedly merge the two
// partitions whose largest and smallest parts differ most, pairing the heavy parts of one with the light
// parts of the other. Ties break on sequence indices, so every rank computes the same split.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "train/packing.h"

namespace grpo::train {

// N parts of indices into `weights` (each part ascending), the parts ordered by total weight, heaviest
// first. parts >= 1; weights >= 0.
std::vector<std::vector<int64_t>> balanced_partitions(std::span<const int64_t> weights, int parts);

// Brings `plan` (over sequences of the given lengths) to exactly `count` micro-batches (count >= the
// plan's): the micro-batch with the most tokens among those holding two or more sequences is split into
// two balanced halves until the count is reached or nothing can be split, then empty micro-batches are
// appended. Each piece computes its own tokens, or its size times its longest sequence when `padded` (as
// in packing.h); empty micro-batches compute nothing.
void split_to_count(MicroBatchPlan& plan, std::span<const int64_t> lengths, int64_t count, bool padded);

}  // namespace grpo::train
