// Runs a folder of algorithm cases (the format of ../shared/reference/algorithms: cases.json listing each
// case's kind, inputs file, config under verl's full key names and output names) through the code training
// uses: estimate_advantages, policy_objective, kl_penalty and the rollout correction weights. Used by
// `grpo debug algorithm` and by the tests.
//
// Kinds: advantage (advantages, returns), policy_loss (advantages, pg_loss, grad.log_prob, metric.<name>, and
// with rollout correction rollout_is_weights and the response_mask left by rollout_rs),
// kl_penalty (kl); a kind ending in _refused expects an error. Inputs are verl's [B, T] tensors
// (token_level_rewards, response_mask, group, old_log_prob, log_prob, ref_log_prob, rollout_log_prob,
// reward_baselines); a policy_loss case takes `advantages` from its inputs file when there, else the
// advantages of the case's algorithm.* config (grpo with the group std by default).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "train/case_eval.h"

namespace grpo::train {

struct AlgorithmCaseResult {
  bool refused = false;
  std::string error;    // the message when refused
  CaseOutputs outputs;  // the case's outputs (only those it lists), float32 values
};

// Reads DIR/cases.json; returns the case table (name -> case), checking its shape.
nlohmann::json read_algorithm_cases(const std::string& dir);

// Runs one case; a grpo::Error (raised by the algorithm code, or for inputs, config or outputs this code
// cannot evaluate, or an unknown kind) becomes a refusal with its message.
AlgorithmCaseResult run_algorithm_case(const std::string& dir, const std::string& name, const nlohmann::json& c);

}  // namespace grpo::train
