// `grpo generate` as a function: reads a JSONL prompts file (prompt_line.h), generates every good line's
// completions with the rollout engine (KV budget never above what the lines can use) and writes each input
// line plus "completions": [{text, token_ids, logprobs, finish_reason}]. A bad line (invalid JSON or field,
// a prompt that does not fit the model's context or the KV cache) is reported on stderr (file:line, field)
// and skipped; the rest is still written, then the call throws naming the count. Progress on stderr.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>

#include "generate/options.h"
#include "rollout/turns.h"
#include "tokenizer/tokenizer.h"

namespace grpo::generate {

// Multi-turn generation with tools: the schemas the chat template renders and the engine's turn handler.
struct GenerateTools {
  const nlohmann::ordered_json* schemas = nullptr;
  rollout::MultiTurn turns;
};
// Called once the tokenizer is loaded when options.tools or options.tool_config ask for tools; what it
// returns must stay valid until run_generate returns. A completion then also has "response_mask",
// "num_turns", "tool_calls" and "tool_failures".
using MakeTools = std::function<GenerateTools(const Tokenizer& tok)>;

void run_generate(const GenerateOptions& options, const MakeTools& make_tools);

}  // namespace grpo::generate
