// The state of one Engine::generate() or Engine::serve() call (engine internals, shared by engine.cpp and
// engine_serve.cpp): the requests, their sequences (a group per request), the scheduler and the step's
// sampling jobs.
#pragma once
#include <chrono>
#include <cstdint>
#include <vector>

#include "rollout/engine.h"
#include "rollout/scheduler.h"
#include "rollout/sequence.h"

namespace grpo::rollout {

struct Engine::Run {
  struct SampleJob {
    int64_t row;    // logits row
    Sequence* seq;  // the sample that draws
    SampledToken out;
  };

  Run(KvCache& kv, const EngineConfig& cfg, size_t total_seqs, const MultiTurn& turns)
      : turns(turns), scheduler(kv, cfg.token_budget, cfg.max_seqs, total_seqs) {}
  const Request& request(int32_t i) const { return *requests[i]; }
  // [requests] (serving: request slots, null when free). A request's index is its sequences' `request`.
  std::vector<const Request*> requests;
  MultiTurn turns;
  // [requests] a request's prompt sequence, then its n samples (contiguous: a prompt's sample k is at +1+k)
  std::vector<std::vector<Sequence>> groups;
  std::vector<int32_t> group_size;    // [requests] n
  std::vector<int32_t> samples_left;  // [requests]
  // Grows the per-request vectors to n requests (the scheduler's view of group_size is renewed).
  void resize(size_t n) {
    requests.resize(n, nullptr);
    groups.resize(n);
    group_size.resize(n, 0);
    samples_left.resize(n, 0);
    vision.resize(n);
    keys.resize(n);
    tickets.resize(n, 0);
    reported.resize(n);
    scheduler.set_group_size(group_size);
  }
  std::vector<PromptVision> vision;        // [requests] (vision models; empty positions: a prompt without pictures)
  std::vector<std::vector<int32_t>> keys;  // [requests] prefix-cache keys of prompts with pictures
  int64_t live_samples = 0;                // samples whose result is not complete yet
  std::vector<SampleJob> jobs;
  std::vector<Sequence*> fork_buf;
  std::vector<Sequence*> ready_buf;  // parked samples whose reply is ready
  Scheduler scheduler;
  int64_t requests_done = 0;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  bool aborted = false;
  // Serving (Engine::serve): per request slot, its feed's ticket and its samples' tokens already reported.
  std::vector<uint64_t> tickets;               // [requests]
  std::vector<std::vector<int64_t>> reported;  // [requests][n]
  std::vector<int32_t> free_slots;             // slots whose request ended, reused first
  std::vector<Admission> admit_buf;
  std::vector<uint64_t> cancel_buf;
  // Serving: the slot's request ended; its sequences and pictures are dropped and the slot is free again.
  void release_slot(size_t slot) {
    requests[slot] = nullptr;
    std::vector<Sequence>().swap(groups[slot]);
    vision[slot] = {};
    std::vector<int32_t>().swap(keys[slot]);
    reported[slot].clear();
    group_size[slot] = 0;
    free_slots.push_back(static_cast<int32_t>(slot));
  }
};

}  // namespace grpo::rollout
