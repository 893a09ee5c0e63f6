// Supervised fine-tuning on conversations with tool calls: a row whose `messages` go on after the last user
// turn (Example::response_messages: assistant turns with `tool_calls`, `tool` turns, a final answer) gives
// one training sample per assistant turn, each the conversation's tokens up to the end of that turn with
// everything before it as its prompt. The tokens are those of a multi-turn rollout (tools/chat_turns.h):
// the prompt with its tools, each assistant turn and its end token, each tool turn as the template renders
// it; only assistant tokens are trained on (tool turns and template tokens are prompt).
#pragma once
#include <vector>

#include "data/dataset.h"
#include "tokenizer/tokenizer.h"
#include "train/actor.h"

namespace grpo {

// ex.prompt_ids must be the prompt's tokens (with the chat template); an error names the row when a turn
// is not an assistant or tool turn, or when the chat template is off.
std::vector<train::TrainSample> conversation_samples(const Tokenizer& tok, const Example& ex, bool apply_chat_template);

}  // namespace grpo
