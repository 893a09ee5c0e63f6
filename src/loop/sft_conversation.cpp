// Multi-turn SFT samples (see sft_conversation.h).
#include "loop/sft_conversation.h"

#include "core/error.h"
#include "data/prompting.h"
#include "tools/chat_turns.h"

namespace grpo {

std::vector<train::TrainSample> conversation_samples(const Tokenizer& tok, const Example& ex, bool apply_chat_template) {
  const std::string where = cat("[sft] example \"", ex.id, "\"");
  GRPO_CHECK(apply_chat_template, where, ": a conversation target (turns after the last user turn of `messages`) ",
             "needs data.apply_chat_template: true");
  const nlohmann::ordered_json& turns = ex.response_messages;
  const nlohmann::ordered_json extra = {{"enable_thinking", false}};  // as prompt_text renders the prompt
  const int32_t end_id = response_end_id(tok, true);
  std::vector<int32_t> seq = ex.prompt_ids;
  std::vector<train::TrainSample> out;
  for (size_t i = 0; i < turns.size();) {
    const std::string role = turns[i].value("role", "");
    if (role == "assistant") {
      train::TrainSample s;
      s.prompt_len = static_cast<int64_t>(seq.size());
      const std::vector<int32_t> ids = tok.encode(tools::assistant_turn_text(turns[i]));
      seq.insert(seq.end(), ids.begin(), ids.end());
      seq.push_back(end_id);
      s.tokens = seq;
      out.push_back(std::move(s));
      ++i;
      continue;
    }
    GRPO_CHECK(role == "tool", where, ": a turn after the last user turn is \"", role,
               "\" (expected assistant or tool turns)");
    std::vector<std::string> results;
    for (; i < turns.size() && turns[i].value("role", "") == "tool"; ++i) {
      GRPO_CHECK(turns[i].contains("content") && turns[i]["content"].is_string(), where,
                 ": a tool turn needs a string \"content\"");
      results.push_back(turns[i]["content"].get<std::string>());
    }
    const std::vector<int32_t> ids = tok.encode(tools::tool_turn_text(tok, results, extra));
    seq.insert(seq.end(), ids.begin(), ids.end());
  }
  return out;
}

}  // namespace grpo
