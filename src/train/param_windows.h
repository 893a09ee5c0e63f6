// ZeRO-3 (fsdp_config.reshard_after_forward: true): during training each rank keeps only its shard of the
// decoder layers' parameters and (Qwen3-VL) of the vision tower's blocks. A unit (layer or block) is
// all-gathered (in the compute dtype, train/param_sync.h) just before its forward or backward reads it and
// dropped after (its memory returned); the gather of the next unit in the pass runs on the communication
// thread meanwhile (prefetch: the next unit of the forward during a forward, the previous during a backward;
// the forward goes through the tower's blocks, then the text layers; the backward through the text layers,
// then the tower's blocks when the tower is trained). The root (train/zero_layout.h: the embedding, the
// output head, the tower's patch and position embeddings and mergers) stays whole, as FSDP keeps its root
// unit unsharded. The rollout needs the whole model: Actor::gather_for_rollout().
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "model/decoder.h"
#include "train/param_sync.h"
#include "train/zero_layout.h"

namespace grpo::train {

class ParamWindows final : public DecoderHooks {
 public:
  // `tower_backward`: the backward goes into the tower (a trained tower; else its blocks are read by the
  // forward only).
  ParamWindows(ParamSync& sync, const ModelConfig& config, const Arena& layout, bool tower_backward);

  // Drops every layer's other shards (after the rollout, before training).
  void reshard();
  // bf16 mode, once the shadow is made: the f32 copies of the other ranks' GEMM weights of every unit go
  // (ParamSync::drop_stale_masters), so that not even the first rollout holds the whole f32 model.
  void drop_stale_masters();
  // Gathers the whole model (for the rollout): every layer whole.
  void gather_all();
  // After an optimizer step updated the shards: every layer dropped (whole copies are stale; each is gathered
  // afresh when next read) and the root gathered.
  void after_step();
  // Root regions [lo, hi) (embedding, head): kept whole while training.
  const std::vector<std::pair<int64_t, int64_t>>& root() const { return root_; }

  void forward_layer(int64_t layer) override { window(layer); }
  void backward_layer(int64_t layer) override { window(layer); }
  void vision_forward_block(int64_t block) override { window(text_layers_ + block); }
  void vision_backward_block(int64_t block) override { window(text_layers_ + block); }
  void head_done() override { backward_ = true; }
  void embedding_done() override { backward_ = false; }

 private:
  enum class State { Dropped, Gathering, Whole };
  void settle();  // no gather in flight (they use the staging buffers)
  // Unit u (text layer l: l; tower block b: L + b) whole, its successor in the pass prefetched, every other
  // unit dropped.
  void window(int64_t u);
  int64_t next_unit(int64_t u) const;  // -1: none
  void ensure(int64_t l);
  void prefetch(int64_t l);
  void drop(int64_t l);

  ParamSync& sync_;
  std::vector<std::pair<int64_t, int64_t>> layer_;  // [lo, hi) of each unit in the layout: layers, then blocks
  int64_t text_layers_ = 0;
  bool tower_backward_ = false;
  std::vector<std::pair<int64_t, int64_t>> root_;
  std::vector<State> state_;
  std::vector<comm::Request> req_;
  bool backward_ = false;  // between head_done and embedding_done: the pass goes down the layers
};

}  // namespace grpo::train
