// Just-in-time layer gathers of ZeRO-3 (see param_windows.h).
#include "train/param_windows.h"

#include "core/profiler.h"

namespace grpo::train {

ParamWindows::ParamWindows(ParamSync& sync, const ModelConfig& config, const Arena& layout) : sync_(sync) {
  const int64_t L = config.num_hidden_layers, head = layout.offset(config.text_prefix() + "norm.weight");
  for (int64_t l = 0; l < L; ++l)
    layer_.emplace_back(layout.offset(first_layer_tensor(config, l)),
                        l + 1 < L ? layout.offset(first_layer_tensor(config, l + 1)) : head);
  root_ = {{0, layer_.empty() ? head : layer_[0].first}, {head, layout.numel()}};
  state_.assign(L, State::Whole);
  req_.resize(L);
}

void ParamWindows::reshard() {
  for (int64_t l = 0; l < static_cast<int64_t>(layer_.size()); ++l) drop(l);
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
  if (state_[l] == State::Dropped) req_[l] = sync_.start(layer_[l].first, layer_[l].second, static_cast<int>(l % 2));
  sync_.finish(layer_[l].first, layer_[l].second, static_cast<int>(l % 2), req_[l]);
  state_[l] = State::Whole;
}

void ParamWindows::prefetch(int64_t l) {
  if (l < 0 || l >= static_cast<int64_t>(layer_.size()) || state_[l] != State::Dropped) return;
  req_[l] = sync_.start(layer_[l].first, layer_[l].second, static_cast<int>(l % 2));
  state_[l] = State::Gathering;
}

void ParamWindows::drop(int64_t l) {
  if (state_[l] == State::Dropped) return;
  if (state_[l] == State::Gathering) ensure(l);  // MPI must be done writing into it
  sync_.release(layer_[l].first, layer_[l].second);
  state_[l] = State::Dropped;
}

void ParamWindows::window(int64_t l) {
  const int64_t next = backward_ ? l - 1 : l + 1;
  for (int64_t j = 0; j < static_cast<int64_t>(layer_.size()); ++j)
    if (j != l && j != next) drop(j);
  ensure(l);
  prefetch(next);
}

void ParamWindows::forward_layer(int64_t layer) { window(layer); }
void ParamWindows::backward_layer(int64_t layer) { window(layer); }

}  // namespace grpo::train
