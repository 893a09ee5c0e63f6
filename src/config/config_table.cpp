// The table of configuration keys: one row per key with its type, allowed values and documentation,
// bound to the Config member holding it (the key name is the member path, e.g. data.train_batch_size).
#include <charconv>
#include <cmath>
#include <type_traits>

#include "config/config_table.h"
#include "core/error.h"

namespace grpo::config_detail {

bool Allowed::accepts(double v) const {
  for (double a : also)
    if (v == a) return true;
  if (v < min || (min_open && v == min)) return false;
  if (v > max || (max_open && v == max)) return false;
  return true;
}

bool Allowed::accepts(const std::string& s) const {
  if (choices.empty()) return true;
  for (const auto& c : choices)
    if (c == s) return true;
  return false;
}

std::string Allowed::describe(KeyType type) const {
  if (type == KeyType::String || type == KeyType::StringList || type == KeyType::Choice ||
      type == KeyType::ChoiceList) {
    const bool list = type == KeyType::StringList || type == KeyType::ChoiceList;
    if (choices.empty()) return list ? "a list of text" : "any text";
    std::string s = list ? "a list of: " : "one of: ";
    for (size_t i = 0; i < choices.size(); ++i) s += (i ? ", " : "") + (choices[i].empty() ? "\"\"" : choices[i]);
    return s;
  }
  if (type == KeyType::Bool) return "true or false";
  if (type == KeyType::RewardFunctions) {
    std::string names;
    for (const auto& e : kRewardKindNames.entries) names += cat(names.empty() ? "" : "|", e.name);
    return cat("a list of {name: ", names, ", weight, pattern, command, timeout_s, workers, path, function, kwargs, ",
               "batch}");
  }
  if (type == KeyType::Mapping) return "a mapping of names to values";
  auto num = [type](double v) {  // bounds read best without a forced ".0": "> 0", "[0, 1)"
    if (type == KeyType::Int) return std::to_string(static_cast<int64_t>(v));
    std::string s = format_double(v);
    return s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0 ? s.substr(0, s.size() - 2) : s;
  };
  std::string s;
  const bool has_min = std::isfinite(min), has_max = std::isfinite(max);
  if (has_min && has_max) {
    s = cat(min_open ? "(" : "[", num(min), ", ", num(max), max_open ? ")" : "]");
  } else if (has_min) {
    s = cat(min_open ? "> " : ">= ", num(min));
  } else if (has_max) {
    s = cat(max_open ? "< " : "<= ", num(max));
  } else {
    s = "any number";
  }
  for (double a : also) s += cat(" or ", num(a));
  if (type == KeyType::FloatList) s = cat("a list of ", length, " numbers, each ", s);
  return s;
}

Allowed any() { return {}; }
Allowed at_least(double v) {
  Allowed a;
  a.min = v;
  return a;
}
Allowed greater_than(double v) {
  Allowed a = at_least(v);
  a.min_open = true;
  return a;
}
Allowed between(double lo, double hi) {
  Allowed a = at_least(lo);
  a.max = hi;
  return a;
}
Allowed open_closed(double lo, double hi) {
  Allowed a = between(lo, hi);
  a.min_open = true;
  return a;
}
Allowed closed_open(double lo, double hi) {
  Allowed a = between(lo, hi);
  a.max_open = true;
  return a;
}

namespace {

template <typename T>
constexpr KeyType key_type_of() {
  if constexpr (std::is_same_v<T, int64_t>) return KeyType::Int;
  else if constexpr (std::is_same_v<T, double>) return KeyType::Float;
  else if constexpr (std::is_same_v<T, bool>) return KeyType::Bool;
  else if constexpr (std::is_same_v<T, std::string>) return KeyType::String;
  else if constexpr (std::is_same_v<T, std::vector<std::string>>) return KeyType::StringList;
  else if constexpr (std::is_same_v<T, std::vector<double>>) return KeyType::FloatList;
  else if constexpr (std::is_same_v<T, nlohmann::json>) return KeyType::Mapping;
  else {
    static_assert(std::is_same_v<T, std::vector<RewardFunctionConfig>>, "unsupported config field type");
    return KeyType::RewardFunctions;
  }
}

template <typename Field>
KeySpec make_key(const char* name, Field field, Allowed allowed, const char* doc, bool required = false) {
  using T = std::remove_reference_t<decltype(field(std::declval<Config&>()))>;
  return KeySpec{name, key_type_of<T>(), std::move(allowed), doc, required,
                 [field](Config& c) -> void* { return &field(c); }};
}

template <typename T>
constexpr bool is_vector = false;
template <typename T>
constexpr bool is_vector<std::vector<T>> = true;

// A choice key: the field is the table's type (Choice) or a list of it (ChoiceList).
template <typename Field, typename Table>
KeySpec make_key(const char* name, Field field, ChoiceOf<Table> choice, const char* doc, bool required = false) {
  using T = std::remove_reference_t<decltype(field(std::declval<Config&>()))>;
  using V = typename Table::Value;
  constexpr bool list = is_vector<T>;
  static_assert(std::is_same_v<T, std::conditional_t<list, std::vector<V>, V>>, "the field is not the table's type");
  const Table* table = choice.table;
  const auto keep = choice.keep;
  Allowed a;
  for (const auto& e : table->entries)
    if (!keep || keep(e.value)) a.choices.emplace_back(e.name);
  a.set_names = [table, keep](void* p, const std::vector<std::string>& names) {
    std::vector<V> values;
    for (const auto& n : names) {
      const std::optional<V> v = table->find(n);
      if (!v || (keep && !keep(*v))) return false;
      values.push_back(*v);
    }
    if constexpr (list) {
      *static_cast<T*>(p) = values;
    } else {
      if (values.size() != 1) return false;
      *static_cast<T*>(p) = values[0];
    }
    return true;
  };
  a.get_names = [table](const void* p) {
    std::vector<std::string> names;
    if constexpr (list) {
      for (const V& v : *static_cast<const T*>(p)) names.emplace_back(table->name(v));
    } else {
      names.emplace_back(table->name(*static_cast<const T*>(p)));
    }
    return names;
  };
  return KeySpec{name,     list ? KeyType::ChoiceList : KeyType::Choice,     std::move(a), doc,
                 required, [field](Config& c) -> void* { return &field(c); }};
}

// KEY(data.train_batch_size, ...): the key name is the member path.
#define KEY(path, ...) make_key(#path, [](Config& c) -> auto& { return c.path; }, __VA_ARGS__)

// The KL loss takes every estimator but full; the KL penalty in the reward has no "+" forms.
bool not_full(const train::KlPenaltyType& t) { return t.estimator != train::KlEstimator::Full; }
bool without_plus(const train::KlPenaltyType& t) { return !t.straight_through; }

// Every numeric key is bounded by the type that consumes it: counts and lengths go to int32 fields of the
// rollout engine and the kernels (kInt32), hyper-parameters are converted to float (kFloat keeps a
// margin below FLT_MAX). Products of keys (tokens per step, KV bytes, ...) are checked where they are
// formed (cross_checks, engine_config, the trainer).
constexpr double kInt32 = 2147483647.0;
constexpr double kFloat = 1e30;
constexpr double kTinyFloat = 1e-30;  // positive floats stay normal (FLT_MIN ~ 1.2e-38)

Allowed list_or_text() {
  Allowed a;
  a.scalar_as_list = true;
  return a;
}
Allowed count() { return between(1, kInt32); }     // sequences, prompts, tokens, steps
Allowed count0() { return between(0, kInt32); }    // the same, 0 allowed
Allowed positive_float() { return between(kTinyFloat, kFloat); }
Allowed nonnegative_float() { return between(0, kFloat); }
// Sampling temperature: 0 (greedy) or a value whose reciprocal scales logits without overflow.
Allowed temperature() { return between(0.01, 100).or_value(0); }

std::vector<KeySpec> build_table() {
  return {
      KEY(data.train_files, list_or_text(),
          "training prompts: a file or a list of files, JSONL or Parquet (prompt or messages, answer, optional id, "
          "images; verl rows), read as one data set",
          true),
      KEY(data.val_files, list_or_text(),
          "held-out prompts: a file or a list of files (JSONL or Parquet); none: no "
          "validation"),
      KEY(data.train_batch_size, count(), "prompts per training step"),
      KEY(data.max_prompt_length, count(), "prompt tokens at most"),
      KEY(data.max_response_length, count(), "generated tokens at most per response"),
      KEY(data.filter_overlong_prompts, any(), "drop (and count) prompts longer than max_prompt_length"),
      KEY(data.truncation, choice(kTruncationNames),
          "when not filtering, overlong prompts: error, or keep the last (left) / first (right) tokens"),
      KEY(data.shuffle, any(), "shuffle the training prompts each epoch"),
      KEY(data.apply_chat_template, any(), "render prompts with the tokenizer's chat template"),
      KEY(data.image_key, any(), "the field listing a row's pictures (paths relative to the data file)"),

      KEY(actor_rollout_ref.model.path, any(), "Hugging Face model folder to train", true),
      KEY(actor_rollout_ref.model.enable_gradient_checkpointing, any(),
          "recompute layer activations in backward instead of storing them"),
      KEY(actor_rollout_ref.model.use_remove_padding, any(),
          "fixed micro-batches packed padding-free (false: padded to their longest)"),
      KEY(actor_rollout_ref.model.use_fused_kernels, any(),
          "fused kernels and chunked lm_head log-probs (false: unfused kernels, full [tokens x vocab] logits)"),
      KEY(actor_rollout_ref.model.lora_rank, count0(),
          "LoRA rank r (0: full fine-tuning); the base model is frozen, only the adapters train"),
      KEY(actor_rollout_ref.model.lora_alpha, positive_float(), "LoRA alpha: the update is scaled by alpha / r"),
      KEY(actor_rollout_ref.model.target_modules, list_or_text(),
          "linears that get adapters: all-linear (every linear but lm_head) or names such as [q_proj, v_proj]"),
      KEY(actor_rollout_ref.model.exclude_modules, list_or_text(), "linears left without adapters (names)"),
      KEY(actor_rollout_ref.model.lora_adapter_path, any(),
          "PEFT adapter folder to start from (adapter_config.json + adapter_model.safetensors)"),
      KEY(actor_rollout_ref.model.use_rslora, any(), "rank-stabilised LoRA: scale alpha / sqrt(r)"),

      KEY(actor_rollout_ref.actor.ppo_mini_batch_size, count(),
          "prompts per optimizer step (each with rollout.n responses)"),
      KEY(actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu, count(),
          "sequences per micro-batch when use_dynamic_bsz is false"),
      KEY(actor_rollout_ref.actor.use_dynamic_bsz, any(),
          "micro-batches by token budget (first-fit-decreasing packing) instead of a fixed size"),
      KEY(actor_rollout_ref.actor.ppo_max_token_len_per_gpu, count(), "token budget of a micro-batch"),
      KEY(actor_rollout_ref.actor.ppo_epochs, count(), "passes over each batch of rollouts"),
      KEY(actor_rollout_ref.actor.clip_ratio, between(0, 1), "PPO clip epsilon (default of low and high)"),
      KEY(actor_rollout_ref.actor.clip_ratio_low, between(0, 1), "lower clip epsilon"),
      KEY(actor_rollout_ref.actor.clip_ratio_high, nonnegative_float(), "upper clip epsilon (DAPO clip-higher: 0.28)"),
      KEY(actor_rollout_ref.actor.clip_ratio_c, open_closed(1, kFloat), "dual-clip constant for negative advantages"),
      KEY(actor_rollout_ref.actor.loss_agg_mode, choice(train::kLossAggModeNames),
          "how token losses are aggregated (gspo and sapo always use seq-mean-token-mean, geo_mean the mean "
          "over sequences)"),
      KEY(actor_rollout_ref.actor.policy_loss.loss_mode, choice(train::kPgLossModeNames),
          "policy loss (verl's loss_mode; see docs/training.md)"),
      KEY(actor_rollout_ref.actor.policy_loss.clip_cov_ratio, open_closed(0, 1),
          "clip_cov: fraction of tokens whose gradient is cut"),
      KEY(actor_rollout_ref.actor.policy_loss.clip_cov_lb, between(-kFloat, kFloat),
          "clip_cov: lower bound of the covariance of the tokens cut"),
      KEY(actor_rollout_ref.actor.policy_loss.clip_cov_ub, between(-kFloat, kFloat),
          "clip_cov: upper bound of the covariance of the tokens cut"),
      KEY(actor_rollout_ref.actor.policy_loss.kl_cov_ratio, open_closed(0, 1),
          "kl_cov: fraction of tokens (largest covariance) given the KL penalty"),
      KEY(actor_rollout_ref.actor.policy_loss.ppo_kl_coef, nonnegative_float(), "kl_cov: weight of |log-ratio|"),
      KEY(actor_rollout_ref.actor.policy_loss.dro_beta, nonnegative_float(),
          "dro: weight of the quadratic log-ratio penalty"),
      KEY(actor_rollout_ref.actor.tau_pos, positive_float(), "sapo: gate temperature for positive advantages"),
      KEY(actor_rollout_ref.actor.tau_neg, positive_float(), "sapo: gate temperature for other advantages"),
      KEY(actor_rollout_ref.actor.loss_scale_factor, nonnegative_float(),
          "divisor of seq-mean-token-sum-norm; 0: data.max_response_length"),
      KEY(actor_rollout_ref.actor.use_kl_loss, any(), "add a KL penalty to a frozen reference model"),
      KEY(actor_rollout_ref.actor.kl_loss_coef, nonnegative_float(), "weight of the KL penalty"),
      KEY(actor_rollout_ref.actor.kl_loss_type, choice(train::kKlPenaltyNames, not_full),
          "KL estimator (\"+\": its value with k2's gradient)"),
      KEY(actor_rollout_ref.actor.entropy_coeff, between(-kFloat, kFloat),
          "entropy bonus weight (loss -= coeff * entropy)"),
      KEY(actor_rollout_ref.actor.grad_clip, open_closed(0, kFloat).or_value(-1),
          "clip the global gradient norm to this; -1: no clipping"),
      KEY(actor_rollout_ref.actor.tis_imp_ratio_cap, open_closed(0, kFloat).or_value(-1),
          "truncated importance sampling cap C: weight min(exp(old - rollout logp), C); -1: off (alias of "
          "algorithm.rollout_correction.rollout_is: token with rollout_is_threshold C)"),
      KEY(actor_rollout_ref.actor.freeze_vision_tower, any(),
          "Qwen3-VL: train the language model only (the vision tower gets no gradients, no optimizer state and, "
          "with LoRA, no adapters)"),
      KEY(actor_rollout_ref.actor.optim.lr, positive_float(), "AdamW learning rate"),
      KEY(actor_rollout_ref.actor.optim.weight_decay, nonnegative_float(), "AdamW decoupled weight decay"),
      KEY(actor_rollout_ref.actor.optim.betas, closed_open(0, 1).with_length(2), "AdamW betas"),
      KEY(actor_rollout_ref.actor.optim.eps, positive_float(), "AdamW epsilon"),
      KEY(actor_rollout_ref.actor.optim.lr_warmup_steps_ratio, between(0, 1),
          "linear warm-up over this fraction of the training steps"),
      KEY(actor_rollout_ref.actor.optim.lr_warmup_steps, count0().or_value(-1),
          "warm-up steps; -1: use lr_warmup_steps_ratio"),
      KEY(actor_rollout_ref.actor.optim.warmup_style, choice(train::kWarmupStyleNames),
          "learning-rate schedule after warm-up (alias lr_scheduler_type)"),
      KEY(actor_rollout_ref.actor.optim.min_lr_ratio, between(0, 1), "cosine schedule floor, fraction of lr"),
      KEY(actor_rollout_ref.actor.fsdp_config.mixed_precision.reduce_dtype, choice(comm::kWireNames),
          "gradients on the wire between ranks (summed in fp32 either way)"),
      KEY(actor_rollout_ref.actor.fsdp_config.bucket_cap_mb, open_closed(0, 1 << 20),
          "gradient reduce-scatter bucket size, MB of fp32 gradients"),
      KEY(actor_rollout_ref.actor.fsdp_config.overlap_comm, any(),
          "start each bucket's reduction as soon as the backward completed it (false: after the backward)"),
      KEY(actor_rollout_ref.actor.fsdp_config.reduce_per_micro_batch, any(),
          "reduce-scatter gradients into the shard after every micro-batch, as FSDP does, releasing each bucket "
          "once reduced: no whole-model gradient buffer (false: accumulate whole, reduce once per mini-batch)"),
      KEY(actor_rollout_ref.actor.fsdp_config.reshard_after_forward, any(),
          "ZeRO-3: while training keep only this rank's shard of the layers' parameters and gather each layer "
          "just in time, the next one prefetched (false: ZeRO-2, whole parameters on every rank)"),

      KEY(actor_rollout_ref.rollout.do_sample, any(),
          "sample (false: greedy decoding, whatever temperature, top_p and top_k say)"),
      KEY(actor_rollout_ref.rollout.n, count(), "responses sampled per prompt (the group size)"),
      KEY(actor_rollout_ref.rollout.temperature, temperature(),
          "sampling temperature; 0: greedy (training then needs rollout.n = 1)"),
      KEY(actor_rollout_ref.rollout.top_p, between(1e-6, 1), "nucleus sampling mass"),
      KEY(actor_rollout_ref.rollout.top_k, count().or_value(-1), "top-k sampling; -1: off"),
      KEY(actor_rollout_ref.rollout.min_p, between(0, 1), "min-p sampling; 0: off"),
      KEY(actor_rollout_ref.rollout.kv_cache_dtype, choice(kKvCacheDtypeNames),
          "KV cache element type; auto: the compute type"),
      KEY(actor_rollout_ref.rollout.gpu_memory_utilization, open_closed(0, 1),
          "fraction of what the rest of the run leaves (the memory plan: the machine's memory less every other "
          "part of the rollout phases) that the KV cache may take, never more than a rollout uses at once "
          "(min(max_num_seqs, train_batch_size x n) sequences of max_prompt_length + max_response_length)"),
      KEY(actor_rollout_ref.rollout.max_num_batched_tokens, count(), "tokens per engine step at most"),
      KEY(actor_rollout_ref.rollout.max_num_seqs, count(), "sequences running at once at most"),
      KEY(actor_rollout_ref.rollout.enable_prefix_caching, any(), "reuse KV blocks of repeated prefixes"),
      KEY(actor_rollout_ref.rollout.continuous_batching, any(),
          "finished responses leave the batch at once (false: a static batch that decodes padding until its "
          "longest response ends, the baseline)"),
      KEY(actor_rollout_ref.rollout.share_group_prompt, any(),
          "prefill each prompt once and share its KV blocks with its n samples (false: once per sample)"),
      KEY(actor_rollout_ref.rollout.decode_matmul, choice(ops::kDecodeMatmulNames),
          "rollout matmuls: batch_invariant (hand-written kernel at every batch size: results independent of "
          "the batch), fastest (it up to the measured crossover, oneDNN above), onednn (baseline)"),
      KEY(actor_rollout_ref.rollout.ignore_eos, any(),
          "ignore stop tokens: every response runs to max_response_length (benchmarks: the same work per step)"),
      KEY(actor_rollout_ref.rollout.response_lengths, choice(kResponseLengthsNames),
          "benchmarks: long_tail stops each sample at a length drawn for it from a seeded long-tailed "
          "distribution (median max_response_length / 20, 5% past half of it, ~2% at it): the same tokens in "
          "every configuration"),
      KEY(actor_rollout_ref.rollout.val_kwargs.do_sample, any(),
          "sample in validation (false, verl's default: greedy, whatever val_kwargs' temperature, top_p and top_k "
          "say)"),
      KEY(actor_rollout_ref.rollout.val_kwargs.temperature, temperature(),
          "validation temperature; 0: greedy (then val_kwargs.n must be 1)"),
      KEY(actor_rollout_ref.rollout.val_kwargs.top_p, between(1e-6, 1), "validation nucleus mass"),
      KEY(actor_rollout_ref.rollout.val_kwargs.top_k, count().or_value(-1), "validation top-k; -1: off"),
      KEY(actor_rollout_ref.rollout.val_kwargs.n, count(),
          "validation responses per prompt; > 1 adds val/accuracy/best@n and maj@n (val/accuracy is mean@n)"),
      KEY(actor_rollout_ref.rollout.multi_turn.enable, any(),
          "multi-turn rollouts: a response whose turn ends with a tool call is parked, the tools run, their "
          "results are prefilled as a tool turn and the model goes on (docs/tools.md)"),
      KEY(actor_rollout_ref.rollout.multi_turn.max_assistant_turns, count().or_value(0),
          "assistant turns per response at most; 0 (or null): no limit"),
      KEY(actor_rollout_ref.rollout.multi_turn.max_user_turns, count().or_value(0),
          "tool turns per response at most; 0 (or null): no limit"),
      KEY(actor_rollout_ref.rollout.multi_turn.max_tool_response_length, count(),
          "characters of a tool's result kept in the tool turn (the rest is cut, see tool_response_truncate_side)"),
      KEY(actor_rollout_ref.rollout.multi_turn.tool_response_truncate_side, choice(tools::kTruncateSideNames),
          "which part of a long tool result is kept: left (its start), middle (start and end), right (its end)"),
      KEY(actor_rollout_ref.rollout.multi_turn.tool_config_path, any(),
          "verl's tool config (YAML: tools with class_name, config, tool_schema); empty: the built-in calculator"),
      KEY(actor_rollout_ref.rollout.multi_turn.format, choice(tools::kToolCallFormatNames),
          "tool-call format: hermes, <tool_call>{\"name\": ..., \"arguments\": {...}}</tool_call> (Qwen's)"),

      KEY(actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu, count(),
          "sequences per reference log-prob micro-batch (when log_prob_use_dynamic_bsz is false)"),
      KEY(actor_rollout_ref.ref.log_prob_use_dynamic_bsz, any(),
          "reference log-prob micro-batches by token budget (first-fit decreasing); default: the actor's "
          "use_dynamic_bsz"),
      KEY(actor_rollout_ref.ref.log_prob_max_token_len_per_gpu, count(),
          "token budget of a reference log-prob micro-batch; default: the actor's ppo_max_token_len_per_gpu"),

      KEY(algorithm.adv_estimator, choice(train::kAdvEstimatorNames),
          "advantage estimator (gae is refused: it needs a critic)"),
      KEY(algorithm.gamma, between(0, 1), "reinforce_plus_plus: discount of the per-token returns"),
      KEY(algorithm.lam, between(0, 1), "GAE's lambda: read from verl configs, unused (gae is refused)"),
      KEY(algorithm.use_kl_in_reward, any(),
          "subtract kl_ctrl.kl_coef x KL(policy || reference) from each token's reward"),
      KEY(algorithm.kl_penalty, choice(train::kKlPenaltyNames, without_plus),
          "KL estimator of the reward penalty (full is refused: it needs whole distributions)"),
      KEY(algorithm.kl_ctrl.type, choice(train::kKlControllerNames), "KL-in-reward coefficient: fixed or adaptive"),
      KEY(algorithm.kl_ctrl.kl_coef, nonnegative_float(), "KL-in-reward coefficient (adaptive: its start)"),
      KEY(algorithm.kl_ctrl.target_kl, positive_float(), "adaptive: the KL the coefficient steers to"),
      KEY(algorithm.kl_ctrl.horizon, count(), "adaptive: steps over which the coefficient moves"),
      KEY(algorithm.rollout_correction.rollout_is, choice(train::kRolloutIsNames),
          "importance weights pi_old / pi_rollout: token, sequence, or null (none)"),
      KEY(algorithm.rollout_correction.rollout_is_threshold, positive_float(),
          "the importance weights are truncated at this"),
      KEY(algorithm.rollout_correction.rollout_rs, any(),
          "reject tokens or responses whose rollout/trainer divergence is out of bounds: comma-separated "
          "token_k1|k2|k3, seq_sum_k1|k2|k3, seq_mean_k1|k2|k3, seq_max_k2|k3; null: none"),
      KEY(algorithm.rollout_correction.rollout_rs_threshold, any(),
          "rollout_rs bounds: one for all criteria or one per criterion (comma-separated); k1: \"lower_upper\" "
          "ratio bounds or an upper ratio U meaning [1/U, U]; k2, k3: an upper bound"),
      KEY(algorithm.norm_adv_by_std_in_grpo, any(), "divide advantages by the group std (false: Dr. GRPO)"),
      KEY(algorithm.scale_rewards, choice(train::kAdvantageScalingNames),
          "std used to scale advantages (TRL); none is norm_adv_by_std_in_grpo: false"),
      KEY(algorithm.filter_groups.enable, any(), "DAPO dynamic sampling: drop groups whose rewards are all equal"),
      KEY(algorithm.filter_groups.max_num_gen_batches, count0(),
          "generation rounds per step at most while filling the batch; 0: one pass over the training prompts "
          "(at least 10 rounds); a step left without any group is logged and skipped"),
      KEY(algorithm.mask_truncated_completions, any(), "leave responses cut at max_response_length out of the loss"),

      KEY(trainer.total_training_steps, count0(), "training steps; 0: total_epochs x steps per epoch"),
      KEY(trainer.total_epochs, count(), "passes over the training prompts"),
      KEY(trainer.save_freq, count().or_value(-1), "checkpoint every this many steps; -1: only at the end"),
      KEY(trainer.max_actor_ckpt_to_keep, count0(),
          "checkpoints kept, the newest (older ones removed once a new one is complete); 0 or null: all"),
      KEY(trainer.test_freq, count().or_value(-1), "validate every this many steps; -1: only at the end"),
      KEY(trainer.default_local_dir, any(),
          "run folder: checkpoints, metrics.jsonl, config, report; unset: checkpoints/<project_name>/"
          "<experiment_name> (as verl); ${key} in any text value is that key's value"),
      KEY(trainer.seed, at_least(0), "seed of data order, sampling and initialisation (any integer >= 0)"),
      KEY(trainer.logger, choice(kLoggerNames),
          "where step metrics go: console (a line per step), jsonl (<run>/metrics.jsonl, also read by "
          "report.html and resume), tensorboard (event files in <run>/tensorboard_log/<project>/<experiment>)"),
      KEY(trainer.project_name, any(), "project name (TensorBoard folder, report)"),
      KEY(trainer.experiment_name, any(), "experiment name (TensorBoard folder, report)"),
      KEY(trainer.val_before_train, any(), "validate once before the first step"),
      KEY(trainer.resume_mode, choice(kResumeModeNames),
          "a run folder holding an earlier run: disable refuses it (grpo train --overwrite starts over), auto "
          "resumes from its latest checkpoint, resume_path resumes from trainer.resume_from_path"),
      KEY(trainer.resume_from_path, any(),
          "checkpoint to resume from with resume_mode resume_path: a global_step_N folder or a run folder"),
      KEY(trainer.nnodes, count0(), "machines of the run, checked against mpirun's ranks; 0: as launched"),
      KEY(trainer.n_gpus_per_node, count0(),
          "ranks per machine (processes started by mpirun), checked against the launch; 0: as launched"),
      KEY(trainer.comm_timeout_s, open_closed(0, 7 * 24 * 3600),
          "seconds a collective may take before the run stops with an error (a rank died or hangs)"),

      KEY(reward.functions, any(),
          "reward functions, summed with their weights; empty: verl's choice (the custom function, else each "
          "row's data_source rule, else math)"),
      KEY(reward.custom_reward_function.path, any(),
          "verl's custom reward: a Python file whose function scores every response; empty: none"),
      KEY(reward.custom_reward_function.name, any(), "the function in custom_reward_function.path"),
      KEY(reward.custom_reward_function.reward_kwargs, any(), "keyword arguments passed to the custom function"),
      KEY(reward.custom_reward_function.workers, between(1, kMaxRewardWorkers),
          "python3 worker processes scoring in parallel"),
      KEY(reward.custom_reward_function.timeout_s, open_closed(0, kMaxRewardTimeoutSeconds),
          "seconds a call of the custom function may take (a batch share in batch mode); past it the sample "
          "scores 0 and counts as a failure"),
      KEY(reward.reward_manager, choice(kRewardManagerNames),
          "verl's reward manager: batch calls the custom function with lists (data_sources, solution_strs, "
          "ground_truths, extra_infos); the others call it once a response"),
      KEY(reward.reward_kwargs, any(),
          "verl's reward_model.reward_kwargs: passed to the custom function with reward_manager batch; with "
          "dapo, overlong_buffer_cfg sets reward.overlong_buffer"),
      KEY(reward.overlong_buffer.enable, any(), "DAPO overlong shaping: linear penalty near max_response_length"),
      KEY(reward.overlong_buffer.len, count0(), "tokens before max_response_length where the penalty starts"),
      KEY(reward.overlong_buffer.penalty_factor, nonnegative_float(), "penalty at max_response_length"),
      KEY(reward.max_failure_fraction, between(0, 1),
          "stop the run when a reward function fails on more than this fraction of a step's samples"),

      KEY(mixed_precision.enabled, any(), "bf16 GEMM inputs with f32 accumulation and f32 master weights"),
      KEY(mixed_precision.op_blacklist, choice(kGemmSiteNames),
          "GEMMs to keep in f32 under mixed precision: not supported, must be empty"),

      KEY(sft.lr, positive_float(), "SFT AdamW learning rate"),
      KEY(sft.epochs, count(), "SFT passes over the data"),
      KEY(sft.batch_size, count(), "SFT sequences per optimizer step"),
      KEY(sft.max_length, between(2, kInt32), "SFT prompt + response tokens at most (longer examples are dropped)"),
      KEY(sft.lr_warmup_steps_ratio, between(0, 1), "SFT linear warm-up fraction"),
      KEY(sft.weight_decay, nonnegative_float(), "SFT AdamW weight decay"),
      KEY(sft.grad_clip, open_closed(0, kFloat).or_value(-1), "SFT gradient norm clip; -1: none"),
      KEY(sft.stop_at_val_accuracy, between(0, 1),
          "SFT stops at the first validation (every trainer.test_freq steps) whose held-out accuracy reaches this; 0: never"),
  };
}

#undef KEY

struct Alias {
  const char* from;
  const char* to;
};
const Alias kAliases[] = {
    {"use_dynamic_bsz", "actor_rollout_ref.actor.use_dynamic_bsz"},
    {"max_tokens_per_gpu", "actor_rollout_ref.actor.ppo_max_token_len_per_gpu"},
    {"actor_rollout_ref.actor.max_tokens_per_gpu", "actor_rollout_ref.actor.ppo_max_token_len_per_gpu"},
    {"actor_rollout_ref.actor.optim.lr_scheduler_type", "actor_rollout_ref.actor.optim.warmup_style"},
    {"actor_rollout_ref.actor.optim.clip_grad", "actor_rollout_ref.actor.grad_clip"},
    {"actor_rollout_ref.nccl_timeout", "trainer.comm_timeout_s"},
    {"reward_model.overlong_buffer", "reward.overlong_buffer"},
    {"reward_model.reward_kwargs.overlong_buffer_cfg", "reward.overlong_buffer"},
    {"reward.reward_kwargs.overlong_buffer_cfg", "reward.overlong_buffer"},  // verl's newer reward section
    {"custom_reward_function.overlong_buffer", "reward.overlong_buffer"},  // DAPO's early run scripts
    // (the more specific spellings above come first: the first alias whose section matches wins)
    {"custom_reward_function", "reward.custom_reward_function"},
    {"reward_model.reward_manager", "reward.reward_manager"},
    {"reward_model.reward_kwargs", "reward.reward_kwargs"},
};

bool starts_section(const std::string& name, const std::string& prefix) {
  return name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 && name[prefix.size()] == '.';
}

}  // namespace

const std::vector<KeySpec>& key_specs() {
  static const std::vector<KeySpec> table = build_table();
  return table;
}

const KeySpec* find_key(const std::string& name) {
  for (const auto& k : key_specs())
    if (k.name == name) return &k;
  return nullptr;
}

std::string resolve_alias(const std::string& name) {
  for (const auto& a : kAliases) {
    const std::string from = a.from;
    if (name == from) return a.to;
    if (starts_section(name, from)) return a.to + name.substr(from.size());
  }
  return name;
}

bool is_section(const std::string& prefix) {
  for (const auto& k : key_specs())
    if (starts_section(k.name, prefix)) return true;
  for (const auto& a : kAliases)
    if (starts_section(a.from, prefix)) return true;
  return false;
}

std::string type_name(KeyType type) {
  switch (type) {
    case KeyType::Int: return "integer";
    case KeyType::Float: return "number";
    case KeyType::Bool: return "boolean";
    case KeyType::String:
    case KeyType::Choice:
      return "text";
    case KeyType::StringList:
    case KeyType::ChoiceList:
      return "list of text";
    case KeyType::FloatList: return "list of numbers";
    case KeyType::RewardFunctions: return "list of reward functions";
    case KeyType::Mapping: return "mapping";
  }
  return "?";
}

std::string format_double(double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, res.ptr);
  // Keep a float looking like one when it is written back ("1" -> "1.0").
  if (std::isfinite(v) && s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string value_text(const KeySpec& spec, Config& config) {
  void* p = spec.field(config);
  switch (spec.type) {
    case KeyType::Int: return std::to_string(*static_cast<int64_t*>(p));
    case KeyType::Float: return format_double(*static_cast<double*>(p));
    case KeyType::Bool: return *static_cast<bool*>(p) ? "true" : "false";
    case KeyType::String: return "\"" + *static_cast<std::string*>(p) + "\"";
    case KeyType::Choice:
      return "\"" + spec.allowed.get_names(p)[0] + "\"";
    case KeyType::StringList:
    case KeyType::ChoiceList: {
      const std::vector<std::string> names =
          spec.type == KeyType::ChoiceList ? spec.allowed.get_names(p) : *static_cast<std::vector<std::string>*>(p);
      std::string s = "[";
      for (const auto& v : names) s += (s.size() > 1 ? ", " : "") + v;
      return s + "]";
    }
    case KeyType::FloatList: {
      std::string s = "[";
      for (double v : *static_cast<std::vector<double>*>(p)) s += (s.size() > 1 ? ", " : "") + format_double(v);
      return s + "]";
    }
    case KeyType::Mapping: return static_cast<nlohmann::json*>(p)->dump();
    case KeyType::RewardFunctions: {
      std::string s = "[";
      for (const auto& f : *static_cast<std::vector<RewardFunctionConfig>*>(p))
        s += cat(s.size() > 1 ? ", " : "", "{name: ", kRewardKindNames.name(f.name),
                 ", weight: ", format_double(f.weight), "}");
      return s + "]";
    }
  }
  return "?";
}

}  // namespace grpo::config_detail
