// Flat sharding: a range of n elements split into N contiguous shards, rank r owning
// [begin(r), end(r)). ZeRO shards the parameter, gradient and optimizer buffers this way (they share one
// flat layout, model/weights.h), so a reduce-scatter or all-gather of any sub-range [lo, hi) of the layout
// is "send each rank the piece of [lo, hi) inside its shard". Shards may be empty (more ranks than elements).
#pragma once
#include <cstdint>
#include <vector>

namespace grpo::comm {

struct Partition {
  std::vector<int64_t> offsets;  // [N + 1]: offsets[0] = 0, non-decreasing, offsets[N] = n

  // Shards of nearly equal size made of whole align-blocks: every boundary is a multiple of `align` or n;
  // the first (blocks mod N) shards get one block more than the others.
  static Partition even(int64_t n, int parts, int64_t align = 1);

  int parts() const { return static_cast<int>(offsets.size()) - 1; }
  int64_t total() const { return offsets.back(); }
  int64_t begin(int r) const { return offsets[r]; }
  int64_t end(int r) const { return offsets[r + 1]; }
  int64_t size(int r) const { return offsets[r + 1] - offsets[r]; }
  // The part of [lo, hi) inside shard r, as [first, last) (first == last when empty).
  int64_t piece_begin(int r, int64_t lo, int64_t hi) const;
  int64_t piece_end(int r, int64_t lo, int64_t hi) const;
  int64_t piece_size(int r, int64_t lo, int64_t hi) const { return piece_end(r, lo, hi) - piece_begin(r, lo, hi); }
};

}  // namespace grpo::comm
