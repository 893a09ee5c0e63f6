// Bucketed gradient reduce-scatter driven by the backward (see grad_reducer.h).
#include "train/grad_reducer.h"

#include "core/error.h"
#include "core/profiler.h"

namespace grpo::train {

GradReducer::GradReducer(comm::Communicator& comm, const comm::Partition& part, const ModelConfig& config,
                         const Arena& layout, comm::Wire wire, int64_t bucket_elems, bool overlap)
    : comm_(comm), part_(part), wire_(wire), overlap_(overlap) {
  GRPO_CHECK(bucket_elems >= 1, "[zero] bucket size must be at least one element, got ", bucket_elems);
  GRPO_CHECK(part.total() == layout.numel(), "[zero] partition of ", part.total(), " elements for a layout of ",
             layout.numel());
  for (int64_t hi = layout.numel(); hi > 0; hi -= bucket_elems) buckets_.emplace_back(std::max<int64_t>(0, hi - bucket_elems), hi);
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) layer_begin_.push_back(layout.offset(first_layer_tensor(config, l)));
  head_begin_ = layout.offset(config.text_prefix() + "norm.weight");
}

void GradReducer::arm(const float* grads, float* shard, bool accumulate) {
  GRPO_CHECK(inflight_.empty(), "[zero] arm() while buckets of the previous reduction are in flight");
  grads_ = grads;
  shard_ = shard;
  accumulate_ = accumulate;
  next_ = 0;
}

void GradReducer::ready_from(int64_t offset) {
  if (!grads_) return;
  while (next_ < buckets_.size() && buckets_[next_].first >= offset) {
    const auto [lo, hi] = buckets_[next_++];
    inflight_.push_back(comm_.reduce_scatter(grads_, lo, hi, part_, shard_, wire_, accumulate_));
  }
}

void GradReducer::launch_rest() {
  ready_from(0);
  grads_ = nullptr;
}

void GradReducer::wait() {
  GRPO_PROFILE("grad_reduce_wait");
  for (comm::Request& r : inflight_) comm_.wait(r);
  inflight_.clear();
}

void GradReducer::head_done() {
  if (overlap_) ready_from(head_begin_);
}

void GradReducer::layer_done(int64_t layer) {
  if (overlap_) ready_from(layer_begin_[layer]);
}

void GradReducer::embedding_done() {
  if (overlap_) ready_from(0);
}

}  // namespace grpo::train
