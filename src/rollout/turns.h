// Multi-turn rollouts: what the engine asks when a sample's assistant turn ends, and what it keeps per
// sample. The engine knows nothing of tools or chat templates: a TurnHandler (loop/tool_turns.h wires the
// tools) looks at the turn that just ended and either lets the sample finish or starts work whose reply,
// token ids rendered by the caller (a tool turn and the next assistant header), is prefilled onto the
// sample before it decodes its next turn. While the work runs the sample is parked with its KV blocks kept.
//
//   struct Echo : TurnHandler {
//     std::future<TurnReply> on_turn_end(const TurnEnd& t) override { ... std::async(...) or {} ... }
//   };
//   engine.generate(requests, {}, MultiTurn{&echo, /*max_assistant_turns=*/4});
#pragma once
#include <cstdint>
#include <future>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace grpo::rollout {

// The assistant turn that just ended with a stop (token or string), before the response budget ran out.
struct TurnEnd {
  int32_t request = 0, sample = 0;       // index into generate()'s requests, sample index
  int32_t assistant_turns = 0;           // turns the sample has written, this one included
  std::span<const int32_t> turn_tokens;  // this turn's tokens, its stop token included
  std::string_view turn_text;            // this turn's text, the stop token's / stop string's excluded
};

// The handler's answer, once its work is done.
struct TurnReply {
  std::vector<int32_t> tokens;  // prefilled onto the sample, out of the loss; empty: the sample ends here
  int32_t tool_calls = 0;       // calls this turn made
  std::vector<std::string> failures;  // the kind of each failed call ("bad_json", "timeout", ...)
  double tool_seconds = 0;      // wall time of the calls
};

class TurnHandler {
 public:
  virtual ~TurnHandler() = default;
  // Called on the engine's thread for every turn that ends with a stop while turns are left; must not block.
  // An invalid (default) future: the turn holds nothing to answer, the sample finishes. Otherwise the engine
  // parks the sample and polls the future while the other samples decode. Must be callable concurrently
  // with the work of earlier calls (replies may come back in any order).
  virtual std::future<TurnReply> on_turn_end(const TurnEnd& turn) = 0;
};

// generate()'s multi-turn settings (verl's rollout.multi_turn). Limits <= 0 are off. The request's
// max_new_tokens bounds the whole response, the inserted tokens included (verl's response_length): a
// reply that would reach it is not inserted and the sample ends, cut by the length (FinishReason::Length).
struct MultiTurn {
  TurnHandler* handler = nullptr;  // null: single-turn
  int32_t max_assistant_turns = 0;
  int32_t max_user_turns = 0;      // replies inserted at most
};

// Per sample: its turns and the work the handler reported.
struct TurnStats {
  int32_t assistant_turns = 0;  // turns the model wrote
  int32_t user_turns = 0;       // replies inserted (tool turns)
  int32_t tool_calls = 0;
  std::map<std::string, int32_t> failures;  // kind -> calls that failed that way
  double tool_seconds = 0;
  double parked_seconds = 0;    // wall time parked, from each turn's end to its reply being taken
  int64_t inserted_tokens = 0;  // tokens of the inserted replies (response_mask 0)
};

}  // namespace grpo::rollout
