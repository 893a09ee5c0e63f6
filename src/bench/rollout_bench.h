// The rollout benchmark behind `grpo bench rollout`: N random prompts x G samples of exactly L new tokens
// (sampling at temperature 1, no stop tokens), with every optimisation on, and the same work with them off
// (a static batch, each sample prefilling its own prompt, no prefix cache, f32 KV, oneDNN GEMM for every
// matmul).
#pragma once
#include <cstdint>

#include "model/decoder.h"
#include "rollout/engine.h"

namespace grpo::rollout {

struct RolloutBenchOptions {
  int64_t prompts = 16, n = 8, prompt_len = 64, max_new_tokens = 64;
  ComputeMode mode = ComputeMode::BF16;
  ops::DecodeMatmul matmul = ops::DecodeMatmul::BatchInvariant;  // of the optimised run
  uint64_t seed = 0;
  const LoraAdapters* lora = nullptr;  // adapters applied unmerged in the optimised run (null: none)
};

struct RolloutBenchResult {
  double seconds = 0, gen_tokens_per_s = 0;
  double prefill_tokens_per_s = 0;  // prefill tokens / the time spent on them (EngineStats::prefill_s)
  // Tokens of the decode steps / the time not spent on prefill: each sample's first token comes from its
  // prompt's prefill, the others from decode (the rate llama.cpp's text-generation test reports).
  double decode_tokens_per_s = 0;
  int64_t generated = 0, prefilled = 0;
  int64_t kv_bytes = 0;       // peak KV cache bytes in use
  int64_t blocks_shared = 0;  // peak number of blocks referenced by more than one sequence
};

// optimised = false runs the baseline configuration on the same prompts.
RolloutBenchResult run_rollout_bench(ModelWeights& w, const RolloutBenchOptions& opt, bool optimised);

// Bytes of weights one single-sequence decode step reads (the numerator of the bandwidth bound): every
// matmul weight once in the mode's dtype (lm_head included, which is the embedding table when tied), the
// norms and biases (f32), and one row of the f32 input embedding (an untied table is never read in full).
int64_t decode_weight_bytes(const ModelWeights& w, ComputeMode mode);

}  // namespace grpo::rollout
