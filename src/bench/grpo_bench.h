// The ablation table behind `grpo bench grpo`: the same GRPO steps (a preset model, random init, on the
// built-in arithmetic prompts; with --vl a Qwen3-VL model on the shapes task's pictures) run with every
// optimisation on, with each one turned off alone (what it
// adds on its own), and with all of them off (the baseline), summarised from each run's metrics.jsonl.
// The optimisations (switches) and their baseline values:
//   training micro-batches  packed padding-free by token budget (FFD)  | fixed size, memory-matched
//   padding                 removed                                     | each micro-batch padded to its longest
//   kernels / log-probs     fused, lm_head chunked (no [T x V] logits)  | unfused, full logits
//   rollout batching        continuous                                  | static, padded to the longest
//   group prompts           prefilled once, KV blocks shared            | prefilled once per sample
//   prefix cache            on                                          | off
//   KV cache                bf16                                        | f32
//   decode matmuls          hand-written batch-invariant GEMV/GEMM      | oneDNN GEMM only
// Fair by construction: every run sizes its KV cache by the same rule (engine_config: what the step can
// use, capped by the memory fraction); the baseline's fixed micro-batch holds as many full-length
// sequences as the optimised run's token budget (the same activation memory); responses ignore stop tokens
// so every run generates and trains on exactly the same number of tokens per step: all of them
// max_response_length long (lengths "fixed"), or each as long as drawn for it from the reference run's
// long-tailed distribution (lengths "long_tail", rollout/response_lengths.h: the same lengths in every run, in
// a different order). The first step of each run is a warm-up (shape caches, workspaces) and is left out of
// the means.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace grpo {

struct GrpoBenchOptions {
  bool vl = false;                    // Qwen3-VL (arch qwen3-vl) on the shapes task's pictures and questions
  std::string arch = "qwen3", preset = "small";
  std::string dtype = "bf16";         // mixed_precision.enabled (bf16) or f32, the same in every run
  int64_t steps = 3;                  // training steps per run (the first is a warm-up)
  int64_t prompts = 8, n = 8;         // data.train_batch_size, rollout.n
  int64_t mini_batch_prompts = 0;     // ppo_mini_batch_size (0: prompts, one optimizer update per step)
  int64_t max_prompt_length = 0;      // 0: the task's bound (arith 48, shapes 128: chat turn + picture tokens)
  int64_t max_response_length = 256;  // the responses' limit (stop tokens ignored)
  std::string lengths = "fixed";      // fixed: every response max_response_length long; long_tail: drawn
  int64_t micro_batch = 8;            // the baseline's fixed micro-batch (sequences; divides prompts x n)
  bool ablation = true;               // also one run per optimisation turned off alone
  uint64_t seed = 0;
};

// One optimisation: the config key and its value when on (optimised) and off (baseline).
struct GrpoBenchSwitch {
  std::string name, key, on, off;
};
const std::vector<GrpoBenchSwitch>& grpo_bench_switches();

// The options with the task's defaults filled in (--vl: arch qwen3-vl; max_prompt_length); refuses sizes
// below 1 (steps, prompts, n, lengths, micro-batch) and a mini-batch that does not divide the prompts,
// naming `command` ("bench grpo", "bench dist").
GrpoBenchOptions grpo_bench_defaults(GrpoBenchOptions o, const char* command = "bench grpo");

// The optimised run's micro-batch token budget (ppo_max_token_len_per_gpu): what the baseline's fixed
// micro-batch of full-length sequences holds, micro_batch x (max_prompt_length + max_response_length), so
// both runs have the same activation memory.
int64_t memory_matched_token_budget(const GrpoBenchOptions& o);

// The --set overrides of one run (over examples/arith-grpo.yaml): every switch on except those named in
// `off` (grpo_bench_switches() names; all of them: the baseline).
std::vector<std::string> grpo_bench_overrides(const GrpoBenchOptions& o, const std::string& model_dir,
                                              const std::string& train_file, const std::string& run_dir,
                                              const std::vector<std::string>& off);

struct GrpoBenchRun {
  std::string label;                 // "all on", "<switch> off", "all off"
  int64_t steps_measured = 0;
  double step_time_s = 0, rollout_tokens_per_s = 0, packing_efficiency = 0;
  double rollout_share = 0;          // timing_s/gen / timing_s/step
  double train_tokens_per_step = 0;  // the work done: the same in every run
  int64_t peak_rss_bytes = 0;
  // Qwen3-VL: the vision tower's time in the rollout (forward, once per prompt and picture) and in training
  // (forward and backward), patch rows and training FLOPs, per step.
  bool vision = false;
  double vision_gen_s = 0, vision_train_s = 0, vision_gen_patches = 0, vision_train_patches = 0,
         vision_train_flops = 0;
  double throughput = 0;             // perf/throughput: tokens / (step time x ranks)
  double cpu_time_s = 0;             // perf/cpu_time_s: CPU seconds of all ranks per step
  bool distributed = false;          // the run had several ranks: the communication values below exist
  double comm_s = 0, comm_share = 0, comm_bytes = 0;  // timing_s/comm, perf/comm_share, perf/comm_bytes
};

// Means over the steps after the first (all steps if there is only one); peak RSS is the maximum.
GrpoBenchRun summarise_grpo_bench_run(const std::string& metrics_path);

// The human tables: every run against the all-on run (what each optimisation adds on its own), then the
// summary (baseline = all off, optimised = all on, change) beside what the reference run reached with the
// same optimisations (a Qwen3-VL-8B GRPO run on 8 accelerators: step -31%, rollout +45.6%, memory
// utilisation 68% -> 85%).
// v printed with a printf format of one double ("%.2f"), for the tables.
std::string format_number(const char* printf_format, double v);

std::string grpo_bench_ablation_table(const std::vector<GrpoBenchRun>& runs);
std::string grpo_bench_table(const GrpoBenchRun& optimised, const GrpoBenchRun& baseline);
// The vision tower rows (--vl): its time in rollout and in training, each as a share of the step, and its
// training throughput (patches/s, GFLOP/s, the fraction of `gemm_peak_gflops`, a 2048^3 GEMM measured in
// the same run).
std::string grpo_bench_vision_table(const GrpoBenchRun& optimised, double gemm_peak_gflops);
// The JSON object: step_time_s, baseline_step_time_s, rollout_tokens_per_s, baseline_rollout_tokens_per_s,
// packing_efficiency, baseline_packing_efficiency, peak_rss_bytes, baseline_peak_rss_bytes, comm_share
// (null: single process), `runs` (every run's summary, ablations included) and, for --vl, `vision` (the
// optimised run's tower: vision_gen_s, vision_train_s, shares of the step, patches/s, GFLOP/s, the GEMM peak
// and the fraction of it).
nlohmann::json grpo_bench_json(const GrpoBenchOptions& o, const GrpoBenchRun& optimised, const GrpoBenchRun& baseline,
                               const std::vector<GrpoBenchRun>& runs = {}, double gemm_peak_gflops = 0);

}  // namespace grpo
