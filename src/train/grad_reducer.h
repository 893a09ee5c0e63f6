// ZeRO gradient reduction: this rank's gradients of the whole flat layout (model/weights.h) are
// reduce-scattered into its shard (comm/partition.h) in buckets of at most `bucket_elems` elements. With
// overlap, each bucket starts as soon as the backward has finished every parameter in it (DecoderHooks),
// so its communication runs on the communication thread while the backward computes the layers below;
// without, all buckets start after the backward. Buckets are cut from the end of the layout, the order
// in which the backward completes it: head, layer L-1, ..., layer 0, embedding. A bucket may be smaller
// than a tensor (a tensor spans several buckets) or hold several small ones.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "model/decoder.h"

namespace grpo::train {

class GradReducer final : public DecoderHooks {
 public:
  // `layout`: the parameter arena (declare_parameters) whose offsets the gradients share.
  GradReducer(comm::Communicator& comm, const comm::Partition& part, const ModelConfig& config, const Arena& layout,
              comm::Wire wire, int64_t bucket_elems, bool overlap);

  // Prepares one reduction of `grads` (the whole layout) into `shard` (this rank's part): accumulate adds
  // to the shard's values (one reduction per micro-batch), else overwrites them. Earlier buckets must have
  // been waited for.
  void arm(const float* grads, float* shard, bool accumulate);
  // Starts every bucket not started yet (after the backward, or at once when this rank had nothing to do).
  void launch_rest();
  // Waits for every started bucket.
  void wait();

  bool overlap() const { return overlap_; }
  size_t buckets() const { return buckets_.size(); }

  void head_done() override;
  void layer_done(int64_t layer) override;
  void embedding_done() override;

 private:
  void ready_from(int64_t offset);  // every gradient at offsets >= offset is final

  comm::Communicator& comm_;
  comm::Partition part_;
  comm::Wire wire_;
  bool overlap_;
  std::vector<std::pair<int64_t, int64_t>> buckets_;  // [lo, hi), from the end of the layout down
  std::vector<int64_t> layer_begin_;                   // offset of each layer's first tensor
  int64_t head_begin_ = 0;                             // offset of the final norm
  const float* grads_ = nullptr;
  float* shard_ = nullptr;
  bool accumulate_ = false;
  size_t next_ = 0;  // next bucket to start
  std::vector<comm::Request> inflight_;
};

}  // namespace grpo::train
