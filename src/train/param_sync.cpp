// All-gather of updated parameter shards in the rollout dtype (see param_sync.h).
#include "train/param_sync.h"

#include <cstring>

#include "core/error.h"
#include "core/profiler.h"
#include "kernels/ops.h"

namespace grpo::train {

ParamSync::ParamSync(ModelWeights& w, comm::Communicator& comm, const comm::Partition& part, int64_t chunk_elems)
    : w_(w), comm_(comm), part_(part), bf16_(w.has_bf16()), chunk_elems_(chunk_elems) {
  GRPO_CHECK(chunk_elems >= 1, "[zero] the all-gather's chunk must hold at least one element, got ", chunk_elems);
  GRPO_CHECK(part.total() == w.params().numel() && part.parts() == comm.size(), "[zero] parameter partition of ",
             part.total(), " elements into ", part.parts(), " shards for a layout of ", w.params().numel(), " and ",
             comm.size(), " ranks");
}

const ParamSync::Plan& ParamSync::plan(int64_t lo, int64_t hi) {
  auto it = plans_.find({lo, hi});
  if (it != plans_.end()) return it->second;
  const Arena& p32 = w_.params();
  Plan p;
  p.pieces.resize(comm_.size());
  p.offsets.assign(comm_.size() + 1, 0);
  for (int r = 0; r < comm_.size(); ++r) {
    int64_t bytes = 0;
    const int64_t r_lo = std::max(lo, part_.begin(r)), r_hi = std::min(hi, part_.end(r));
    for (const auto& [name, view] : p32.entries()) {
      const int64_t t_lo = p32.offset(name), t_hi = t_lo + view.numel();
      const int64_t a = std::max(t_lo, r_lo), b = std::min(t_hi, r_hi);
      if (a >= b) continue;
      const bool as_bf16 = bf16_ && is_gemm_weight(name);
      const int64_t bf16_lo = bf16_ ? w_.bf16_arena()->offset(name) + (a - t_lo) : 0;
      p.pieces[r].push_back({a, b, bf16_lo, as_bf16});
      bytes += (b - a) * (as_bf16 ? 2 : 4);
    }
    p.offsets[r + 1] = p.offsets[r] + bytes;
  }
  return plans_.emplace(std::make_pair(lo, hi), std::move(p)).first->second;
}

int64_t ParamSync::bytes_per_rank(int r) const {
  const Plan& p = const_cast<ParamSync*>(this)->plan(0, part_.total());
  return p.offsets[r + 1] - p.offsets[r];
}

comm::Request ParamSync::start(int64_t lo, int64_t hi, int slot) {
  float* p32 = w_.params().flat().f32();
  if (!bf16_) {  // in place: rank r's part of the range is [max(lo, begin(r)), min(hi, end(r)))
    std::vector<int64_t> off(part_.offsets.size());
    for (size_t r = 0; r < off.size(); ++r) off[r] = std::clamp(part_.offsets[r], lo, hi) * 4;
    return comm_.all_gather(p32, off);
  }
  const Plan& p = plan(lo, hi);
  if (stage_[slot].size() < static_cast<size_t>(p.offsets.back()))
    stage_[slot] = Buffer(static_cast<size_t>(p.offsets.back()));
  char* stage = static_cast<char*>(stage_[slot].data());
  const int me = comm_.rank();
  int64_t at = p.offsets[me];
  for (const Piece& q : p.pieces[me]) {
    const int64_t n = q.hi - q.lo;
    if (q.as_bf16) {
      ops::f32_to_bf16(reinterpret_cast<bf16_t*>(stage + at), p32 + q.lo, n);
      at += 2 * n;
    } else {
      std::memcpy(stage + at, p32 + q.lo, static_cast<size_t>(n) * 4);
      at += 4 * n;
    }
  }
  return comm_.all_gather(stage, p.offsets);
}

void ParamSync::finish(int64_t lo, int64_t hi, int slot, comm::Request& req) {
  comm_.wait(req);
  if (!bf16_) return;
  const Plan& p = plan(lo, hi);
  float* p32 = w_.params().flat().f32();
  bf16_t* p16 = w_.bf16_arena()->flat().as<bf16_t>();
  const char* stage = static_cast<const char*>(stage_[slot].data());
  for (int r = 0; r < comm_.size(); ++r) {
    int64_t at = p.offsets[r];
    for (const Piece& q : p.pieces[r]) {
      const int64_t n = q.hi - q.lo;
      if (q.as_bf16) {
        std::memcpy(p16 + q.bf16_lo, stage + at, static_cast<size_t>(n) * 2);
        at += 2 * n;
      } else {
        if (r != comm_.rank()) std::memcpy(p32 + q.lo, stage + at, static_cast<size_t>(n) * 4);
        ops::f32_to_bf16(p16 + q.bf16_lo, p32 + q.lo, n);
        at += 4 * n;
      }
    }
  }
}

void ParamSync::run() {
  GRPO_PROFILE("param_sync");
  if (comm_.size() == 1) {
    if (bf16_) w_.refresh_bf16();
    return;
  }
  const int64_t total = part_.total();
  if (!bf16_) {  // in place: no staging
    comm::Request r = start(0, total, 0);
    finish(0, total, 0, r);
    return;
  }
  // Chunk c in slot c % 2: chunk c + 1 is on the wire while chunk c is unpacked.
  const int64_t chunks = (total + chunk_elems_ - 1) / chunk_elems_;
  auto range = [&](int64_t c) { return std::pair(c * chunk_elems_, std::min(total, (c + 1) * chunk_elems_)); };
  comm::Request req[2];
  req[0] = start(range(0).first, range(0).second, 0);
  for (int64_t c = 0; c < chunks; ++c) {
    if (c + 1 < chunks)
      req[(c + 1) % 2] = start(range(c + 1).first, range(c + 1).second, static_cast<int>((c + 1) % 2));
    finish(range(c).first, range(c).second, static_cast<int>(c % 2), req[c % 2]);
  }
}

void ParamSync::release(int64_t lo, int64_t hi) {
  const Plan& p = plan(lo, hi);
  for (int r = 0; r < comm_.size(); ++r) {
    if (r == comm_.rank()) continue;
    for (const Piece& q : p.pieces[r]) {
      w_.params().discard(q.lo, q.hi - q.lo);
      if (bf16_) w_.bf16_arena()->discard(q.bf16_lo, q.hi - q.lo);
    }
  }
}

void ParamSync::drop_stale_masters(int64_t lo, int64_t hi) {
  if (!bf16_) return;
  const Plan& p = plan(lo, hi);
  for (int r = 0; r < comm_.size(); ++r)
    if (r != comm_.rank())
      for (const Piece& q : p.pieces[r])
        if (q.as_bf16) w_.params().discard(q.lo, q.hi - q.lo);
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
