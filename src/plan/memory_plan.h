// The memory plan: what a GRPO run holds in memory per rank, predicted before anything is allocated from
// the run config, the model's config.json and the data's lengths, and whether that fits the machine.
//
// Every term comes from the function the allocating code sizes its buffer with: the parameter layout
// (declare_parameters into an unallocated Arena), the shards (train::parameter_partition), the decoder's
// and the vision tower's activation layouts (Decoder::activation_bytes, VisionTower::activation_bytes),
// the micro-batch packer (train::plan_micro_batches on a rank's share), the rollout engine's KV rule (engine_config +
// rollout::kv_budget_for, of what the other terms leave: kv_base_bytes, which the run passes to its engine) and step
// workspaces (rollout::step_workspace_bytes, InferenceModel::workspace_bytes_for), and with LoRA the adapters' arena
// (LoraAdapters itself) and, for a base frozen in bf16 or for the f32 masters of a rank's shard, the f32 pages its
// loader writes (frozen_base_f32_bytes, sharded_master_f32_bytes at the arena's Buffer::commit_granularity). Only the
// process's fixed overhead (libraries, oneDNN, OpenMP, the tokenizer, the data) is measured: the RSS of the planning
// process plus a measured constant.
//
// Large buffers are reserved untouched and committed page by page as written (core/arena.h), so each term
// is what the run writes, in the worst case the config allows: every prompt as long as the data's longest,
// every response max_response_length tokens (what `rollout.ignore_eos` forces), the KV blocks this rank's
// share of the groups holds at once (within the engine's budget).
//
// Phases, and what is resident in each. A step gives back what the next phase does not read: after its
// rollout the KV cache and the rollout's workspaces (rollout::Engine::release_memory), after its update the
// training activations (Decoder::release_workspace); gradients, moments and the weights stay. ZeRO-3
// returns the other ranks' layer parameters while training and gathers them back for the next rollout.
//   load      the f32 weights and the checkpoint's mapped file
//   rollout   weights (+ bf16 shadow), KV cache, rollout workspaces, and from step 2 on the gradients, their
//             shard, the moments and communication buffers that training keeps
//   training  weights (ZeRO-3: the root, this rank's shard and a window of two layers), gradients, their
//             shard, AdamW moments, activations, communication buffers (no KV cache)
//   save      rank 0 writing a checkpoint after the step: what training keeps, the f32 weights whole again
//             and (several ranks) every rank's moments gathered in the whole layout
// The peak is the largest phase.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "config/config.h"
#include "model/config.h"

namespace grpo {

// The data's lengths the plan needs (the worst case of the data, not of the config).
struct DataLengths {
  int64_t max_prompt_tokens = 0;    // the longest encoded prompt
  int64_t max_prompt_patches = 0;   // the most vision patch rows of one prompt's pictures
  int64_t max_prompt_pictures = 0;  // the most pictures of one prompt
  int64_t val_prompts = 0;          // validation prompts (the KV budget covers them x val_kwargs.n)
};
// The config's bounds (max_prompt_length; no pictures): when the data is not read.
DataLengths config_lengths(const Config& c);
// From loaded datasets (prompt_ids encoded, picture grids known); either may be empty.
DataLengths data_lengths(const Dataset& train, const Dataset& val);

// The process's fixed overhead: this process's resident memory now (libraries, tokenizer, data loaded)
// plus what a training process adds that a planning one has not touched yet (OpenMP and MPI threads,
// oneDNN's kernels and scratch, the allocator's arenas, and the GEMM shape caches full: 2 x 256 plans of
// ~40 KiB, reached after some ten steps of new micro-batch lengths), measured on the runs of
// docs/performance.md.
int64_t measured_fixed_overhead_bytes();
constexpr int64_t kRuntimeOverheadBytes = int64_t{24} << 20;

struct MemoryPlanInputs {
  Config config;
  ModelConfig model;
  DataLengths data;
  int ranks = 1;
  int ranks_per_machine = 1;     // ranks sharing this machine's memory
  int64_t available_bytes = 0;   // MemAvailable of the machine before the run loads anything
  int64_t fixed_bytes = 0;       // the process's fixed overhead
  int64_t checkpoint_bytes = 0;  // bytes of the model's safetensors files (mapped while loading); 0: from dtype
  int64_t lora_rank = 0;         // LoRA adapters of this rank on the config's modules (0: full fine-tuning)
  int64_t lora_numel = 0;        // elements of the adapters' arena (0: lora_adapter_numel of the config)
};

// Elements of the LoRA adapters' arena (their weights; gradients and moments share its layout) for the
// config's modules (target_modules, exclude_modules, or lora_adapter_path's) at `rank`: the layout
// LoraAdapters itself lays out.
int64_t lora_adapter_numel(const Config& c, const ModelConfig& m, int64_t rank);
// Bytes of the f32 arena that a base frozen in bf16 (ModelWeights::load_frozen_bf16) writes: the granules
// of `granularity` bytes (Buffer::commit_granularity: base or huge pages) that hold a tensor other than a
// GEMM weight (norms, biases, the embedding, the vision tower).
int64_t frozen_base_f32_bytes(const ModelConfig& m, int64_t granularity);
// Bytes of the f32 arena that a rank loading the masters of the GEMM weights of its shard [lo, hi) only
// (ModelWeights::shard_gemm_masters) writes: those granules, and those of every other tensor.
int64_t sharded_master_f32_bytes(const ModelConfig& m, int64_t granularity, int64_t lo, int64_t hi);

// One row of the table: bytes per rank in each phase (0 where not resident): loading, the first rollout,
// training, the rollouts of later steps, saving a checkpoint (one process writes its whole f32 weights; on
// several ranks each writes its own files, except LoRA's moments, which rank 0 gathers).
struct MemoryTerm {
  std::string name;  // "weights", "master", ...
  int64_t load = 0, rollout_first = 0, training = 0, rollout_later = 0, save = 0;
  std::string how;   // how it is sized
};

struct MemoryPlan {
  MemoryPlanInputs in;
  std::vector<MemoryTerm> terms;
  int64_t load = 0, rollout_first = 0, training = 0, rollout_later = 0, save = 0;  // sums per phase
  int64_t peak = 0;
  std::string peak_phase;
  // Facts behind the terms, for the log and the tests.
  int64_t parameters = 0, trained_parameters = 0, shard_elems = 0;
  int64_t micro_batch_tokens = 0, micro_batch_longest = 0, kv_blocks = 0, rollout_bucket = 0;
  int64_t kv_base_bytes = 0;      // what the rest of the run leaves a rank's KV cache (may be < 0): the
                                  // base of gpu_memory_utilization, passed to the engine (EngineConfig::kv_base_bytes)
  bool kv_holds_a_sample = true;  // false: gpu_memory_utilization x kv_base_bytes holds no whole sample
  int64_t mapped_file = 0;        // the checkpoint's largest tensor, mapped while loading (shared by a machine's ranks)
  int64_t machine_bytes() const;  // what this machine must hold: every rank's peak, the mapped file once
  bool fits() const { return kv_holds_a_sample && machine_bytes() <= in.available_bytes; }
  int64_t term(const std::string& name) const;  // its largest phase value
};

MemoryPlan plan_memory(const MemoryPlanInputs& in);

// The inputs of a run about to load its weights: the config, the model's config.json and the datasets; the
// machine's MemAvailable, this process's fixed overhead, the checkpoint's file sizes; `ranks` ranks, of
// which trainer.n_gpus_per_node (or all, when 0 and trainer.nnodes is 0) share this machine.
MemoryPlanInputs memory_plan_inputs(const Config& config, const ModelConfig& model, const Dataset& train,
                                    const Dataset& val, int ranks);
// The same from the data's lengths (data_lengths of the datasets).
MemoryPlanInputs memory_plan_inputs(const Config& config, const ModelConfig& model, const DataLengths& data, int ranks);
// The plan's table, and when it does not fit, the cheapest change that makes it fit (or that none does).
std::string explain_memory_plan(const MemoryPlan& p);

// The cheapest change that makes a plan that does not fit fit: its --set overrides (and rank count) and
// the plan with it; nullopt when the plan fits or nothing tried fits. Tried in order of what it costs:
// activation checkpointing, a smaller micro-batch token budget, gradients released bucket by bucket, ZeRO-3,
// LoRA, then more ranks (one per machine, with checkpointing and ZeRO-3 or LoRA). The KV budget is no
// change of its own: it is a fraction of what the rest leaves, so the rollouts always fit.
struct PlanChange {
  std::string description;
  std::vector<std::string> sets;  // --set key=value
  int ranks = 1;
  MemoryPlan plan;
};
std::optional<PlanChange> cheapest_fitting_change(const MemoryPlanInputs& in);

// The table (one row per term, a column per phase, the peak) and the verdict.
std::string format_memory_plan(const MemoryPlan& p);
// "[memory] weights 1.2 GiB | master ... | peak 9.8 GiB (training) of 20.0 GiB available: fits"
std::string memory_log_line(const MemoryPlan& p);

}  // namespace grpo
