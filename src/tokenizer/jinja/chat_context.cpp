// Builds the chat-template context the way transformers does, and renders chats from ordered JSON.
#include "tokenizer/jinja/chat_context.h"

#include "core/error.h"
#include "tokenizer/jinja/json_io.h"
#include "tokenizer/jinja/template.h"

namespace grpo::jinja {

Value chat_context(const Value& messages, const Value& tools, bool add_generation_prompt, const Value& extra) {
  GRPO_CHECK(messages.is_array() && messages.array().kind == ArrayKind::List, "[chat_template] messages must be a JSON array, got ",
             type_name(messages));
  for (const Value& m : messages.array().items)
    GRPO_CHECK(m.is_dict(), "[chat_template] every message must be a JSON object, got ", type_name(m));
  GRPO_CHECK(tools.is_none() || tools.is_undefined() || tools.is_array(),
             "[chat_template] tools must be null or a JSON array, got ", type_name(tools));
  GRPO_CHECK(extra.is_none() || extra.is_undefined() || extra.is_dict(),
             "[chat_template] extra template variables must be a JSON object, got ", type_name(extra));
  Value context = Value::make_object();
  auto& ctx = context.object();
  ctx.set(Value("messages"), messages);
  ctx.set(Value("tools"), tools.is_undefined() ? Value::none() : tools);
  ctx.set(Value("documents"), Value::none());
  ctx.set(Value("add_generation_prompt"), Value(add_generation_prompt));
  if (extra.is_dict())
    for (const auto& [k, v] : extra.object().entries) ctx.set(k, v);
  return context;
}

std::string render_chat(const std::string& source, const nlohmann::ordered_json& messages,
                        const nlohmann::ordered_json& tools, bool add_generation_prompt,
                        const nlohmann::ordered_json& extra, const std::string& template_name) {
  const auto tpl = cached_template(source, template_name);
  return tpl->render(chat_context(from_json(messages), from_json(tools), add_generation_prompt, from_json(extra)));
}

}  // namespace grpo::jinja
