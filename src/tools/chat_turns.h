// The text of the turns of a conversation with tool calls, as the model sees them token for token, the
// same for supervised fine-tuning (loop/sft_conversation.h) and for multi-turn rollouts:
//   prompt (chat template, tools, generation prompt)
//   assistant turn: content and <tool_call> blocks as Qwen3's template writes them, then the end token
//   tool turn: what follows the end token when the results come back: the template's turn separator
//     ("\n" for ChatML) and the template's rendering of the tool messages alone with the generation prompt
//     (as verl's ToolAgentLoop prefills them): "\n<|im_start|>user\n<tool_response>\n42\n</tool_response>
//     <|im_end|>\n<|im_start|>assistant\n" (+ Qwen3's empty think block when enable_thinking is false)
// then the next assistant turn, and so on. Only assistant turns are trained on.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tools/tool_call.h"

namespace grpo::tools {

// An assistant message ({"role": "assistant", "content", "tool_calls": [{"type": "function", "function":
// {"name", "arguments"}}]}) as the model writes it, without the end token.
std::string assistant_turn_text(const nlohmann::ordered_json& message);

// The tool turn after an assistant turn's end token (see above): `results` are the tool messages' contents,
// in order; `extra` the template's other variables (enable_thinking).
std::string tool_turn_text(const Tokenizer& tok, const std::vector<std::string>& results,
                           const nlohmann::ordered_json& extra);

}  // namespace grpo::tools
