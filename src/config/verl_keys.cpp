// The classification of verl's keys that are not ours (see verl_keys.h). Read from verl's ppo_trainer.yaml
// tree (the flattened _generated_ppo_trainer.yaml, with the actor, rollout, ref, critic, reward and
// engine sub-configs) and from the keys its GRPO and DAPO run scripts pass, including older spellings.
#include "config/verl_keys.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace grpo::config_detail {
namespace {

VerlKeyRule none(std::string pattern) { return {std::move(pattern), VerlKeyKind::NoEffect, {}, {}}; }
VerlKeyRule only(std::string pattern, std::vector<std::string> accepted, std::string why) {
  return {std::move(pattern), VerlKeyKind::OnlyDefault, std::move(accepted), std::move(why)};
}

// Keys under `section` that have no effect here (a trailing ".*" makes one a whole sub-section).
void add_none(std::vector<VerlKeyRule>& rules, const std::string& section, std::initializer_list<const char*> keys) {
  for (const char* k : keys) rules.push_back(none(section + "." + k));
}

// The FSDP engine settings (actor, ref and critic each have a copy); ours in the actor's are in the key table.
const std::initializer_list<const char*> kFsdpKeys = {
    "wrap_policy.*", "param_offload", "optimizer_offload", "grad_offload", "offload_policy", "fsdp_size",
    "forward_prefetch", "model_dtype", "use_orig_params", "seed", "full_determinism",
    "ulysses_sequence_parallel_size", "entropy_from_logits_with_chunking", "entropy_from_logits_chunk_size",
    "use_torch_compile", "entropy_checkpointing", "use_no_sync_for_gradient_accumulation", "pad_to_length",
    "pad_to_length_bucket", "forward_only", "strategy", "dtype", "qat.*", "turbo_config.*",
    "mixed_precision.param_dtype", "mixed_precision.buffer_dtype", "mixed_precision.keep_low_precision_grads",
    "mixed_precision.cast_forward_inputs"};

// A worker's settings that only steer how verl runs it (actor and ref).
const std::initializer_list<const char*> kWorkerKeys = {
    "strategy", "use_torch_compile", "rollout_n", "profiler.*", "router_replay.*", "megatron.*",
    "ulysses_sequence_parallel_size", "entropy_from_logits_with_chunking", "entropy_from_logits_chunk_size",
    "entropy_checkpointing", "pad_to_length", "_target_"};

std::vector<VerlKeyRule> build_rules() {
  std::vector<VerlKeyRule> r;
  const std::string ar = "actor_rollout_ref";
  const std::string actor = ar + ".actor", ref = ar + ".ref", rollout = ar + ".rollout", model = ar + ".model";

  // The actor: micro-batch sizes and the FSDP engine. Micro-batching never changes a result here (the
  // gradient of a mini-batch is accumulated exactly), so verl's global micro-batch size is only sizing.
  add_none(r, actor, kWorkerKeys);
  add_none(r, actor, {"ppo_micro_batch_size", "data_loader_seed", "checkpoint.*", "use_remove_padding",
                      "use_fused_kernels", "calculate_entropy", "calculate_sum_pi_squared", "use_prefix_grouper",
                      "policy_loss._target_", "optim.optimizer_impl",
                      "optim.total_training_steps", "optim.zero_indexed_step", "optim._target_", "qat.*"});
  for (const char* k : kFsdpKeys) r.push_back(none(actor + ".fsdp_config." + k));
  r.push_back(none(actor + ".fsdp_config._target_"));
  r.push_back(only(actor + ".shuffle", {"false"}, "shuffling a batch between PPO epochs is not supported"));
  r.push_back(only(actor + ".optim.optimizer", {"AdamW", "adamw"}, "the optimizer is AdamW"));
  r.push_back(only(actor + ".optim.num_cycles", {"0.5"}, "the cosine schedule is a half cycle (num_cycles 0.5)"));
  r.push_back(only(actor + ".optim.override_optimizer_config", {},
                   "optimizer overrides are not supported (AdamW's keys are under actor.optim)"));
  r.push_back(only(actor + ".use_token_level_loss", {"true"},
                   "use actor_rollout_ref.actor.loss_agg_mode (true is token-mean, the default)"));

  // The reference model: its FSDP engine and worker settings (its log-prob micro-batches are ours).
  add_none(r, ref, kWorkerKeys);
  add_none(r, ref, {"log_prob_micro_batch_size", "fsdp_config.*"});

  // The rollout engine (vLLM / SGLang / TensorRT-LLM / HF): ours is the native engine; its sampling
  // settings and KV-cache budget are in the key table.
  add_none(r, rollout,
           {"name", "mode", "nnodes", "n_gpus_per_node", "full_determinism", "seed", "prompt_length",
            "response_length", "dtype", "enforce_eager", "cudagraph_capture_sizes", "free_cache_engine",
            "tensor_model_parallel_size", "data_parallel_size", "expert_parallel_size",
            "pipeline_model_parallel_size", "max_model_len", "enable_chunked_prefill", "logprobs_mode",
            "scheduling_policy", "load_format", "layered_summon", "log_prob_micro_batch_size",
            "log_prob_micro_batch_size_per_gpu", "log_prob_use_dynamic_bsz", "log_prob_max_token_len_per_gpu",
            "disable_log_stats", "multi_stage_wake_up", "engine_kwargs.*", "calculate_log_probs", "agent.*",
            "checkpoint_engine.*", "trace.*", "skip_tokenizer_init", "enable_rollout_routing_replay",
            "moe_load_balance_metrics_interval", "profiler.*", "prometheus.*", "mtp", "mtp.*", "qat", "qat.*",
            "disaggregation.*", "enable_sleep_mode", "update_weights_bucket_megabytes", "limit_images",
            "swap_space", "layer_name_map.*", "val_kwargs._target_", "_target_"});
  // multi_turn: enable, the turn limits, the tool config and the tool result's length are ours (key table).
  add_none(r, rollout + ".multi_turn",
           {"max_parallel_calls", "use_inference_chat_template", "tokenization_sanity_check_mode",
            "num_repeat_rollouts", "_target_"});
  r.push_back(only(rollout + ".multi_turn.function_tool_path", {}, "Python function tools are given in tool_config_path"));
  r.push_back(only(rollout + ".multi_turn.interaction_config_path", {},
                   "interactions (a simulated user turn) are not supported: the turns after the model's are tools'"));
  r.push_back(only(rollout + ".over_sample_rate", {"0"},
                   "over-sampling a batch and aborting the rest is not supported"));
  r.push_back(only(rollout + ".use_fire_sampling", {"false"}, "FIRE sampling is not supported"));
  r.push_back(only(rollout + ".quantization", {}, "quantized rollouts are not supported (see rollout.kv_cache_dtype)"));
  r.push_back(only(rollout + ".quantization_config_file", {}, "quantized rollouts are not supported"));

  // The model: kernels and memory tricks of the GPU stack (model_type picks a transformers class; the
  // architecture here is config.json's); features we do not have must stay off.
  add_none(r, model, {"use_shm", "trust_remote_code", "enable_activation_offload", "use_liger",
                      "fused_kernel_options.*", "tiled_mlp.*", "mtp.*", "lora.*", "use_efficient_resharding",
                      "model_type", "_target_"});
  r.push_back(only(model + ".lora.rank", {"0"}, "LoRA is set by actor_rollout_ref.model.lora_rank (with lora_alpha, "
                   "target_modules, exclude_modules, lora_adapter_path), not by the model.lora section"));
  r.push_back(only(model + ".external_lib", {}, "external model libraries (Python) are not supported"));
  r.push_back(only(model + ".hf_config_path", {}, "config.json is read from actor_rollout_ref.model.path"));
  r.push_back(only(model + ".tokenizer_path", {}, "the tokenizer is read from actor_rollout_ref.model.path"));
  r.push_back(only(model + ".custom_chat_template", {},
                   "the chat template is the model's (tokenizer_config.json in actor_rollout_ref.model.path)"));
  for (const char* dropout : {"attention_dropout", "hidden_dropout", "embd_pdrop", "resid_pdrop", "attn_pdrop"})
    r.push_back(only(model + ".override_config." + dropout, {"0"}, "dropout is not supported (it is always 0 here)"));
  r.push_back(only(model + ".override_config.*", {},
                   "overriding config.json is not supported; edit config.json in a copy of the model folder"));
  r.push_back(only(ar + ".hybrid_engine", {"true"}, "the actor, rollout and reference always share one process"));

  // PPO's critic (GRPO has none), verl's reward model, Ray, profilers, Hydra itself.
  for (const char* section : {"critic", "global_profiler", "ray_init", "ray_kwargs", "transfer_queue", "skip",
                              "hydra", "sandbox_fusion", "npu_profile"})
    r.push_back(none(std::string(section) + ".*"));
  r.push_back(only("reward_model.enable", {"false"}, "a reward model is not supported (rewards are functions)"));
  r.push_back(only("reward.reward_model.enable", {"false"}, "a reward model is not supported (rewards are functions)"));
  r.push_back(none("reward.overlong_buffer.log"));  // reward_model.overlong_buffer.log, after the alias
  r.push_back(none("reward.overlong_buffer.exclude"));
  r.push_back(none("reward_model.reward_kwargs.overlong_buffer_cfg.log"));
  r.push_back(none("reward_model.reward_kwargs.max_resp_len"));  // the overlong penalty uses max_response_length
  r.push_back(none("reward.reward_kwargs.max_resp_len"));
  r.push_back(none("reward_model.*"));
  add_none(r, "reward", {"num_workers", "custom_reward_function.*", "reward_manager.*", "reward_model.*",
                         "sandbox_fusion.*", "_target_"});
  r.push_back(only("defaults", {}, "Hydra's defaults list (config composition) is not read: name a verl config "
                                   "with --config-name, or write its keys out"));
  r.push_back(only("distillation.enabled", {"false"}, "distillation is not supported"));
  r.push_back(none("distillation.*"));

  // The algorithm: the rest of verl's sections (our keys of kl_ctrl and rollout_correction come first).
  add_none(r, "algorithm", {"kl_ctrl.*", "pf_ppo.*", "rollout_correction.*",
                            "filter_groups.max_inflight_gen_batches", "filter_groups._target_", "_target_"});
  r.push_back(only("algorithm.use_pf_ppo", {"false"}, "preference-feedback PPO is not supported"));
  // Groups are kept when their summed rewards differ (verl's seq_final_reward). acc, score and seq_reward
  // agree with it unless the overlong buffer shapes the rewards of an all-correct or all-wrong group
  // (docs/verl.md); other metrics are refused.
  r.push_back(only("algorithm.filter_groups.metric", {"acc", "score", "seq_reward", "seq_final_reward"},
                   "groups are filtered on their summed rewards (seq_final_reward; acc, score, seq_reward agree "
                   "without overlong shaping)"));

  // Data loading: workers, raw-chat plumbing, other modalities.
  add_none(r, "data", {"use_shm", "gen_batch_size", "val_batch_size", "return_raw_input_ids", "return_raw_chat",
                       "return_full_prompt", "seed", "dataloader_num_workers", "image_patch_size",
                       "validation_shuffle", "filter_overlong_prompts_workers", "video_key", "audio_key",
                       "trust_remote_code", "return_multi_modal_inputs", "custom_cls.name"});
  r.push_back(only("data.tokenizer", {}, "the tokenizer is read from actor_rollout_ref.model.path"));
  r.push_back(only("data.train_max_samples", {"-1"}, "limiting the number of samples is not supported"));
  r.push_back(only("data.val_max_samples", {"-1"}, "limiting the number of samples is not supported"));
  r.push_back(only("data.prompt_key", {"prompt"}, "the prompt column is `prompt` (or `messages`)"));
  r.push_back(only("data.reward_fn_key", {"data_source"}, "rows are told apart by `data_source`"));
  r.push_back(only("data.tool_config_path", {}, "tools are not supported"));
  r.push_back(only("data.function_tool_path", {}, "tools are not supported"));
  r.push_back(only("data.custom_cls.path", {}, "custom dataset classes (Python) are not supported"));
  r.push_back(only("data.apply_chat_template_kwargs.*", {},
                   "chat template arguments are not supported (the model's template is applied as is)"));
  r.push_back(only("data.mm_processor_kwargs.*", {}, "processor arguments are not supported"));

  // The trainer: Ray, HDFS, the critic, logging of generations to a tracker.
  add_none(r, "trainer", {"balance_batch", "log_val_generations", "esi_redundant_time", "critic_warmup",
                          "del_local_ckpt_after_load", "remove_previous_ckpt_in_save", "max_critic_ckpt_to_keep",
                          "ray_wait_register_center_timeout", "device", "use_v1", "v1.*", "use_legacy_worker_impl",
                          "profile_steps", "controller_nsight_options.*", "worker_nsight_options.*",
                          "npu_profile.*"});
  r.push_back(only("trainer.rollout_data_dir", {}, "dumping rollouts to files is not supported"));
  r.push_back(only("trainer.validation_data_dir", {}, "dumping validation generations to files is not supported"));
  r.push_back(only("trainer.val_only", {"false"}, "validation-only runs are not supported"));
  r.push_back(only("trainer.default_hdfs_dir", {}, "HDFS is not supported (checkpoints go to default_local_dir)"));
  return r;
}

bool starts_with_section(const std::string& key, const std::string& section) {
  return key.size() > section.size() && key.compare(0, section.size(), section) == 0 && key[section.size()] == '.';
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool as_number(const std::string& s, double& v) {
  const char* begin = s.data() + (!s.empty() && s[0] == '+' ? 1 : 0);
  auto res = std::from_chars(begin, s.data() + s.size(), v);
  return !s.empty() && res.ec == std::errc() && res.ptr == s.data() + s.size();
}

const std::vector<VerlKeyRule>& verl_rules() {
  static const std::vector<VerlKeyRule> rules = build_rules();
  return rules;
}

}  // namespace

const VerlKeyRule* find_verl_key(const std::string& key) {
  const std::vector<VerlKeyRule>& rules = verl_rules();
  // An exact key first; else the longest section containing it ("a.b.*").
  for (const auto& rule : rules)
    if (rule.pattern == key) return &rule;
  const VerlKeyRule* best = nullptr;
  for (const auto& rule : rules) {
    if (rule.pattern.size() < 2 || rule.pattern.compare(rule.pattern.size() - 2, 2, ".*") != 0) continue;
    const std::string section = rule.pattern.substr(0, rule.pattern.size() - 2);
    if ((key == section || starts_with_section(key, section)) && (!best || best->pattern.size() < rule.pattern.size()))
      best = &rule;
  }
  if (best) return best;
  // Hydra's `_target_` (the class a section instantiates) may sit in any section of verl's configs.
  static const VerlKeyRule target = none("*._target_");
  if (key == "_target_" || (key.size() > 9 && key.compare(key.size() - 9, 9, "._target_") == 0)) return &target;
  return nullptr;
}

bool verl_value_accepted(const VerlKeyRule& rule, const std::string& value) {
  if (rule.kind == VerlKeyKind::NoEffect) return true;
  const std::string v = lower(value);
  if (v.empty() || v == "null" || v == "none" || v == "~") return true;
  for (const auto& a : rule.accepted) {
    double x, y;
    if (lower(a) == v || (as_number(a, x) && as_number(value, y) && x == y)) return true;
  }
  return false;
}

const std::vector<std::string>& verl_key_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& rule : verl_rules()) {
      std::string n = rule.pattern;
      if (n.size() > 2 && n.compare(n.size() - 2, 2, ".*") == 0) n.resize(n.size() - 2);
      if (n.find("_target_") == std::string::npos) v.push_back(n);
    }
    return v;
  }();
  return names;
}

bool is_foreign_logger(const std::string& name) {
  static const char* const kForeign[] = {"wandb", "mlflow", "swanlab", "vemlp_wandb", "clearml", "trackio"};
  return std::find(std::begin(kForeign), std::end(kForeign), lower(name)) != std::end(kForeign);
}

}  // namespace grpo::config_detail
