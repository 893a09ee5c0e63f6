// The one place that turns the run configuration into each part's own options: the decoder, the optimizer,
// the actor's micro-batching and data parallelism, the policy objective and advantages, the rollout engine,
// LoRA, and the run's step counts. SFT, GRPO, the memory plan and the run check all build their parts here.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "config/config.h"
#include "model/config.h"
#include "model/decoder.h"
#include "model/lora.h"
#include "rollout/engine.h"
#include "train/actor.h"
#include "train/optimizer.h"

namespace grpo {

// The decoder as the actor trains it: bf16 GEMM inputs under mixed_precision.enabled, activation
// checkpointing (model.enable_gradient_checkpointing), the unfused baseline kernels when
// model.use_fused_kernels is false. The logit scale is 1 (SFT, the memory plan).
DecoderOptions decoder_options(const Config& c);
// GRPO's actor: as decoder_options, with the rollout's temperature applied to the logits, since the rollout
// records log-probs under softmax(logits / T) (softmax(logits) when greedy, T = 0).
DecoderOptions grpo_decoder_options(const Config& c);

// AdamW of GRPO's actor (actor.optim: lr, betas, eps, weight_decay; actor.grad_clip) and of SFT (sft.lr,
// sft.weight_decay, sft.grad_clip, PyTorch's betas and eps).
train::AdamWConfig grpo_adamw_config(const Config& c);
train::AdamWConfig sft_adamw_config(const Config& c);

// Micro-batching of the actor's updates (actor.use_dynamic_bsz, ppo_max_token_len_per_gpu,
// ppo_micro_batch_size_per_gpu, model.use_remove_padding), of the reference log-probs (ref.log_prob_*), and of
// SFT (token-budget packing: ppo_max_token_len_per_gpu, at least sft.max_length).
train::MicroBatching actor_micro_batching(const Config& c);
train::MicroBatching ref_micro_batching(const Config& c);
train::MicroBatching sft_micro_batching(const Config& c);

// The pieces of the actor's objective and of the data parallelism in the types the training code uses.
train::PolicyObjectiveConfig policy_loss_config(const Config& config);
train::AdvantageOptions advantage_options(const Config& config);
train::LossAggMode loss_agg_mode(const Config& config);
train::AdvantageScaling advantage_scaling(const Config& config);
train::DataParallel data_parallel_config(const Config& config);  // fsdp_config

// The rollout engine's settings from the config. The KV budget is gpu_memory_utilization x the available
// memory, capped at what one generate call can hold at once: min(max_num_seqs, `samples`) samples (at
// least a group of rollout.n when training) of max_prompt_length + max_response_length tokens (at most
// the model's context). `samples`: the most samples one generate call asks for (train_batch_size x n for
// a GRPO step; validation prompts x val_kwargs.n).
rollout::EngineConfig engine_config(const Config& c, const ModelConfig& m, int64_t samples);

// The run's LoRA adapters (null when actor_rollout_ref.model.lora_rank is 0): loaded from lora_adapter_path,
// or created from lora_rank / lora_alpha / target_modules / exclude_modules / use_rslora and initialised as
// PEFT does (A random, B zero: step 0 is the base model), seeded by trainer.seed.
std::unique_ptr<LoraAdapters> make_lora_adapters(const Config& c, const ModelConfig& m);
// The adapters' settings those come from: lora_adapter_path's adapter_config.json, or the config's keys.
LoraConfig lora_config(const Config& c);

// Steps of a run: trainer.total_training_steps, or total_epochs x (train prompts / train_batch_size).
int64_t total_training_steps(const Config& c, int64_t train_examples);

// Generation batches a step may use: 1 without DAPO filtering, else algorithm.filter_groups.
// max_num_gen_batches, where 0 ("unlimited" in verl) means one pass over the training prompts (their number
// / train_batch_size) and at least 10: a task that yields no reward signal ends each step after a bounded,
// logged number of rounds instead of sampling forever.
int64_t max_num_gen_batches_per_step(const Config& c, int64_t train_examples);

// What in the config's SFT keys would stop the run at start-up ("" when nothing): sft.stop_at_val_accuracy
// needs validations to stop at (trainer.test_freq > 0 and data.val_files).
std::string sft_config_problem(const Config& config);

}  // namespace grpo
