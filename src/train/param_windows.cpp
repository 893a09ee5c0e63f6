// Just-in-time layer gathers of ZeRO-3 (see param_windows.h).
#include "train/param_windows.h"

#include "core/profiler.h"

namespace grpo::train {

ParamWindows::ParamWindows(ParamSync& sync, const ModelConfig& config, const Arena& layout, bool tower_backward)
    : sync_(sync) {
  const ZeroLayout z = zero_layout(config, layout);
  layer_ = z.layers;
  layer_.insert(layer_.end(), z.vision_blocks.begin(), z.vision_blocks.end());
  root_ = z.root;
  text_layers_ = z.text_layers;
  tower_backward_ = tower_backward && !z.vision_blocks.empty();
  state_.assign(layer_.size(), State::Whole);
  req_.resize(layer_.size());
}

int64_t ParamWindows::next_unit(int64_t u) const {
  const int64_t L = text_layers_, units = static_cast<int64_t>(layer_.size());
  if (u < L) {  // a text layer
    if (!backward_) return u + 1 < L ? u + 1 : -1;
    if (u > 0) return u - 1;
    return tower_backward_ ? units - 1 : -1;  // the tower's last block follows text layer 0
  }
  if (backward_) return u > L ? u - 1 : -1;
  return u + 1 < units ? u + 1 : (L > 0 ? 0 : -1);  // text layer 0 follows the tower's last block
}

void ParamWindows::reshard() {
  for (int64_t l = 0; l < static_cast<int64_t>(layer_.size()); ++l) drop(l);
}

void ParamWindows::drop_stale_masters() {
  for (const auto& [lo, hi] : layer_) sync_.drop_stale_masters(lo, hi);
}

void ParamWindows::settle() {
  for (int64_t l = 0; l < static_cast<int64_t>(layer_.size()); ++l)
    if (state_[l] == State::Gathering) ensure(l);  // a prefetch in flight: let it land first
}

void ParamWindows::gather_all() {
  settle();
  sync_.run();
  state_.assign(layer_.size(), State::Whole);
}

void ParamWindows::after_step() {
  reshard();
  for (const auto& [lo, hi] : root_) {
    comm::Request r = sync_.start(lo, hi, 0);
    sync_.finish(lo, hi, 0, r);
  }
}

void ParamWindows::ensure(int64_t l) {
  if (state_[l] == State::Whole) return;
  GRPO_PROFILE("zero3_gather_wait");
  if (state_[l] == State::Dropped) {
    for (int64_t j = 0; j < static_cast<int64_t>(layer_.size()); ++j)  // its staging slot must be free
      if (j != l && j % 2 == l % 2 && state_[j] == State::Gathering) ensure(j);
    req_[l] = sync_.start(layer_[l].first, layer_[l].second, static_cast<int>(l % 2));
  }
  sync_.finish(layer_[l].first, layer_[l].second, static_cast<int>(l % 2), req_[l]);
  state_[l] = State::Whole;
}

void ParamWindows::prefetch(int64_t l) {
  if (l < 0 || l >= static_cast<int64_t>(layer_.size()) || state_[l] != State::Dropped) return;
  for (int64_t j = 0; j < static_cast<int64_t>(layer_.size()); ++j)
    if (j != l && j % 2 == l % 2 && state_[j] == State::Gathering) ensure(j);
  req_[l] = sync_.start(layer_[l].first, layer_[l].second, static_cast<int>(l % 2));
  state_[l] = State::Gathering;
}

void ParamWindows::drop(int64_t l) {
  if (state_[l] == State::Dropped) return;
  if (state_[l] == State::Gathering) ensure(l);  // MPI must be done writing into it
  sync_.release(layer_[l].first, layer_[l].second);
  state_[l] = State::Dropped;
}

void ParamWindows::window(int64_t u) {
  const int64_t next = next_unit(u);
  for (int64_t j = 0; j < static_cast<int64_t>(layer_.size()); ++j)
    if (j != u && j != next) drop(j);
  ensure(u);
  prefetch(next);
}

}  // namespace grpo::train
