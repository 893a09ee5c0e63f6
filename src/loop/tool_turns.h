// Multi-turn rollouts with tools (actor_rollout_ref.rollout.multi_turn): the engine's TurnHandler over the
// run's ToolRunner. A turn that holds a hermes <tool_call> runs its calls on the runner's workers; their
// results become `tool` messages rendered by the model's own chat template (Qwen's wraps them in
// <tool_response> inside a user turn) followed by the next assistant header, and those tokens are what the
// engine prefills. The rendering: a conversation of a user turn, an assistant turn (a marker for content) and
// the tool messages through the template (generation prompt on); the reply is what the template writes after
// the assistant's content, less the end token the model already wrote (<|im_end|>, then Qwen's newline, the
// tool turn and the next assistant header). Unlike verl's cut of the tool messages rendered alone, this keeps
// the separator the template puts between turns, so rollouts read as the SFT conversations do.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/config.h"
#include "rollout/turns.h"
#include "tokenizer/tokenizer.h"
#include "tools/tool_runner.h"

namespace grpo {

class ToolTurns : public rollout::TurnHandler {
 public:
  // `end_id`: the token that ends an assistant turn in the template (<|im_end|>).
  ToolTurns(const Tokenizer& tok, tools::ToolRunner& runner, int32_t end_id);
  std::future<rollout::TurnReply> on_turn_end(const rollout::TurnEnd& turn) override;
  // The text of a tool turn holding `results` plus the next assistant header, after a turn that ended with
  // the template's end token (`ended_with_end_token`) or otherwise (the template's end is written first).
  std::string reply_text(const std::vector<std::string>& results, bool ended_with_end_token) const;

 private:
  const Tokenizer& tok_;
  tools::ToolRunner& runner_;
  int32_t end_id_;
  std::string end_text_;  // the end token's text
};

// The tools of a run's config: tool_config_path's (verl's YAML), else the built-in calculator.
tools::ToolSet load_run_tools(const MultiTurnConfig& mt);
tools::ToolRunnerOptions tool_runner_options(const MultiTurnConfig& mt);
// The engine's multi-turn settings for `handler` (null when multi_turn is off).
rollout::MultiTurn multi_turn_options(const MultiTurnConfig& mt, rollout::TurnHandler* handler);

// A run's tools with their runner and handler (Session::tools when multi_turn.enable).
struct RunTools {
  RunTools(const MultiTurnConfig& mt, const Tokenizer& tok, int32_t end_id);
  tools::ToolSet set;
  nlohmann::ordered_json schemas;  // the chat template's `tools`
  std::unique_ptr<tools::ToolRunner> runner;
  std::unique_ptr<ToolTurns> turns;
  rollout::MultiTurn options;
};

// The multi-turn metrics of a step over its samples' turn counts (verl's names where it has them):
// num_turns/{min,mean,max} (assistant + tool turns + 1, as verl counts), tools/calls_per_sample/mean,
// tools/call_share (responses with at least one call), tools/failures/<kind> (calls), tools/inserted_tokens/mean
// (tool-turn tokens per response, out of the loss; response_length counts the model's),
// timing_s/agent_loop/tool_calls/{min,mean,max} (seconds in tools per response),
// timing_s/agent_loop/parked/{min,mean,max} (seconds a response spent parked waiting for its tool replies).
void add_turn_metrics(nlohmann::json& m, const std::vector<rollout::TurnStats>& turns);

}  // namespace grpo
