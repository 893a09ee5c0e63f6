// All-gather of updated parameter shards in the rollout dtype (see param_sync.h).
#include "train/param_sync.h"

#include <cstring>

#include "core/error.h"
#include "core/profiler.h"
#include "kernels/ops.h"

namespace grpo::train {

ParamSync::ParamSync(ModelWeights& w, comm::Communicator& comm, const comm::Partition& part)
    : w_(w), comm_(comm), part_(part), bf16_(w.has_bf16()) {
  const Arena& p32 = w.params();
  GRPO_CHECK(part.total() == p32.numel() && part.parts() == comm.size(), "[zero] parameter partition of ",
             part.total(), " elements into ", part.parts(), " shards for a layout of ", p32.numel(), " and ",
             comm.size(), " ranks");
  pieces_.resize(comm.size());
  offsets_.assign(comm.size() + 1, 0);
  for (int r = 0; r < comm.size(); ++r) {
    int64_t bytes = 0;
    for (const auto& [name, view] : p32.entries()) {
      const int64_t lo = p32.offset(name), hi = lo + view.numel();
      const int64_t a = part.piece_begin(r, lo, hi), b = part.piece_end(r, lo, hi);
      if (a == b) continue;
      const bool as_bf16 = bf16_ && is_gemm_weight(name);
      const int64_t bf16_lo = bf16_ ? w.bf16_arena()->offset(name) + (a - lo) : 0;
      pieces_[r].push_back({a, b, bf16_lo, as_bf16});
      bytes += (b - a) * (as_bf16 ? 2 : 4);
    }
    offsets_[r + 1] = offsets_[r] + bytes;
  }
  if (bf16_ && comm.size() > 1) stage_ = Buffer(static_cast<size_t>(offsets_.back()));
}

void ParamSync::run() {
  GRPO_PROFILE("param_sync");
  float* p32 = w_.params().flat().f32();
  if (comm_.size() == 1) {
    if (bf16_) w_.refresh_bf16();
    return;
  }
  if (!bf16_) {
    std::vector<int64_t> off(part_.offsets.size());
    for (size_t r = 0; r < off.size(); ++r) off[r] = part_.offsets[r] * 4;
    comm::Request req = comm_.all_gather(p32, off);
    comm_.wait(req);
    return;
  }
  bf16_t* p16 = w_.bf16_arena()->flat().as<bf16_t>();
  char* stage = static_cast<char*>(stage_.data());
  const int me = comm_.rank();
  int64_t at = offsets_[me];
  for (const Piece& q : pieces_[me]) {
    const int64_t n = q.hi - q.lo;
    if (q.as_bf16) {
      ops::f32_to_bf16(reinterpret_cast<bf16_t*>(stage + at), p32 + q.lo, n);
      at += 2 * n;
    } else {
      std::memcpy(stage + at, p32 + q.lo, static_cast<size_t>(n) * 4);
      at += 4 * n;
    }
  }
  comm::Request req = comm_.all_gather(stage, offsets_);
  comm_.wait(req);
  for (int r = 0; r < comm_.size(); ++r) {
    at = offsets_[r];
    for (const Piece& q : pieces_[r]) {
      const int64_t n = q.hi - q.lo;
      if (q.as_bf16) {
        std::memcpy(p16 + q.bf16_lo, stage + at, static_cast<size_t>(n) * 2);
        at += 2 * n;
      } else {
        if (r != me) std::memcpy(p32 + q.lo, stage + at, static_cast<size_t>(n) * 4);
        ops::f32_to_bf16(p16 + q.bf16_lo, p32 + q.lo, n);
        at += 4 * n;
      }
    }
  }
}

void ParamSync::gather_masters(int root) {
  GRPO_PROFILE("gather_masters");
  if (comm_.size() == 1 || !bf16_) return;  // f32 mode: every rank already holds every shard
  float* p32 = w_.params().flat().f32();
  std::vector<int64_t> off(part_.offsets.size());
  for (size_t r = 0; r < off.size(); ++r) off[r] = part_.offsets[r] * 4;
  comm::Request req = comm_.gather(p32 + part_.begin(comm_.rank()), p32, off, root);
  comm_.wait(req);
}

}  // namespace grpo::train
