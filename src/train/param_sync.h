// After a sharded optimizer step each rank holds updated f32 master weights for its shard only;
// ParamSync brings every rank's copy of the model (or of a range of it) up to date in the dtype the
// decoder and the rollout engine read ("updated shards all-gathered in the rollout dtype"):
// - f32 mode: the f32 arena's pieces, all-gathered in place;
// - bf16 mode: the GEMM weights travel as bf16 straight into the bf16 shadow (half the bytes; their f32
//   masters stay with the shard's owner), the tensors also read in f32 (norms, biases, embedding) as f32;
//   both kinds packed into one all-gather.
// In bf16 mode run() gathers the layout in chunks of at most chunk_elems elements, two in flight (staging
// slots 0 and 1): the staging holds two chunks, never the whole packed model.
// One process: only the bf16 shadow refresh. ZeRO-3 gathers ranges (one layer) in two steps, start and
// finish, with up to two in flight, and releases them again (release: other ranks' parts of the range are
// dropped, their memory returned). gather_masters() brings every f32 master shard to one rank (checkpoints
// in bf16 mode).
#pragma once
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "model/weights.h"

namespace grpo::train {

class ParamSync {
 public:
  static constexpr int64_t kChunkElems = int64_t{1} << 22;  // 4 Mi elements: at most 16 MiB packed a slot
  ParamSync(ModelWeights& w, comm::Communicator& comm, const comm::Partition& part, int64_t chunk_elems = kChunkElems);

  void run();  // the whole layout, blocking
  // Gathering of layout elements [lo, hi): start() queues it (staging buffer `slot`: 0 or 1), finish()
  // waits for it and unpacks. A slot holds one range at a time.
  comm::Request start(int64_t lo, int64_t hi, int slot);
  void finish(int64_t lo, int64_t hi, int slot, comm::Request& req);
  // Drops the other ranks' parts of [lo, hi) (whole pages return to the system and read as zero).
  void release(int64_t lo, int64_t hi);
  // bf16 mode: drops the f32 copies of the other ranks' GEMM weights in [lo, hi), which nothing reads (they
  // travel as bf16 into the shadow; their masters stay with their owners). No-op in f32 mode.
  void drop_stale_masters(int64_t lo, int64_t hi);
  void gather_masters(int root);
  int64_t bytes_per_rank(int r) const;  // packed bytes of shard r (whole layout)

 private:
  struct Piece {
    int64_t lo, hi;   // f32 layout elements
    int64_t bf16_lo;  // the same element in the bf16 shadow's layout
    bool as_bf16;     // travels as bf16 (a GEMM weight in bf16 mode)
  };
  struct Plan {
    std::vector<std::vector<Piece>> pieces;  // per rank: its shard's tensors in the range (padding never travels)
    std::vector<int64_t> offsets;            // packed byte offsets per rank [N + 1]
  };
  const Plan& plan(int64_t lo, int64_t hi);

  ModelWeights& w_;
  comm::Communicator& comm_;
  comm::Partition part_;
  bool bf16_;
  int64_t chunk_elems_;
  std::map<std::pair<int64_t, int64_t>, Plan> plans_;
  Buffer stage_[2];
};

}  // namespace grpo::train
