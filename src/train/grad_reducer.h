// ZeRO gradient reduction: this rank's gradients of the whole flat layout (model/weights.h) are
// reduce-scattered into its shard (comm/partition.h) in buckets of at most `bucket_elems` elements. With
// overlap, each bucket starts as soon as the backward has finished every parameter in it (DecoderHooks; which
// event finishes which range: train/zero_layout.h), so its communication runs on the communication thread
// while the backward computes the layers below; without, all buckets start after the backward. Buckets are
// cut from the end of the layout; the text decoder's completes from the head down to the embedding, a
// Qwen3-VL tower's (after the text layers) from its mergers down to its patch embedding. Buckets start in
// the order of their events, then from the layout's end down, whether the events come one by one or all at
// once (launch_rest): the same order on every rank. A bucket may be smaller than a tensor (a tensor spans
// several) or hold several small ones.
// Releasing (release_into): once a bucket's reduction is done its part of the gradient arena is zeroed by
// returning its pages to the system; at most kReleaseLag buckets are in flight behind the backward (the hook
// that starts a bucket waits for the oldest beyond that). With a reduction after every micro-batch, the
// arena then never holds the whole model's gradients: the backward's current unit and the buckets in flight.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "model/decoder.h"
#include "train/zero_layout.h"

namespace grpo::train {

class GradReducer final : public DecoderHooks {
 public:
  // `layout`: the gradient arena (declare_parameters) whose offsets the partition's elements share; the
  // partition may cover more (the parameters' layout of which a frozen tower's gradients are left out).
  GradReducer(comm::Communicator& comm, const comm::Partition& part, const ModelConfig& config, const Arena& layout,
              comm::Wire wire, int64_t bucket_elems, bool overlap);

  // Prepares one reduction of `grads` (the whole layout) into `shard` (this rank's part): accumulate adds
  // to the shard's values (one reduction per micro-batch), else overwrites them. Earlier buckets must have
  // been waited for.
  void arm(const float* grads, float* shard, bool accumulate);
  // From now on, the gradients of `grads` (the arena arm() is given) are released bucket by bucket.
  static constexpr size_t kReleaseLag = 4;
  void release_into(Arena* grads) { release_ = grads; }
  // Starts every bucket not started yet (after the backward, or at once when this rank had nothing to do).
  void launch_rest();
  // Waits for every started bucket.
  void wait();

  bool overlap() const { return overlap_; }
  size_t buckets() const { return buckets_.size(); }

  void head_done() override;
  void layer_done(int64_t layer) override;
  void vision_block_done(int64_t block) override;
  void embedding_done() override;

 private:
  void ready(int64_t event);  // every gradient final by `event` is final

  comm::Communicator& comm_;
  comm::Partition part_;
  comm::Wire wire_;
  bool overlap_;
  ZeroLayout zl_;
  struct Bucket {
    int64_t lo, hi;  // [lo, hi)
    int64_t event;   // the backward event that makes it final
  };
  std::vector<Bucket> buckets_;  // in launch order
  std::vector<uint8_t> started_;
  const float* grads_ = nullptr;
  float* shard_ = nullptr;
  bool accumulate_ = false;
  std::vector<comm::Request> inflight_;
  std::vector<size_t> inflight_bucket_;  // [inflight_] the bucket of each request
  size_t released_ = 0;                  // inflight_ entries waited for and released
  Arena* release_ = nullptr;
  void settle(size_t keep);  // waits for (and releases) in-flight buckets until at most `keep` remain
};

}  // namespace grpo::train
