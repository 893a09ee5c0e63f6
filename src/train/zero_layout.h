// The flat parameter layout (model/weights.h) as ZeRO sees it: which ranges each event of the backward
// (model/decoder_hooks.h) makes final, for the gradient reducer's buckets, and which ranges ZeRO-3 gathers
// just in time (the text layers and the vision tower's blocks) or keeps whole (the root: the embedding, the
// output head, and the tower's patch and position embeddings and its mergers, as FSDP wraps the decoder
// layers and vision blocks as units and leaves the rest to the root unit).
//
// Layout order: embedding, text layers 0 .. L-1, final norm (and lm_head), then (Qwen3-VL, unless the arena
// was declared without it) the tower: patch embedding, position table, blocks 0 .. depth-1, merger, DeepStack
// mergers. Backward events, numbered in the order they come: the head (0), text layers L-1 .. 0 (1 .. L),
// tower blocks depth-1 .. 0 (L+1 .. L+depth), the end (L+depth+1: embedding, patch and position embeddings).
// The main merger is final with the tower's last block, DeepStack merger k with the block that feeds it.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "core/arena.h"
#include "model/config.h"

namespace grpo::train {

using Range = std::pair<int64_t, int64_t>;  // [lo, hi) in layout elements

struct ZeroLayout {
  struct Segment {
    Range range;
    int64_t event;  // the backward event after which its gradients are final
  };
  std::vector<Segment> segments;     // ascending, covering [0, numel) (alignment padding included)
  std::vector<Range> layers;         // text layer l
  std::vector<Range> vision_blocks;  // tower block b (empty when the layout has no tower)
  std::vector<Range> root;           // everything else
  int64_t text_layers = 0;
  int64_t tower_blocks = 0;  // the tower's depth (0 when the layout has no tower)
  int64_t end_event = 0;

  int64_t head_event() const { return 0; }
  int64_t layer_event(int64_t l) const { return text_layers - l; }
  int64_t vision_block_event(int64_t b) const { return text_layers + tower_blocks - b; }
  // The event after which every gradient of [lo, hi) is final.
  int64_t ready_event(int64_t lo, int64_t hi) const;
};

ZeroLayout zero_layout(const ModelConfig& c, const Arena& layout);

}  // namespace grpo::train
