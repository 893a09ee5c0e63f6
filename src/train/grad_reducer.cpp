// Bucketed gradient reduce-scatter driven by the backward (see grad_reducer.h).
#include "train/grad_reducer.h"

#include <algorithm>

#include "core/error.h"
#include "core/profiler.h"

namespace grpo::train {

GradReducer::GradReducer(comm::Communicator& comm, const comm::Partition& part, const ModelConfig& config,
                         const Arena& layout, comm::Wire wire, int64_t bucket_elems, bool overlap)
    : comm_(comm), part_(part), wire_(wire), overlap_(overlap), zl_(zero_layout(config, layout)) {
  GRPO_CHECK(bucket_elems >= 1, "[zero] bucket size must be at least one element, got ", bucket_elems);
  GRPO_CHECK(part.total() >= layout.numel(), "[zero] partition of ", part.total(), " elements for a layout of ",
             layout.numel());
  // Buckets of at least 4 pages start on a page boundary (4 KiB of f32 from the arena's page-aligned start),
  // so that a released bucket returns all of its pages.
  constexpr int64_t kPageElems = 1024;
  const int64_t align = bucket_elems >= 4 * kPageElems ? kPageElems : 1;
  for (int64_t hi = layout.numel(), lo; hi > 0; hi = lo) {
    lo = std::max<int64_t>(0, hi - bucket_elems) / align * align;
    buckets_.push_back({lo, hi, zl_.ready_event(lo, hi)});
  }
  // Launch order: by event, then from the layout's end down. A Qwen3-VL tower lies after the text layers
  // but is final after them, so the layout's order alone would differ from the backward's: a rank that starts
  // every bucket at once (launch_rest: no overlap, or an empty micro-batch) must post them in the order a
  // rank whose backward starts them event by event does.
  std::stable_sort(buckets_.begin(), buckets_.end(), [](const Bucket& a, const Bucket& b) { return a.event < b.event; });
  started_.assign(buckets_.size(), 1);
}

void GradReducer::arm(const float* grads, float* shard, bool accumulate) {
  GRPO_CHECK(inflight_.empty(), "[zero] arm() while buckets of the previous reduction are in flight");
  grads_ = grads;
  shard_ = shard;
  accumulate_ = accumulate;
  started_.assign(buckets_.size(), 0);
}

void GradReducer::ready(int64_t event) {
  if (!grads_) return;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    if (started_[i] || buckets_[i].event > event) continue;
    started_[i] = 1;
    inflight_.push_back(comm_.reduce_scatter(grads_, buckets_[i].lo, buckets_[i].hi, part_, shard_, wire_, accumulate_));
    inflight_bucket_.push_back(i);
  }
  if (release_) settle(kReleaseLag);
}

void GradReducer::settle(size_t keep) {
  for (; inflight_.size() - released_ > keep; ++released_) {
    comm_.wait(inflight_[released_]);
    if (release_) {
      const Bucket& b = buckets_[inflight_bucket_[released_]];
      release_->zero_and_release(b.lo, b.hi - b.lo);
    }
  }
}

void GradReducer::launch_rest() {
  ready(zl_.end_event);
  grads_ = nullptr;
}

void GradReducer::wait() {
  GRPO_PROFILE("grad_reduce_wait");
  settle(0);
  inflight_.clear();
  inflight_bucket_.clear();
  released_ = 0;
}

void GradReducer::head_done() {
  if (overlap_) ready(zl_.head_event());
}

void GradReducer::layer_done(int64_t layer) {
  if (overlap_) ready(zl_.layer_event(layer));
}

void GradReducer::vision_block_done(int64_t block) {
  if (overlap_ && !zl_.vision_blocks.empty()) ready(zl_.vision_block_event(block));
}

void GradReducer::embedding_done() {
  if (overlap_) ready(zl_.end_event);
}

}  // namespace grpo::train
