// ZeRO-3 (fsdp_config.reshard_after_forward: true): during training each rank keeps only its shard of the
// decoder layers' parameters. A layer is all-gathered (in the compute dtype, train/param_sync.h) just
// before its forward or backward reads it and dropped after (its memory returned); the gather of the next
// layer in the pass runs on the communication thread meanwhile (prefetch: layer l+1 during layer l's
// forward, l-1 during its backward). The embedding and the output head (FSDP's root unit) stay whole, as
// FSDP keeps the root unsharded. The rollout needs the whole model: Actor::gather_for_rollout().
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "model/decoder.h"
#include "train/param_sync.h"

namespace grpo::train {

class ParamWindows final : public DecoderHooks {
 public:
  ParamWindows(ParamSync& sync, const ModelConfig& config, const Arena& layout);

  // Drops every layer's other shards (after the rollout, before training).
  void reshard();
  // Gathers the whole model (for the rollout): every layer whole.
  void gather_all();
  // After an optimizer step updated the shards: every layer dropped (whole copies are stale; each is gathered
  // afresh when next read) and the root gathered.
  void after_step();
  // Root regions [lo, hi) (embedding, head): kept whole while training.
  const std::vector<std::pair<int64_t, int64_t>>& root() const { return root_; }

  void forward_layer(int64_t layer) override;
  void backward_layer(int64_t layer) override;
  void head_done() override { backward_ = true; }
  void embedding_done() override { backward_ = false; }

 private:
  enum class State { Dropped, Gathering, Whole };
  void settle();  // no gather in flight (they use the staging buffers)
  // Layer l whole, its successor in the pass prefetched, every other layer dropped.
  void window(int64_t l);
  void ensure(int64_t l);
  void prefetch(int64_t l);
  void drop(int64_t l);

  ParamSync& sync_;
  std::vector<std::pair<int64_t, int64_t>> layer_;  // [lo, hi) of each layer in the layout
  std::vector<std::pair<int64_t, int64_t>> root_;
  std::vector<State> state_;
  std::vector<comm::Request> req_;
  bool backward_ = false;  // between head_done and embedding_done: the pass goes down the layers
};

}  // namespace grpo::train
