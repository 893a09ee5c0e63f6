// Flat sharding (see partition.h).
#include "comm/partition.h"

#include <algorithm>

#include "core/error.h"

namespace grpo::comm {

Partition Partition::even(int64_t n, int parts, int64_t align) {
  GRPO_CHECK(n >= 0 && parts >= 1 && align >= 1, "[comm] partition of ", n, " elements into ", parts,
             " shards (align ", align, "): need n >= 0, shards >= 1, align >= 1");
  const int64_t blocks = (n + align - 1) / align, per = blocks / parts, extra = blocks % parts;
  Partition p;
  p.offsets.resize(parts + 1);
  int64_t b = 0;
  for (int r = 0; r < parts; ++r) {
    p.offsets[r] = std::min(n, b * align);
    b += per + (r < extra ? 1 : 0);
  }
  p.offsets[parts] = n;
  return p;
}

int64_t Partition::piece_begin(int r, int64_t lo, int64_t hi) const {
  return std::clamp(begin(r), lo, std::max(lo, hi));
}

int64_t Partition::piece_end(int r, int64_t lo, int64_t hi) const {
  return std::max(piece_begin(r, lo, hi), std::clamp(end(r), lo, std::max(lo, hi)));
}

}  // namespace grpo::comm
