// The training-step benchmark behind `grpo bench train`: full steps (forward, backward, AdamW) of
// cross-entropy on a packed batch of random tokens, with the model FLOPs of a step for GFLOP/s figures.
#pragma once
#include <cstdint>
#include <vector>

#include "core/profiler.h"
#include "model/decoder.h"

namespace grpo::train {

struct TrainBenchOptions {
  int64_t tokens = 4096;   // per step
  int64_t seq_len = 512;   // tokens split into tokens / seq_len sequences
  DecoderOptions decoder;  // mode, kernel set, checkpointing
  int warmup_steps = 1, steps = 3;
  uint64_t seed = 0;
  int64_t lora_rank = 0;  // > 0: a frozen base with LoRA adapters (alpha 2r) on all linears, trained alone
  bool profile = false;   // record the profiler's scopes over the timed steps
};

struct TrainBenchResult {
  double seconds_per_step = 0, tokens_per_s = 0;
  double flop_per_step = 0, gflops = 0;
  double first_loss = 0, last_loss = 0;
  size_t activation_bytes = 0;  // decoder workspace
  std::vector<ScopeSummary> profile;  // with TrainBenchOptions::profile: per scope, over all timed steps
};

// Model FLOPs of one training step (3x the forward: matmuls incl. the output layer, and causal attention).
double training_step_flops(const ModelConfig& c, const std::vector<int64_t>& seq_lens);
TrainBenchResult run_train_bench(ModelWeights& w, const TrainBenchOptions& opt);

}  // namespace grpo::train
