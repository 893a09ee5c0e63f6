// Events of the decoder's (and the vision tower's) passes, told to a data-parallel trainer so that it can
// gather a layer's or a tower block's parameters just before they are read (ZeRO-3) and start reducing
// gradients as soon as they are final, while the rest of the pass goes on.
//
// Order of one forward: (Qwen3-VL) the tower's blocks 0 .. depth-1, then the text layers 0 .. L-1. Of one
// backward: the output head (final norm, and lm_head unless tied), text layers L-1 .. 0, (Qwen3-VL, a trained
// tower) the tower's blocks depth-1 .. 0, then the end (the embedding, and the tower's patch and position
// embeddings). With activation checkpointing a layer's (block's) recompute comes just before its backward.
// The events do not depend on the batch: a batch without pictures (or a rank with nothing to do) still tells
// the tower's events (vision_hook_pass), so that every rank's collectives come in the same order.
#pragma once
#include <cstdint>

namespace grpo {

class DecoderHooks {
 public:
  virtual ~DecoderHooks() = default;
  virtual void forward_layer(int64_t layer) {}   // its forward (or recompute during backward) is next
  virtual void backward_layer(int64_t layer) {}  // its backward is next
  virtual void head_done() {}                    // gradients of the final norm (and untied lm_head) final
  virtual void layer_done(int64_t layer) {}      // its gradients final
  virtual void embedding_done() {}               // the embedding's gradient final: the backward is over
  // The vision tower (Qwen3-VL).
  virtual void vision_forward_block(int64_t block) {}   // its forward (or recompute during backward) is next
  virtual void vision_backward_block(int64_t block) {}  // its backward is next
  // Its gradients final, and those of the mergers it feeds (the main merger: the last block; DeepStack
  // merger k: block deepstack_visual_indexes[k]).
  virtual void vision_block_done(int64_t block) {}
};

// Tells `hooks` the tower's events of one forward (backward false) or backward pass of a tower of `depth`
// blocks without running it (a batch without pictures), in the order the tower's own pass tells them.
void vision_hook_pass(DecoderHooks& hooks, int64_t depth, bool backward, bool checkpoint_activations);

}  // namespace grpo
