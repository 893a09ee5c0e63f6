// Karmarkar-Karp partitions and equal micro-batch counts (see balance.h).
#include "train/balance.h"

#include <algorithm>
#include <numeric>
#include <queue>

#include "core/error.h"

namespace grpo::train {

namespace {

struct Part {
  int64_t sum = 0;
  std::vector<int64_t> items;
  int64_t first() const { return items.empty() ? INT64_MAX : items.front(); }
};

// One N-way partition of some sequences: parts kept heaviest first (ties: lowest first item).
struct State {
  std::vector<Part> parts;
  int64_t id = 0;  // creation order: ties between equal spreads go to the older state
  int64_t spread() const { return parts.front().sum - parts.back().sum; }
  void sort() {
    std::sort(parts.begin(), parts.end(), [](const Part& a, const Part& b) {
      return a.sum != b.sum ? a.sum > b.sum : a.first() < b.first();
    });
  }
};

struct LessSpread {
  bool operator()(const State& a, const State& b) const {
    return a.spread() != b.spread() ? a.spread() < b.spread() : a.id > b.id;
  }
};

MicroBatch make_micro_batch(std::vector<int64_t> seqs, std::span<const int64_t> lengths, bool padded) {
  MicroBatch m;
  std::sort(seqs.begin(), seqs.end());
  int64_t longest = 0;
  for (int64_t s : seqs) {
    m.real_tokens += lengths[s];
    longest = std::max(longest, lengths[s]);
  }
  m.computed_tokens = padded ? longest * static_cast<int64_t>(seqs.size()) : m.real_tokens;
  m.sequences = std::move(seqs);
  return m;
}

}  // namespace

std::vector<std::vector<int64_t>> balanced_partitions(std::span<const int64_t> weights, int parts) {
  GRPO_CHECK(parts >= 1, "[balance] need at least one part, got ", parts);
  std::priority_queue<State, std::vector<State>, LessSpread> heap;
  int64_t next_id = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    GRPO_CHECK(weights[i] >= 0, "[balance] sequence ", i, " has weight ", weights[i]);
    State s;
    s.parts.resize(parts);
    s.parts[0] = {weights[i], {static_cast<int64_t>(i)}};
    s.id = next_id++;
    s.sort();
    heap.push(std::move(s));
  }
  if (heap.empty()) return std::vector<std::vector<int64_t>>(parts);
  while (heap.size() > 1) {
    State a = heap.top();
    heap.pop();
    State b = heap.top();
    heap.pop();
    // Heaviest part of a with the lightest of b, and so on.
    State c;
    c.parts.resize(parts);
    for (int k = 0; k < parts; ++k) {
      const Part& x = a.parts[k];
      const Part& y = b.parts[parts - 1 - k];
      c.parts[k].sum = x.sum + y.sum;
      c.parts[k].items = x.items;
      c.parts[k].items.insert(c.parts[k].items.end(), y.items.begin(), y.items.end());
      std::sort(c.parts[k].items.begin(), c.parts[k].items.end());
    }
    c.id = next_id++;
    c.sort();
    heap.push(std::move(c));
  }
  std::vector<std::vector<int64_t>> out;
  for (Part& p : const_cast<State&>(heap.top()).parts) out.push_back(std::move(p.items));
  return out;
}

void split_to_count(MicroBatchPlan& plan, std::span<const int64_t> lengths, int64_t count, bool padded) {
  GRPO_CHECK(static_cast<int64_t>(plan.micro_batches.size()) <= count, "[balance] a plan of ",
             plan.micro_batches.size(), " micro-batches cannot be brought down to ", count);
  auto& mbs = plan.micro_batches;
  while (static_cast<int64_t>(mbs.size()) < count) {
    int64_t pick = -1;
    for (size_t i = 0; i < mbs.size(); ++i)
      if (mbs[i].sequences.size() >= 2 && (pick < 0 || mbs[i].real_tokens > mbs[pick].real_tokens))
        pick = static_cast<int64_t>(i);
    if (pick < 0) break;
    std::vector<int64_t> w;
    for (int64_t s : mbs[pick].sequences) w.push_back(lengths[s]);
    const std::vector<std::vector<int64_t>> halves = balanced_partitions(w, 2);
    std::vector<int64_t> first, second;
    for (int64_t k : halves[0]) first.push_back(mbs[pick].sequences[k]);
    for (int64_t k : halves[1]) second.push_back(mbs[pick].sequences[k]);
    mbs[pick] = make_micro_batch(std::move(first), lengths, padded);
    mbs.insert(mbs.begin() + pick + 1, make_micro_batch(std::move(second), lengths, padded));
  }
  while (static_cast<int64_t>(mbs.size()) < count) mbs.push_back(MicroBatch{});
  plan.real_tokens = plan.computed_tokens = 0;
  for (const MicroBatch& m : mbs) {
    plan.real_tokens += m.real_tokens;
    plan.computed_tokens += m.computed_tokens;
  }
}

}  // namespace grpo::train
