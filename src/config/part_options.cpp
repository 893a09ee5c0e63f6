// The config turned into each part's options (see part_options.h).
#include "config/part_options.h"

#include <algorithm>

#include "comm/communicator.h"
#include "core/checked.h"
#include "core/error.h"
#include "core/error_context.h"
#include "kernels/plain_ops.h"
#include "train/rollout_correction.h"

namespace grpo {

DecoderOptions decoder_options(const Config& c) {
  DecoderOptions o;
  o.mode = c.mixed_precision.enabled ? ComputeMode::BF16 : ComputeMode::F32;
  o.checkpoint_activations = c.actor_rollout_ref.model.enable_gradient_checkpointing;
  if (!c.actor_rollout_ref.model.use_fused_kernels) o.kernels = &plain_kernels();
  return o;
}

DecoderOptions grpo_decoder_options(const Config& c) {
  DecoderOptions o = decoder_options(c);
  const double temperature = c.actor_rollout_ref.rollout.temperature;
  o.logit_scale = static_cast<float>(temperature > 0 ? 1.0 / temperature : 1.0);
  return o;
}

train::AdamWConfig grpo_adamw_config(const Config& c) {
  const ActorConfig& ac = c.actor_rollout_ref.actor;
  train::AdamWConfig adam;
  adam.lr = static_cast<float>(ac.optim.lr);
  adam.beta1 = static_cast<float>(ac.optim.betas[0]);
  adam.beta2 = static_cast<float>(ac.optim.betas[1]);
  adam.eps = static_cast<float>(ac.optim.eps);
  adam.weight_decay = static_cast<float>(ac.optim.weight_decay);
  adam.grad_clip = static_cast<float>(ac.grad_clip);
  return adam;
}

train::AdamWConfig sft_adamw_config(const Config& c) {
  train::AdamWConfig adam;
  adam.lr = static_cast<float>(c.sft.lr);
  adam.weight_decay = static_cast<float>(c.sft.weight_decay);
  adam.grad_clip = static_cast<float>(c.sft.grad_clip);
  return adam;
}

train::MicroBatching sft_micro_batching(const Config& c) {
  train::MicroBatching mb;
  mb.dynamic = true;
  mb.max_tokens = std::max(c.actor_rollout_ref.actor.ppo_max_token_len_per_gpu, c.sft.max_length);
  return mb;
}

train::PolicyObjectiveConfig policy_loss_config(const Config& config) {
  const auto& a = config.actor_rollout_ref.actor;
  train::PolicyObjectiveConfig p;
  p.mode = a.policy_loss.loss_mode;
  p.clip_ratio_low = a.clip_ratio_low;
  p.clip_ratio_high = a.clip_ratio_high;
  p.clip_ratio_c = a.clip_ratio_c;
  p.tau_pos = a.tau_pos;
  p.tau_neg = a.tau_neg;
  p.clip_cov_ratio = a.policy_loss.clip_cov_ratio;
  p.clip_cov_lb = a.policy_loss.clip_cov_lb;
  p.clip_cov_ub = a.policy_loss.clip_cov_ub;
  p.kl_cov_ratio = a.policy_loss.kl_cov_ratio;
  p.ppo_kl_coef = a.policy_loss.ppo_kl_coef;
  p.dro_beta = a.policy_loss.dro_beta;
  p.seed = static_cast<uint64_t>(config.trainer.seed);
  p.kl_coef = a.use_kl_loss ? a.kl_loss_coef : 0.0;
  p.kl_type = a.kl_loss_type;
  p.entropy_coef = a.entropy_coeff;
  return p;
}

train::AdvantageOptions advantage_options(const Config& config) {
  train::AdvantageOptions o;
  o.estimator = config.algorithm.adv_estimator;
  o.scaling = advantage_scaling(config);
  o.gamma = config.algorithm.gamma;
  return o;
}

train::LossAggMode loss_agg_mode(const Config& config) { return config.actor_rollout_ref.actor.loss_agg_mode; }

train::AdvantageScaling advantage_scaling(const Config& config) { return config.algorithm.scale_rewards; }

train::DataParallel data_parallel_config(const Config& config) {
  const FsdpConfig& f = config.actor_rollout_ref.actor.fsdp_config;
  train::DataParallel dp;
  dp.reduce_wire = f.mixed_precision.reduce_dtype;
  dp.bucket_elems = std::max<int64_t>(1, static_cast<int64_t>(f.bucket_cap_mb * (1 << 20) / sizeof(float)));
  dp.overlap = f.overlap_comm;
  dp.reduce_per_micro_batch = f.reduce_per_micro_batch;
  dp.zero3 = f.reshard_after_forward;
  return dp;
}

int64_t total_training_steps(const Config& c, int64_t train_examples) {
  if (c.trainer.total_training_steps > 0) return c.trainer.total_training_steps;
  const int64_t per_epoch = train_examples / c.data.train_batch_size;
  GRPO_CHECK(per_epoch > 0, "[config] data.train_batch_size ", c.data.train_batch_size, " is larger than the ",
             train_examples, " training prompts");
  return checked_mul(per_epoch, c.trainer.total_epochs,
                     "[config] training steps (trainer.total_epochs x steps per epoch)");
}

namespace {

// Token-budget packing (dynamic) or fixed micro-batches, padded unless model.use_remove_padding.
train::MicroBatching micro_batching(const Config& c, bool dynamic, int64_t max_tokens, int64_t micro_batch_size) {
  train::MicroBatching mb;
  mb.dynamic = dynamic;
  mb.max_tokens = max_tokens;
  mb.micro_batch_size = micro_batch_size;
  mb.pad = !c.actor_rollout_ref.model.use_remove_padding;
  return mb;
}

}  // namespace

train::MicroBatching actor_micro_batching(const Config& c) {
  const ActorConfig& ac = c.actor_rollout_ref.actor;
  return micro_batching(c, ac.use_dynamic_bsz, ac.ppo_max_token_len_per_gpu, ac.ppo_micro_batch_size_per_gpu);
}

train::MicroBatching ref_micro_batching(const Config& c) {
  const RefConfig& rc = c.actor_rollout_ref.ref;
  return micro_batching(c, rc.log_prob_use_dynamic_bsz, rc.log_prob_max_token_len_per_gpu,
                        rc.log_prob_micro_batch_size_per_gpu);
}

int64_t max_num_gen_batches_per_step(const Config& c, int64_t train_examples) {
  const FilterGroupsConfig& fg = c.algorithm.filter_groups;
  if (!fg.enable) return 1;
  if (fg.max_num_gen_batches > 0) return fg.max_num_gen_batches;
  return std::max<int64_t>(10, train_examples / c.data.train_batch_size);
}

std::string sft_config_problem(const Config& c) {
  if (c.sft.stop_at_val_accuracy <= 0) return "";
  if (c.trainer.test_freq <= 0)
    return cat("[config] sft.stop_at_val_accuracy = ", c.sft.stop_at_val_accuracy,
               " is checked at each validation: it needs trainer.test_freq > 0 (validate every that many steps), got ",
               c.trainer.test_freq);
  if (c.data.val_files.empty())
    return cat("[config] sft.stop_at_val_accuracy = ", c.sft.stop_at_val_accuracy,
               " is checked on the held-out data: it needs data.val_files");
  return "";
}

rollout::EngineConfig engine_config(const Config& c, const ModelConfig& m, int64_t samples) {
  const RolloutConfig& r = c.actor_rollout_ref.rollout;
  rollout::EngineConfig e;
  const bool bf16 = c.mixed_precision.enabled;
  switch (r.kv_cache_dtype) {
    case KvCacheDtype::Auto:
      e.kv_dtype = bf16 ? ops::KvDType::BF16 : ops::KvDType::F32;
      break;
    case KvCacheDtype::F32:
      e.kv_dtype = ops::KvDType::F32;
      break;
    case KvCacheDtype::BF16:
      e.kv_dtype = ops::KvDType::BF16;
      break;
    case KvCacheDtype::Int8:
      e.kv_dtype = ops::KvDType::I8;
      break;
  }
  e.token_budget = r.max_num_batched_tokens;
  e.max_seqs = r.max_num_seqs;
  e.prefix_cache = r.enable_prefix_caching;
  e.continuous_batching = r.continuous_batching;
  e.kv_memory_fraction = r.gpu_memory_utilization;
  const int64_t seq_tokens = std::min(checked_add(c.data.max_prompt_length, c.data.max_response_length,
                                                  "[config] data.max_prompt_length + data.max_response_length"),
                                      m.max_position_embeddings);
  const int64_t group = std::max(r.n, r.val_kwargs.n);  // a group is admitted whole
  const int64_t at_once = std::max(std::min(r.max_num_seqs, samples), std::min(samples, group));
  e.kv_max_blocks = rollout::kv_blocks_for(std::max<int64_t>(1, at_once), seq_tokens, e.block_size,
                                           "[config] KV cache of actor_rollout_ref.rollout.max_num_seqs sequences");
  return e;
}

LoraConfig lora_config(const Config& c) {
  const ModelSection& ms = c.actor_rollout_ref.model;
  if (!ms.lora_adapter_path.empty()) return LoraAdapters::read_config(ms.lora_adapter_path);
  LoraConfig lc;
  lc.rank = ms.lora_rank;
  lc.alpha = ms.lora_alpha;
  lc.use_rslora = ms.use_rslora;
  const nlohmann::json targets =
      ms.target_modules.size() == 1 ? nlohmann::json(ms.target_modules[0]) : nlohmann::json(ms.target_modules);
  lc.target = ModuleSelector::from_json(targets, "actor_rollout_ref.model.target_modules");
  if (lc.target.kind == ModuleSelector::Kind::Regex)  // one name given as text: a name, not a regex
    lc.target = ModuleSelector::from_json(nlohmann::json::array({ms.target_modules[0]}), "target_modules");
  lc.exclude = ModuleSelector::from_json(nlohmann::json(ms.exclude_modules), "actor_rollout_ref.model.exclude_modules");
  return lc;
}

std::unique_ptr<LoraAdapters> make_lora_adapters(const Config& c, const ModelConfig& m) {
  const ModelSection& ms = c.actor_rollout_ref.model;
  if (ms.lora_rank == 0) return nullptr;
  const bool vision_frozen = c.actor_rollout_ref.actor.freeze_vision_tower;
  if (!ms.lora_adapter_path.empty()) {
    ErrorContext what("loading the LoRA adapter ", ms.lora_adapter_path,
                      " (actor_rollout_ref.model.lora_adapter_path)");
    return LoraAdapters::load(m, ms.lora_adapter_path, vision_frozen);
  }
  auto lora = std::make_unique<LoraAdapters>(m, lora_config(c), "actor_rollout_ref.model (lora_rank, target_modules)",
                                             vision_frozen);
  lora->init_default(static_cast<uint64_t>(c.trainer.seed));
  return lora;
}

}  // namespace grpo
