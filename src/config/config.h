// The run configuration: one YAML file plus `--set key=value` overrides, resolved into a typed tree.
//
// Key names follow verl (actor_rollout_ref.actor.ppo_mini_batch_size, algorithm.norm_adv_by_std_in_grpo,
// trainer.total_epochs, ...) so that configs compare directly; the struct tree below mirrors the YAML
// tree member for member. Every key is in one table (config_keys()) with its type, default, allowed
// values and a line of documentation. Unknown keys, wrong types and out-of-range values are errors at
// start-up naming the file and line (or --set), the key, the value and what is allowed. A YAML `null`
// keeps the default. The resolved config (config_to_yaml) loads back to the same Config.
//
// Aliases accepted on input: use_dynamic_bsz, max_tokens_per_gpu (short names),
// actor_rollout_ref.actor.max_tokens_per_gpu, actor_rollout_ref.actor.optim.lr_scheduler_type (=
// warmup_style), actor_rollout_ref.actor.optim.clip_grad (= actor.grad_clip), actor_rollout_ref.nccl_timeout
// (= trainer.comm_timeout_s), reward_model.overlong_buffer.* and
// reward_model.reward_kwargs.overlong_buffer_cfg.*, reward.reward_kwargs.overlong_buffer_cfg.*,
// custom_reward_function.overlong_buffer.* (DAPO's spellings); actor_rollout_ref.actor.tis_imp_ratio_cap C
// is algorithm.rollout_correction.rollout_is token with rollout_is_threshold C.
//
// verl's run scripts: the defaults are verl's ppo_trainer.yaml defaults (docs/verl.md lists the few
// deliberate differences); overrides may carry Hydra's + / ++ prefixes and list syntax; verl's keys that
// only steer its GPU machinery are accepted and reported as having no effect here (config/verl_keys.h).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "core/names.h"
#include "data/dataset.h"
#include "kernels/ops.h"
#include "kernels/paged_ops.h"
#include "report/step_logger.h"
#include "reward/reward_config.h"
#include "rollout/response_lengths.h"
#include "tools/hermes.h"
#include "tools/tool_runner.h"
#include "train/advantages.h"
#include "train/aggregation.h"
#include "train/kl_penalty.h"
#include "train/optimizer.h"
#include "train/policy_objective.h"
#include "train/rollout_correction.h"

namespace grpo {

namespace train {
struct DataParallel;
}

// The choices that the config dispatches on itself (part_options.cpp, reward_setup.cpp, the run folder).
// rollout.kv_cache_dtype: auto is bf16 under mixed precision, else f32.
enum class KvCacheDtype { Auto, F32, BF16, Int8 };
inline constexpr auto kKvCacheDtypeNames = name_table<KvCacheDtype>({{KvCacheDtype::Auto, "auto"},
                                                                     {KvCacheDtype::F32, "f32"},
                                                                     {KvCacheDtype::BF16, "bf16"},
                                                                     {KvCacheDtype::Int8, "int8"}});
// trainer.resume_mode (loop/run_folder.h).
enum class ResumeMode { Disable, Auto, ResumePath };
inline constexpr auto kResumeModeNames = name_table<ResumeMode>(
    {{ResumeMode::Disable, "disable"}, {ResumeMode::Auto, "auto"}, {ResumeMode::ResumePath, "resume_path"}});
// verl's reward manager: batch passes lists to the custom function, dapo takes overlong_buffer_cfg.
enum class RewardManager { Naive, Batch, Dapo, Prime };
inline constexpr auto kRewardManagerNames = name_table<RewardManager>({{RewardManager::Naive, "naive"},
                                                                       {RewardManager::Batch, "batch"},
                                                                       {RewardManager::Dapo, "dapo"},
                                                                       {RewardManager::Prime, "prime"}});
// The GEMMs of a layer and the head (mixed_precision.op_blacklist names them).
enum class GemmSite { QkvProj, OProj, GateUpProj, DownProj, LmHead };
inline constexpr auto kGemmSiteNames = name_table<GemmSite>({{GemmSite::QkvProj, "qkv_proj"},
                                                             {GemmSite::OProj, "o_proj"},
                                                             {GemmSite::GateUpProj, "gate_up_proj"},
                                                             {GemmSite::DownProj, "down_proj"},
                                                             {GemmSite::LmHead, "lm_head"}});

struct DataConfig {
  std::vector<std::string> train_files;  // JSONL or Parquet files, read as one data set (required)
  std::vector<std::string> val_files;    // the same; none: no validation
  int64_t train_batch_size = 1024;  // prompts per step
  int64_t max_prompt_length = 512;  // tokens
  int64_t max_response_length = 512;
  bool filter_overlong_prompts = false;  // drop (and count) prompts longer than max_prompt_length
  PromptOverflow truncation = PromptOverflow::Error;  // when not filtering: error | left | right
  bool shuffle = true;
  bool apply_chat_template = true;  // false: the prompt text is tokenized as is
  std::string image_key = "images";  // pictures of a row (verl's data.image_key)
};

// Data files as messages name them: "a.parquet" or "a.parquet, b.parquet".
std::string data_files_text(const std::vector<std::string>& files);

struct ModelSection {
  std::string path;  // Hugging Face model folder (required)
  bool enable_gradient_checkpointing = false;
  bool use_remove_padding = true;  // fixed micro-batches packed padding-free; false pads them to their longest
  bool use_fused_kernels = true;   // false: the unfused kernels and full [tokens x vocab] logits (baseline)
  // LoRA (model/lora.h): lora_rank 0 trains the whole model.
  int64_t lora_rank = 0;
  double lora_alpha = 16;
  std::vector<std::string> target_modules = {"all-linear"};  // "all-linear" or module names (PEFT's suffix match)
  std::vector<std::string> exclude_modules;
  std::string lora_adapter_path;  // start from this PEFT adapter folder (its r, alpha and modules)
  bool use_rslora = false;        // scale alpha / sqrt(r) instead of alpha / r
};

struct OptimConfig {
  double lr = 1e-6;
  double weight_decay = 0.01;
  std::vector<double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double lr_warmup_steps_ratio = 0.0;
  int64_t lr_warmup_steps = -1;  // -1: use lr_warmup_steps_ratio
  train::WarmupStyle warmup_style = train::WarmupStyle::Constant;
  double min_lr_ratio = 0.0;              // cosine floor, as a fraction of lr
};

// Data parallelism over several ranks (mpirun -np N); verl's fsdp_config spellings where one exists.
struct FsdpMixedPrecision {
  comm::Wire reduce_dtype = comm::Wire::F32;  // gradients on the wire: fp32 | bf16 (summed in fp32 either way)
};

struct FsdpConfig {
  FsdpMixedPrecision mixed_precision;
  double bucket_cap_mb = 4;             // gradient reduce-scatter bucket, MB of fp32 gradients
  bool overlap_comm = true;             // start each bucket during the backward (false: after it)
  bool reduce_per_micro_batch = true;   // reduce after every micro-batch, as FSDP does (false: once per mini-batch)
  bool reshard_after_forward = false;   // ZeRO-3: layers' parameters sharded while training, gathered just in time
};

// verl's actor.policy_loss section: the loss mode and its own keys (train/policy_objective.h).
struct PolicyLossSection {
  train::PgLossMode loss_mode = train::PgLossMode::Vanilla;
  double clip_cov_ratio = 0.0002, clip_cov_lb = 1.0, clip_cov_ub = 5.0;  // clip_cov
  double kl_cov_ratio = 0.0002, ppo_kl_coef = 0.1;                       // kl_cov
  double dro_beta = 1.0;                                                 // dro
};

struct ActorConfig {
  int64_t ppo_mini_batch_size = 256;  // prompts per optimizer step (x rollout.n responses)
  int64_t ppo_micro_batch_size_per_gpu = 4;  // sequences per micro-batch (fixed, padded mode)
  bool use_dynamic_bsz = false;              // micro-batches by token budget (FFD packing)
  int64_t ppo_max_token_len_per_gpu = 16384;  // token budget per micro-batch
  int64_t ppo_epochs = 1;
  double clip_ratio = 0.2;
  double clip_ratio_low = 0.2;   // defaults to clip_ratio
  double clip_ratio_high = 0.2;  // defaults to clip_ratio; DAPO clip-higher: 0.28
  double clip_ratio_c = 3.0;     // dual clip, > 1
  double tau_pos = 1.0, tau_neg = 1.05;  // sapo gate temperatures
  PolicyLossSection policy_loss;
  train::LossAggMode loss_agg_mode = train::LossAggMode::TokenMean;
  double loss_scale_factor = 0;  // seq-mean-token-sum-norm divisor; 0: data.max_response_length
  bool use_kl_loss = false;
  double kl_loss_coef = 0.001;
  train::KlPenaltyType kl_loss_type = {train::KlEstimator::K3, false};  // low_var_kl (kl_penalty.h)
  double entropy_coeff = 0.0;
  double grad_clip = 1.0;
  double tis_imp_ratio_cap = -1;  // alias of algorithm.rollout_correction rollout_is token + threshold C; -1: off
  bool freeze_vision_tower = false;  // Qwen3-VL: no gradients and no optimizer state for the vision tower
  OptimConfig optim;
  FsdpConfig fsdp_config;
};

struct ValKwargs {
  bool do_sample = false;    // false: greedy (verl's default for validation), whatever temperature says
  double temperature = 0.0;  // 0: greedy
  double top_p = 1.0;
  int64_t top_k = -1;
  int64_t n = 1;
};

// verl's rollout.multi_turn: multi-turn rollouts where the model calls tools (docs/tools.md). Turn limits
// of 0 (verl's null) are off; the response budget (data.max_response_length) counts the tool turns' tokens.
struct MultiTurnConfig {
  bool enable = false;
  int64_t max_assistant_turns = 0;  // assistant turns per response at most (0: no limit)
  int64_t max_user_turns = 0;       // tool turns per response at most (0: no limit)
  int64_t max_tool_response_length = 256;  // characters of one tool result kept (verl's default)
  tools::TruncateSide tool_response_truncate_side = tools::TruncateSide::Middle;
  std::string tool_config_path;     // verl's tool config YAML (empty: the built-in calculator)
  tools::ToolCallFormat format = tools::ToolCallFormat::Hermes;  // <tool_call>{json}</tool_call> (Qwen's template)
};

struct RolloutConfig {
  bool do_sample = true;  // false: greedy
  int64_t n = 1;  // responses per prompt (the group size)
  double temperature = 1.0;
  double top_p = 1.0;
  int64_t top_k = -1;  // -1: off
  double min_p = 0.0;
  KvCacheDtype kv_cache_dtype = KvCacheDtype::Auto;
  double gpu_memory_utilization = 0.5;  // fraction of what the rest of the run leaves for the KV cache
  int64_t max_num_batched_tokens = 8192;
  int64_t max_num_seqs = 256;
  bool enable_prefix_caching = true;
  bool share_group_prompt = true;  // prefill a prompt once for its n samples (false: once per sample)
  bool continuous_batching = true;  // false: a static batch padded to its longest response (baseline)
  ops::DecodeMatmul decode_matmul = ops::DecodeMatmul::BatchInvariant;
  bool ignore_eos = false;  // responses run to max_response_length, stop tokens ignored (benchmarks)
  // Benchmarks: off (responses end at a stop token or the limit) or long_tail: each sample stops at a length
  // drawn for it (rollout/response_lengths.h), the same in every configuration.
  ResponseLengths response_lengths = ResponseLengths::Off;
  ValKwargs val_kwargs;
  MultiTurnConfig multi_turn;
};

struct RefConfig {  // the two token settings default to the actor's (as in verl)
  int64_t log_prob_micro_batch_size_per_gpu = 4;
  bool log_prob_use_dynamic_bsz = false;
  int64_t log_prob_max_token_len_per_gpu = 16384;
};

struct ActorRolloutRefConfig {
  ModelSection model;
  ActorConfig actor;
  RolloutConfig rollout;
  RefConfig ref;
};

struct FilterGroupsConfig {
  bool enable = false;
  int64_t max_num_gen_batches = 0;  // 0: one pass over the training prompts, at least 10 (see trainer.h)
};

// verl's algorithm.kl_ctrl: the coefficient of the KL penalty in the reward.
struct KlCtrlConfig {
  train::KlController type = train::KlController::Fixed;
  double kl_coef = 0.001;
  double target_kl = 0.1;  // adaptive
  int64_t horizon = 10000;  // adaptive
};

// verl's algorithm.rollout_correction: importance weights between the trainer's and the rollout's log-probs.
struct RolloutCorrectionConfig {
  train::RolloutIsLevel rollout_is = train::RolloutIsLevel::Off;  // token | sequence | off (null)
  double rollout_is_threshold = 2.0;
  std::string rollout_rs;            // rejection criteria, comma-separated (e.g. "token_k1,seq_mean_k3"); "": off
  std::string rollout_rs_threshold;  // one for all or one per criterion; k1: "lower_upper" or an upper ratio
};

struct AlgorithmConfig {
  train::AdvEstimator adv_estimator = train::AdvEstimator::Grpo;
  double gamma = 1.0;  // reinforce_plus_plus discount
  double lam = 1.0;    // GAE's lambda: read for verl configs, unused (gae is refused)
  bool use_kl_in_reward = false;
  train::KlPenaltyType kl_penalty = {train::KlEstimator::K1, false};  // kl (kl_penalty.h)
  KlCtrlConfig kl_ctrl;
  RolloutCorrectionConfig rollout_correction;
  bool norm_adv_by_std_in_grpo = true;
  // TRL's group | batch | none; none <=> norm_adv_by_std_in_grpo false
  train::AdvantageScaling scale_rewards = train::AdvantageScaling::GroupStd;
  FilterGroupsConfig filter_groups;
  bool mask_truncated_completions = false;
};

struct TrainerConfig {
  int64_t total_training_steps = 0;  // 0: total_epochs x steps per epoch
  int64_t total_epochs = 30;
  int64_t save_freq = -1;  // steps; -1: only at the end
  int64_t max_actor_ckpt_to_keep = 0;  // newest checkpoints kept (the oldest removed); 0 (or null): all
  int64_t test_freq = -1;  // steps; -1: only before/after training
  // Run folder: checkpoints, metrics.jsonl, report. Unset in a loaded config it is verl's
  // checkpoints/<project_name>/<experiment_name>; ${key} in a text value is that key's value.
  std::string default_local_dir = "checkpoints/verl_examples/gsm8k";
  int64_t seed = 42;
  std::vector<Logger> logger = {Logger::Console, Logger::Jsonl};
  std::string project_name = "verl_examples";  // TensorBoard folder <run>/tensorboard_log/<project>/<experiment>
  std::string experiment_name = "gsm8k";
  bool val_before_train = true;
  // A run folder that holds an earlier run: disable refuses it (unless --overwrite), auto resumes from its
  // latest checkpoint, resume_path resumes from resume_from_path (see run_folder.h).
  ResumeMode resume_mode = ResumeMode::Disable;
  std::string resume_from_path;  // a checkpoint folder (global_step_N) or a run folder (its latest)
  int64_t nnodes = 0;           // machines of the run; 0: whatever the MPI launcher started
  int64_t n_gpus_per_node = 0;  // ranks per machine; 0: whatever the MPI launcher started
  double comm_timeout_s = 600;  // a collective that takes longer fails the run (a rank died or hangs)
};

struct OverlongBufferConfig {
  bool enable = false;
  int64_t len = 0;  // tokens before max_response_length where the penalty ramps up; >= 1 when enabled
  double penalty_factor = 1.0;
};

// verl's custom_reward_function: a Python function scoring every response (reward/python_reward.h).
struct CustomRewardFunctionConfig {
  std::string path;                    // a .py file; "" = none
  std::string name = "compute_score";  // the function in it
  nlohmann::json reward_kwargs = nlohmann::json::object();  // keyword arguments passed on each call
  int64_t workers = 2;                 // python3 worker processes
  double timeout_s = 30;               // per call (per share of the batch in batch mode)
};

struct RewardConfig {
  // Empty (the default): as verl, the custom function when custom_reward_function.path is set, else each
  // row scored by verl's rule for its data_source, else `math` for rows without data_source (see
  // config/reward_setup.h).
  std::vector<RewardFunctionConfig> functions;
  CustomRewardFunctionConfig custom_reward_function;
  RewardManager reward_manager = RewardManager::Naive;  // verl's: batch passes lists to the custom function
  // verl's reward_model.reward_kwargs, the reward manager's arguments: with `batch` they are passed to the
  // custom function; with `dapo` its overlong_buffer_cfg {enable, len, penalty_factor} sets
  // overlong_buffer (max_resp_len is data.max_response_length); the naive manager takes none.
  nlohmann::json reward_kwargs = nlohmann::json::object();
  OverlongBufferConfig overlong_buffer;
  // A step in which one function fails (scores 0: an external command that crashed, timed out or replied
  // with no number in range) on more than this fraction of the samples stops the run.
  double max_failure_fraction = 0.1;
};

struct MixedPrecisionConfig {
  bool enabled = false;                    // bf16 GEMM inputs
  std::vector<GemmSite> op_blacklist;      // must stay empty: per-GEMM f32 is not supported (refused)
};

struct SftConfig {
  double lr = 1e-4;
  int64_t epochs = 1;
  int64_t batch_size = 32;  // sequences per optimizer step
  int64_t max_length = 1024;  // prompt + response tokens; longer examples are filtered with a count
  double lr_warmup_steps_ratio = 0.0;
  double weight_decay = 0.01;
  double grad_clip = 1.0;
  // Stop at the first validation (every trainer.test_freq steps, on data.val_files) whose held-out accuracy
  // reaches this; 0: train every epoch.
  double stop_at_val_accuracy = 0;
};

struct Config {
  DataConfig data;
  ActorRolloutRefConfig actor_rollout_ref;
  AlgorithmConfig algorithm;
  TrainerConfig trainer;
  RewardConfig reward;
  MixedPrecisionConfig mixed_precision;
  SftConfig sft;
};

// What loading a config accepted without acting on it, for one line each at start-up (and `--check`).
struct ConfigNotes {
  std::vector<std::string> no_effect;        // verl's keys that steer only its GPU machinery, as given
  std::vector<std::string> foreign_loggers;  // trainer.logger entries we do not write (wandb, mlflow, ...)
  std::vector<std::string> unused;           // values set but not used (e.g. a temperature under do_sample false)
  // The lines to print ("" when there is nothing to say); `run_dir` is where metrics.jsonl goes.
  std::string describe(const std::string& run_dir) const;
};

// Reads `yaml_path` ("" = defaults only), applies overrides ("key=value", value in YAML syntax, e.g.
// "actor_rollout_ref.actor.optim.betas=[0.9, 0.95]"; Hydra's "+key=value" and "++key=value" too),
// validates everything and resolves derived values (clip_ratio_low/high from clip_ratio,
// loss_scale_factor, scale_rewards <-> norm_adv_by_std_in_grpo, do_sample, ${key} in text values).
// `notes` (optional) receives the verl keys accepted without effect.
Config load_config(const std::string& yaml_path, const std::vector<std::string>& overrides = {},
                   ConfigNotes* notes = nullptr);
// Hydra's --config-name of a verl run: the overrides that turn our defaults into that config's defaults
// ("ppo_trainer" and "ppo_megatron_trainer": none; "dapo_trainer": DAPO's recipe config). A name we
// have no equivalent for is an error that lists the ones there are.
std::vector<std::string> verl_config_name_overrides(const std::string& config_name);
// Validates a Config built in code (the same checks load_config makes after reading).
void validate_config(const Config& config);
std::string config_to_yaml(const Config& config);

// One row of the key table, for help output and error messages.
struct ConfigKeyInfo {
  std::string name, type, default_value, allowed, doc;
};
const std::vector<ConfigKeyInfo>& config_keys();
std::string config_help();  // the table as text, for `grpo train --help-config`

}  // namespace grpo
