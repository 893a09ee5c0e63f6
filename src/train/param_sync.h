// After a sharded optimizer step each rank holds updated f32 master weights for its shard only;
// ParamSync brings every rank's copy of the model up to date in the dtype the decoder and the rollout
// engine read ("updated shards all-gathered in the rollout dtype"):
// - f32 mode: the f32 arena's shards, all-gathered in place;
// - bf16 mode: the GEMM weights travel as bf16 straight into the bf16 shadow (half the bytes; their f32
//   masters stay with the shard's owner), the tensors also read in f32 (norms, biases, embedding) as f32;
//   both kinds packed into one all-gather.
// One process: only the bf16 shadow refresh. gather_masters() brings every f32 master shard to one rank
// (checkpoints in bf16 mode).
#pragma once
#include <cstdint>
#include <vector>

#include "comm/communicator.h"
#include "model/weights.h"

namespace grpo::train {

class ParamSync {
 public:
  ParamSync(ModelWeights& w, comm::Communicator& comm, const comm::Partition& part);

  void run();
  void gather_masters(int root);
  int64_t bytes_per_rank(int r) const { return offsets_[r + 1] - offsets_[r]; }  // packed bytes of shard r

 private:
  struct Piece {
    int64_t lo, hi;  // f32 layout elements
    int64_t bf16_lo; // the same element in the bf16 shadow's layout
    bool as_bf16;    // travels as bf16 (a GEMM weight in bf16 mode)
  };
  ModelWeights& w_;
  comm::Communicator& comm_;
  comm::Partition part_;
  bool bf16_;
  std::vector<std::vector<Piece>> pieces_;  // per rank: its shard's tensors (padding never travels)
  std::vector<int64_t> offsets_;            // packed byte offsets per rank [N + 1]
  Buffer stage_;
};

}  // namespace grpo::train
