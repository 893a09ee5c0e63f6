// Continuous-batching scheduler of the rollout engine. Each step it picks, under a token budget and a
// maximum number of sequences: first the running sequences that decode one token, then running prefills
// (in chunks), then waiting sequences (preempted ones first, oldest first; then new ones in order). It
// allocates their blocks (copy-on-write of a shared partly filled block, prefix-cache reuse on admission).
// When blocks run out it preempts the most recently started sequences: their blocks are released and
// they wait to be recomputed from their tokens (their RNG state is kept, so their results do not change).
// Multi-turn samples whose turn ended with a tool call are parked: out of the steps, their blocks kept (and
// counted, as they are taken from the cache). When blocks run out parked samples are preempted first (the
// most recently started first): they keep waiting for their reply, and are recomputed after it.
#pragma once
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "rollout/kv_cache.h"
#include "rollout/sequence.h"

namespace grpo::rollout {

// Tokens of prompts being scored (Request::prompt_logprobs) processed per step at most: each needs its own row
// of logits [V].
constexpr int64_t kMaxScoredRows = 64;

struct ScheduledSeq {
  Sequence* seq;
  int64_t num_tokens;  // tokens [num_computed, num_computed + num_tokens) are processed this step
  bool wants_logits;   // the chunk reaches the last known token: its logits give the next token
  // Prompt scoring: the chunk's rows before the prompt's last token, whose logits score the next prompt token.
  int64_t scored_rows() const {
    if (!seq->scores_prompt) return 0;
    return std::max<int64_t>(0, std::min(seq->num_computed + num_tokens, seq->prompt_len - 1) - seq->num_computed);
  }
};

class Scheduler {
 public:
  // capacity: the most sequences that can ever be queued (all prompts and samples of a generate call).
  Scheduler(KvCache& kv, int64_t token_budget, int64_t max_seqs, size_t capacity);

  void add(Sequence* seq);  // a new sequence, waiting
  // The next step's work (empty when nothing is left). Sequences may be preempted while planning.
  std::span<const ScheduledSeq> schedule();
  // After the step ran: marks the planned tokens computed and records newly full blocks in the prefix cache.
  void commit();
  // Replaces a prompt sequence that got its first logits by its samples (which take over its blocks).
  void fork(Sequence* prompt, std::span<Sequence*> samples);
  // Removes a finished (or aborted) sequence and releases its blocks.
  void finish(Sequence* seq);
  // Takes a running sample out of the steps while its turn's reply is prepared; its blocks stay.
  void park(Sequence* seq);
  // A parked sample whose new tokens (the reply) are appended: it prefills them next (recomputes from its
  // tokens when it was preempted while parked).
  void resume(Sequence* seq);

  bool idle() const { return running_.empty() && waiting_.empty() && parked_.empty(); }
  std::span<Sequence* const> parked() const { return parked_; }
  int64_t preemptions() const { return preemptions_; }
  // The group weight of a sequence for max_seqs: a prompt stands for its n samples.
  void set_group_size(std::span<const int32_t> n_per_request) { group_size_ = n_per_request; }

 private:
  bool reserve_blocks(Sequence* seq, int64_t n);
  void match_prefix(Sequence* seq);
  void register_full_blocks(Sequence* seq);
  void preempt(Sequence* seq);
  bool preempt_parked();  // releases the newest parked sample's blocks; false when none holds any
  void release_blocks(Sequence* seq);
  // The prefix-cache key tokens of block i of seq (its tokens, or its prompt's picture keys).
  std::span<const int32_t> block_keys(const Sequence* seq, int64_t i);
  int64_t weight(const Sequence* seq) const;
  int64_t running_weight() const;

  KvCache& kv_;
  int64_t token_budget_, max_seqs_;
  std::span<const int32_t> group_size_;
  std::vector<Sequence*> running_;  // sorted by (start_order, sample)
  std::vector<Sequence*> waiting_;  // next to admit first
  std::vector<Sequence*> parked_;   // sorted by (start_order, sample)
  std::vector<ScheduledSeq> plan_;
  std::vector<int32_t> key_buf_;  // [block_size] block_keys of a block mixing picture keys and tokens
  int64_t next_start_ = 0, preemptions_ = 0;
};

}  // namespace grpo::rollout
