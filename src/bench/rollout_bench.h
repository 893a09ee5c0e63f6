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

// Multiply-add FLOPs of one token through the model's matmuls (2 x the matmul weights, lm_head included);
// attention over the context is left out (under 3% of it at 256 tokens of context on qwen3-0.6b).
double matmul_flops_per_token(const ModelConfig& c);

// The roofline of generation on this machine: a decode step of `batch` sequences reads every weight once
// and multiplies it `batch` times, so it takes at least max(weight bytes / DRAM bandwidth, batch x FLOPs per
// token / GEMM peak): bandwidth-bound at batch 1, compute-bound at large batches, the larger of the two in
// between. Prefill is compute-bound: at most GEMM peak / FLOPs per token tokens/s.
struct Roofline {
  double decode_tokens_per_s = 0;  // batch / the step's lower bound
  bool decode_compute_bound = false;
  double prefill_tokens_per_s = 0;
};
Roofline generation_roofline(int64_t weight_bytes, double flops_per_token, double bandwidth_bytes_per_s,
                             double gemm_peak_flops_per_s, int64_t batch);

}  // namespace grpo::rollout
