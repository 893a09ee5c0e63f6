// The mission's table behind `grpo bench grpo`: the same GRPO steps (a preset model, random init, on the
// built-in arithmetic prompts) run once with every optimisation on and once with them off, summarised from
// the two runs' metrics.jsonl. The optimisations and their baseline:
//   training micro-batches  packed padding-free by token budget (FFD)  | 4 sequences, padded to the longest
//   rollout batching        continuous                                  | static, padded to the longest
//   group prompts           prefilled once, KV blocks shared            | prefilled once per sample
//   prefix cache            on                                          | off
//   KV cache                bf16                                        | f32
//   decode matmuls          hand-written GEMV for small batches         | oneDNN GEMM only
//   kernels / log-probs     fused, lm_head chunked (no [T x V] logits)  | unfused, full logits
// The first step of each run is a warm-up (shape caches, workspaces) and is left out of the means.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace grpo {

struct GrpoBenchOptions {
  std::string arch = "qwen3", preset = "small";
  int64_t steps = 4;                  // training steps per run (the first is a warm-up)
  int64_t prompts = 8, n = 8;         // data.train_batch_size, rollout.n
  int64_t max_response_length = 256;  // a random model stops at its end tokens, so lengths vary
  int64_t token_budget = 2048;        // ppo_max_token_len_per_gpu of the optimised run
  int64_t micro_batch = 4;            // ppo_micro_batch_size_per_gpu of the baseline
  uint64_t seed = 0;
};

// The --set overrides of one run (over examples/arith-grpo.yaml).
std::vector<std::string> grpo_bench_overrides(const GrpoBenchOptions& o, const std::string& model_dir,
                                              const std::string& train_file, const std::string& run_dir,
                                              bool optimised);

struct GrpoBenchRun {
  int64_t steps_measured = 0;
  double step_time_s = 0, rollout_tokens_per_s = 0, packing_efficiency = 0;
  double rollout_share = 0;          // timing_s/gen / timing_s/step
  double train_tokens_per_step = 0;  // the work done, for judging the comparison
  int64_t peak_rss_bytes = 0;
  double throughput = 0;             // perf/throughput: tokens / (step time x ranks)
  double cpu_time_s = 0;             // perf/cpu_time_s: CPU seconds of all ranks per step
  bool distributed = false;          // the run had several ranks: the communication values below exist
  double comm_s = 0, comm_share = 0, comm_bytes = 0;  // timing_s/comm, perf/comm_share, perf/comm_bytes
};

// Means over the steps after the first (all steps if there is only one); peak RSS is the maximum.
GrpoBenchRun summarise_grpo_bench_run(const std::string& metrics_path);

// The human table (baseline, optimised, change, the mission's result) and the JSON object with
// step_time_s, baseline_step_time_s, rollout_tokens_per_s, baseline_rollout_tokens_per_s,
// packing_efficiency, baseline_packing_efficiency, peak_rss_bytes, baseline_peak_rss_bytes and
// comm_share (null: single process).
std::string grpo_bench_table(const GrpoBenchRun& optimised, const GrpoBenchRun& baseline);
nlohmann::json grpo_bench_json(const GrpoBenchOptions& o, const GrpoBenchRun& optimised, const GrpoBenchRun& baseline);

}  // namespace grpo
