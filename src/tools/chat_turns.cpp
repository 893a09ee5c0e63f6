// Turn texts of tool-calling conversations (see chat_turns.h).
#include "tools/chat_turns.h"

#include "core/error.h"
#include "tokenizer/jinja/json_io.h"

namespace grpo::tools {

namespace {

constexpr const char* kTurnEnd = "<|im_end|>";

// What the template writes after a turn's end token before the next turn: the text that follows the last
// end token of a one-message conversation ("\n" for ChatML templates; "" when there is none).
std::string turn_separator(const Tokenizer& tok, const nlohmann::ordered_json& extra) {
  const nlohmann::ordered_json one = nlohmann::ordered_json::array({{{"role", "user"}, {"content", "x"}}});
  const std::string text = tok.apply_chat_template(one, nullptr, /*add_generation_prompt=*/false, extra);
  const size_t end = text.rfind(kTurnEnd);
  return end == std::string::npos ? "" : text.substr(end + std::char_traits<char>::length(kTurnEnd));
}

}  // namespace

std::string assistant_turn_text(const nlohmann::ordered_json& message) {
  GRPO_CHECK(message.is_object() && message.value("role", "") == "assistant", "[tools] expected an assistant message, got ",
             message.dump());
  std::string text = message.contains("content") && message["content"].is_string() ? message["content"].get<std::string>() : "";
  if (!message.contains("tool_calls")) return text;
  bool first = true;
  for (const auto& c : message["tool_calls"]) {
    const auto& f = c.contains("function") ? c["function"] : c;
    GRPO_CHECK(f.contains("name") && f["name"].is_string() && f.contains("arguments"),
               "[tools] a tool call needs a name and arguments, got ", c.dump());
    // As Qwen3's template: the name as it is, arguments given as JSON text as they are, else tojson (key
    // order kept).
    const auto& arguments = f["arguments"];
    if (!first || !text.empty()) text += "\n";
    text += cat("<tool_call>\n{\"name\": \"", f["name"].get<std::string>(), "\", \"arguments\": ",
                arguments.is_string() ? arguments.get<std::string>() : jinja::to_json(jinja::from_json(arguments)),
                "}\n</tool_call>");
    first = false;
  }
  return text;
}

std::string tool_turn_text(const Tokenizer& tok, const std::vector<std::string>& results,
                           const nlohmann::ordered_json& extra) {
  GRPO_CHECK(!results.empty(), "[tools] a tool turn needs at least one result");
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  for (const auto& r : results) messages.push_back({{"role", "tool"}, {"content", r}});
  return turn_separator(tok, extra) + tok.apply_chat_template(messages, nullptr, /*add_generation_prompt=*/true, extra);
}

}  // namespace grpo::tools
