// Continuous-batching scheduler with preemption by recompute (see scheduler.h).
#include "rollout/scheduler.h"

#include <algorithm>

#include "core/error.h"

namespace grpo::rollout {

namespace {
// Older first: admission order (never admitted = last), then sample index within a group.
bool older(const Sequence* a, const Sequence* b) {
  const uint64_t sa = static_cast<uint64_t>(a->start_order), sb = static_cast<uint64_t>(b->start_order);  // -1: max
  return sa != sb ? sa < sb : a->sample < b->sample;
}
}  // namespace

Scheduler::Scheduler(KvCache& kv, int64_t token_budget, int64_t max_seqs, size_t capacity)
    : kv_(kv), token_budget_(token_budget), max_seqs_(max_seqs) {
  running_.reserve(capacity);
  waiting_.reserve(capacity);
  parked_.reserve(capacity);
  plan_.reserve(max_seqs);
  key_buf_.resize(kv.block_size());
}

std::span<const int32_t> Scheduler::block_keys(const Sequence* seq, int64_t i) {
  const int64_t bs = kv_.block_size(), first = i * bs;
  const int32_t* tokens = seq->tokens.data() + first;
  if (!seq->prompt_keys || first >= seq->prompt_len) return {tokens, static_cast<size_t>(bs)};
  for (int64_t j = 0; j < bs; ++j) key_buf_[j] = first + j < seq->prompt_len ? seq->prompt_keys[first + j] : tokens[j];
  return key_buf_;
}

void Scheduler::add(Sequence* seq) { waiting_.insert(std::upper_bound(waiting_.begin(), waiting_.end(), seq, older), seq); }

int64_t Scheduler::weight(const Sequence* seq) const { return seq->is_prompt() ? group_size_[seq->request] : 1; }

int64_t Scheduler::running_weight() const {
  int64_t w = 0;
  for (const Sequence* s : running_) w += weight(s);
  return w;
}

void Scheduler::release_blocks(Sequence* seq) {
  // last block first, so that a chain's first blocks are the last to be evicted from the prefix cache
  for (auto it = seq->blocks.rbegin(); it != seq->blocks.rend(); ++it) kv_.release(*it);
  seq->blocks.clear();
  seq->block_hashes.clear();
  seq->num_computed = 0;
}

bool Scheduler::reserve_blocks(Sequence* seq, int64_t n) {
  const int64_t bs = kv_.block_size(), first = seq->num_computed, last = first + n;
  const int64_t need = std::max<int64_t>(0, (last + bs - 1) / bs - static_cast<int64_t>(seq->blocks.size()));
  const bool cow = first % bs != 0 && kv_.ref_count(seq->blocks[first / bs]) > 1;
  if (kv_.available_blocks() < need + (cow ? 1 : 0)) return false;
  if (cow) {  // the partly filled last block is shared (a group's prompt): copy before writing into it
    const int32_t shared = seq->blocks[first / bs], own = kv_.allocate();
    ops::paged_kv_copy_block(kv_.view(), shared, own, first % bs);
    kv_.release(shared);
    seq->blocks[first / bs] = own;
  }
  for (int64_t i = 0; i < need; ++i) seq->blocks.push_back(kv_.allocate());
  return true;
}

void Scheduler::match_prefix(Sequence* seq) {
  if (!kv_.prefix_cache_enabled() || seq->scores_prompt) return;  // a scored prompt computes every row
  const int64_t bs = kv_.block_size();
  const int64_t max_blocks = (static_cast<int64_t>(seq->tokens.size()) - 1) / bs;  // keep one token to compute
  uint64_t parent = 0;
  for (int64_t i = 0; i < max_blocks; ++i) {
    const std::span<const int32_t> toks = block_keys(seq, i);
    const uint64_t h = KvCache::hash_block(parent, toks);
    const int32_t b = kv_.lookup(h, parent, toks);
    if (b < 0) break;
    seq->blocks.push_back(b);
    seq->block_hashes.push_back(h);
    parent = h;
  }
  seq->num_computed = static_cast<int64_t>(seq->blocks.size()) * bs;
}

void Scheduler::register_full_blocks(Sequence* seq) {
  if (!kv_.prefix_cache_enabled()) return;
  const int64_t bs = kv_.block_size();
  for (int64_t i = static_cast<int64_t>(seq->block_hashes.size()); (i + 1) * bs <= seq->num_computed; ++i) {
    const std::span<const int32_t> toks = block_keys(seq, i);
    const uint64_t parent = i > 0 ? seq->block_hashes[i - 1] : 0;
    const uint64_t h = KvCache::hash_block(parent, toks);
    kv_.insert(seq->blocks[i], h, parent, toks);
    seq->block_hashes.push_back(h);
  }
}

void Scheduler::preempt(Sequence* seq) {
  auto planned = std::find_if(plan_.begin(), plan_.end(), [seq](const ScheduledSeq& p) { return p.seq == seq; });
  if (planned != plan_.end()) plan_.erase(planned);
  release_blocks(seq);
  running_.erase(std::find(running_.begin(), running_.end(), seq));
  seq->running = false;
  ++seq->preemptions;
  ++preemptions_;
  add(seq);
}

bool Scheduler::preempt_parked() {
  for (auto it = parked_.rbegin(); it != parked_.rend(); ++it) {
    Sequence* seq = *it;
    if (seq->blocks.empty()) continue;
    release_blocks(seq);
    ++seq->preemptions;
    ++preemptions_;
    return true;
  }
  return false;
}

void Scheduler::park(Sequence* seq) {
  auto it = std::find(running_.begin(), running_.end(), seq);
  GRPO_CHECK(it != running_.end(), "[scheduler] park of a sequence that is not running");
  running_.erase(it);
  seq->running = false;
  parked_.insert(std::upper_bound(parked_.begin(), parked_.end(), seq, older), seq);
}

void Scheduler::resume(Sequence* seq) {
  auto it = std::find(parked_.begin(), parked_.end(), seq);
  GRPO_CHECK(it != parked_.end(), "[scheduler] resume of a sequence that is not parked");
  parked_.erase(it);
  if (seq->blocks.empty()) {  // preempted while parked: recomputed from its tokens
    add(seq);
    return;
  }
  running_.insert(std::upper_bound(running_.begin(), running_.end(), seq, older), seq);
  seq->running = true;
}

std::span<const ScheduledSeq> Scheduler::schedule() {
  plan_.clear();
  auto budget_left = [&] {
    int64_t used = 0;
    for (const ScheduledSeq& p : plan_) used += p.num_tokens;
    return token_budget_ - used;
  };
  // A scored prompt's chunk: at most the scored rows left this step (0: it waits for the next step).
  int64_t scored_left = kMaxScoredRows;
  auto chunk = [&](const Sequence* s, int64_t budget) {
    const int64_t n = std::min(s->remaining(), budget);
    if (!s->scores_prompt || s->num_computed >= s->prompt_len - 1) return n;
    return std::min(n, scored_left);
  };
  auto take_scored = [&](const ScheduledSeq& p) { scored_left -= p.scored_rows(); };
  bool preempted = false;
  for (int pass = 0; pass < 2; ++pass) {  // decodes first, then running prefills
    for (size_t i = 0; i < running_.size(); ++i) {
      Sequence* s = running_[i];
      if ((s->remaining() == 1) != (pass == 0)) continue;
      const int64_t budget = budget_left();
      if (budget == 0 || static_cast<int64_t>(plan_.size()) >= max_seqs_) break;
      const int64_t n = chunk(s, budget);
      if (n == 0) continue;
      bool self = false;
      while (!self && !reserve_blocks(s, n)) {
        preempted = true;
        if (preempt_parked()) continue;  // idle blocks go first
        Sequence* victim = running_.back();  // the most recently started
        self = victim == s;
        preempt(victim);
      }
      if (self) break;  // s was the newest running sequence
      plan_.push_back({s, n, s->num_computed + n == static_cast<int64_t>(s->tokens.size())});
      take_scored(plan_.back());
    }
  }
  // Waiting sequences join unless this step had to preempt (blocks are short).
  while (!preempted && !waiting_.empty() && static_cast<int64_t>(plan_.size()) < max_seqs_) {
    const int64_t budget = budget_left();
    if (budget == 0) break;
    Sequence* s = waiting_.front();
    if (!running_.empty() && running_weight() + weight(s) > max_seqs_) break;
    match_prefix(s);
    const int64_t n = chunk(s, budget);
    if (n == 0 || !reserve_blocks(s, n)) {
      release_blocks(s);
      break;
    }
    waiting_.erase(waiting_.begin());
    if (s->start_order < 0) s->start_order = next_start_++;
    running_.insert(std::upper_bound(running_.begin(), running_.end(), s, older), s);
    s->running = true;
    plan_.push_back({s, n, s->num_computed + n == static_cast<int64_t>(s->tokens.size())});
    take_scored(plan_.back());
  }
  return plan_;
}

void Scheduler::commit() {
  for (const ScheduledSeq& p : plan_) {
    p.seq->num_computed += p.num_tokens;
    register_full_blocks(p.seq);
  }
}

void Scheduler::fork(Sequence* prompt, std::span<Sequence*> samples) {
  GRPO_CHECK(prompt->is_prompt() && prompt->running && !samples.empty(), "[scheduler] fork of a non-running prompt");
  auto pos = std::find(running_.begin(), running_.end(), prompt);
  for (size_t k = 0; k < samples.size(); ++k) {
    Sequence* s = samples[k];
    s->blocks.assign(prompt->blocks.begin(), prompt->blocks.end());
    s->block_hashes.assign(prompt->block_hashes.begin(), prompt->block_hashes.end());
    if (k > 0)
      for (int32_t b : s->blocks) kv_.retain(b);  // sample 0 takes over the prompt's references
    s->num_computed = prompt->num_computed;
    s->start_order = prompt->start_order;
    s->running = true;
  }
  *pos = samples[0];
  running_.insert(pos + 1, samples.begin() + 1, samples.end());
  prompt->blocks.clear();
  prompt->block_hashes.clear();
  prompt->running = false;
}

void Scheduler::finish(Sequence* seq) {
  release_blocks(seq);
  auto it = std::find(running_.begin(), running_.end(), seq);
  if (it != running_.end()) running_.erase(it);
  auto w = std::find(waiting_.begin(), waiting_.end(), seq);
  if (w != waiting_.end()) waiting_.erase(w);
  auto p = std::find(parked_.begin(), parked_.end(), seq);
  if (p != parked_.end()) parked_.erase(p);
  seq->running = false;
}

}  // namespace grpo::rollout
