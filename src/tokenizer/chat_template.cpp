// render_chat_template: converts the JSON inputs to Jinja values and renders the (cached) parsed template.
#include "tokenizer/chat_template.h"

#include "tokenizer/jinja/chat_context.h"
#include "tokenizer/jinja/json_io.h"
#include "tokenizer/jinja/template.h"

namespace grpo {

std::string render_chat_template(const std::string& source, const ChatTemplateInput& input,
                                 const std::string& template_name) {
  const auto tpl = jinja::cached_template(source, template_name);
  return tpl->render(jinja::chat_context(jinja::from_json(input.messages), jinja::from_json(input.tools),
                                         input.add_generation_prompt, jinja::from_json(input.extra)));
}

}  // namespace grpo
