// verl's configuration keys that are not ours (see docs/verl.md): every key of verl's ppo_trainer.yaml tree
// (and of the configs its run scripts name) that this engine has no setting for, classified as
//   - no effect here: it steers only verl's GPU machinery (vLLM/SGLang engine, tensor/sequence/pipeline
//     parallel sizes, FSDP offload, log-prob micro-batches, Ray, profilers, PPO's critic under GRPO, ...):
//     accepted with any value, and listed once at start-up;
//   - only its default: a feature we do not have (LoRA, multi-turn tools, a reward model, KL in the
//     reward, ...): accepted while it holds verl's default (or another value that leaves the feature
//     off), an error naming the key, the value and why otherwise.
// Keys that are ours are in the key table (config_table.cpp); anything in neither is an unknown key.
#pragma once
#include <string>
#include <vector>

namespace grpo::config_detail {

enum class VerlKeyKind { NoEffect, OnlyDefault };

struct VerlKeyRule {
  std::string pattern;  // a dotted key, or a section "a.b.*" (every key under it)
  VerlKeyKind kind;
  std::vector<std::string> accepted;  // OnlyDefault: values that keep the feature off (null always is)
  std::string why;                    // OnlyDefault: what is not supported, for the error
};

// The rule for `key` (a dotted path, aliases resolved), or null when verl has no such key that we know of.
const VerlKeyRule* find_verl_key(const std::string& key);
// Whether an OnlyDefault rule accepts a scalar value (text as given; case-insensitive for true/false/null).
bool verl_value_accepted(const VerlKeyRule& rule, const std::string& value);
// Every dotted pattern (sections without their ".*"), for "did you mean" suggestions.
const std::vector<std::string>& verl_key_names();

// Loggers verl writes and we do not: accepted in trainer.logger with a line saying where metrics go.
bool is_foreign_logger(const std::string& name);

}  // namespace grpo::config_detail
