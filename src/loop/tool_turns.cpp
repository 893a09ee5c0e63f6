// The tools' turn handler (see tool_turns.h).
#include "loop/tool_turns.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "core/error.h"
#include "report/metrics.h"

namespace grpo {

namespace {
const nlohmann::ordered_json kNoThinking = nlohmann::ordered_json::object({{"enable_thinking", false}});
}  // namespace

ToolTurns::ToolTurns(const Tokenizer& tok, tools::ToolRunner& runner, int32_t end_id)
    : tok_(tok), runner_(runner), end_id_(end_id) {
  GRPO_CHECK(!tok.chat_template().empty(), "[tools] multi-turn rollouts render tool turns with the model's chat "
             "template, and the tokenizer has none (chat_template in tokenizer_config.json)");
  end_text_ = tok.decode({end_id});
  reply_text({"0"}, true);  // a template that cannot render tool turns fails now, not in the first rollout
}

std::string ToolTurns::reply_text(const std::vector<std::string>& results, bool ended_with_end_token) const {
  const std::string marker = "\x1f" "assistant-content" "\x1f";
  nlohmann::ordered_json messages = nlohmann::ordered_json::array(
      {{{"role", "user"}, {"content", "q"}}, {{"role", "assistant"}, {"content", marker}}});
  for (const std::string& r : results) messages.push_back({{"role", "tool"}, {"content", r}});
  const std::string rendered = tok_.apply_chat_template(messages, nullptr, true, kNoThinking);
  const size_t at = rendered.rfind(marker);
  GRPO_CHECK(at != std::string::npos, "[tools] the chat template does not write an assistant message's content");
  std::string reply = rendered.substr(at + marker.size());
  if (ended_with_end_token && reply.starts_with(end_text_)) reply.erase(0, end_text_.size());
  return reply;
}

std::future<rollout::TurnReply> ToolTurns::on_turn_end(const rollout::TurnEnd& turn) {
  if (!tools::has_tool_call(turn.turn_text)) return {};
  std::future<std::vector<tools::ToolResult>> calls = runner_.run_turn(std::string(turn.turn_text));
  const bool ended = !turn.turn_tokens.empty() && turn.turn_tokens.back() == end_id_;
  return std::async(std::launch::async, [this, calls = std::move(calls), ended]() mutable {
    const std::vector<tools::ToolResult> results = calls.get();
    rollout::TurnReply reply;
    std::vector<std::string> texts;
    for (const tools::ToolResult& r : results) {
      texts.push_back(r.text);
      if (r.failure != tools::ToolFailure::None) reply.failures.push_back(tools::failure_name(r.failure));
      reply.tool_seconds = std::max(reply.tool_seconds, r.seconds);  // the calls of a turn run concurrently
    }
    reply.tool_calls = static_cast<int32_t>(results.size());
    reply.tokens = tok_.encode(reply_text(texts, ended));
    return reply;
  });
}

tools::ToolSet load_run_tools(const MultiTurnConfig& mt) {
  return mt.tool_config_path.empty() ? tools::ToolSet::builtin({"calculator"}) : tools::ToolSet::load(mt.tool_config_path);
}

tools::ToolRunnerOptions tool_runner_options(const MultiTurnConfig& mt) {
  tools::ToolRunnerOptions o;
  o.max_tool_response_length = mt.max_tool_response_length;
  o.tool_response_truncate_side = mt.tool_response_truncate_side;
  return o;
}

rollout::MultiTurn multi_turn_options(const MultiTurnConfig& mt, rollout::TurnHandler* handler) {
  if (!mt.enable) return {};
  return {handler, static_cast<int32_t>(mt.max_assistant_turns), static_cast<int32_t>(mt.max_user_turns)};
}

void add_turn_metrics(nlohmann::json& m, const std::vector<rollout::TurnStats>& turns) {
  if (turns.empty()) return;
  std::vector<double> num_turns, calls, seconds, parked, inserted;
  std::map<std::string, int64_t> failures;
  double calling = 0;
  for (const rollout::TurnStats& t : turns) {
    num_turns.push_back(t.assistant_turns + t.user_turns + 1);
    calls.push_back(t.tool_calls);
    seconds.push_back(t.tool_seconds);
    parked.push_back(t.parked_seconds);
    inserted.push_back(static_cast<double>(t.inserted_tokens));
    calling += t.tool_calls > 0;
    for (const auto& [kind, count] : t.failures) failures[kind] += count;
  }
  add_summary(m, "num_turns", num_turns);
  add_summary(m, "timing_s/agent_loop/tool_calls", seconds);
  add_summary(m, "timing_s/agent_loop/parked", parked);
  const double n = static_cast<double>(turns.size());
  m["tools/calls_per_sample/mean"] = std::accumulate(calls.begin(), calls.end(), 0.0) / n;
  m["tools/call_share"] = calling / n;
  m["tools/inserted_tokens/mean"] = std::accumulate(inserted.begin(), inserted.end(), 0.0) / n;
  for (const auto& [kind, count] : failures) m["tools/failures/" + kind] = count;
}

RunTools::RunTools(const MultiTurnConfig& mt, const Tokenizer& tok, int32_t end_id)
    : set(load_run_tools(mt)), schemas(set.template_tools()) {
  runner = std::make_unique<tools::ToolRunner>(set, tool_runner_options(mt));
  turns = std::make_unique<ToolTurns>(tok, *runner, end_id);
  options = multi_turn_options(mt, turns.get());
}

}  // namespace grpo
