// Tokenizer::apply_chat_template: the model's chat template rendered with bos_token / eos_token in the
// context, as transformers does. Kept apart from tokenizer.cpp so that code which only encodes does not
// link the template engine.
#include "core/error.h"
#include "tokenizer/jinja/chat_context.h"
#include "tokenizer/jinja/json_io.h"
#include "tokenizer/jinja/template.h"
#include "tokenizer/tokenizer_impl.h"

namespace grpo {
namespace {

constexpr const char* kTemplateName = "tokenizer_config.json: chat_template";

void check_has_template(const Tokenizer::Impl& impl) {
  if (impl.chat_template.empty())
    fail("[tokenizer] ", impl.source, ": no chat_template (tokenizer_config.json has none or is missing)");
}

}  // namespace

std::string Tokenizer::apply_chat_template(const ChatTemplateInput& in) const {
  check_has_template(*impl_);
  ChatTemplateInput input = in;
  if (!input.extra.contains("bos_token")) input.extra["bos_token"] = impl_->bos_token;
  if (!input.extra.contains("eos_token")) input.extra["eos_token"] = impl_->eos_token;
  return render_chat_template(impl_->chat_template, input, kTemplateName);
}

std::string Tokenizer::apply_chat_template(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                           bool add_generation_prompt, const nlohmann::ordered_json& extra) const {
  check_has_template(*impl_);
  nlohmann::ordered_json context = extra.is_null() ? nlohmann::ordered_json::object() : extra;
  if (!context.is_object()) fail("[tokenizer] apply_chat_template: extra must be a JSON object");
  if (!context.contains("bos_token")) context["bos_token"] = impl_->bos_token;
  if (!context.contains("eos_token")) context["eos_token"] = impl_->eos_token;
  const auto tpl = jinja::cached_template(impl_->chat_template, kTemplateName);
  return tpl->render(jinja::chat_context(jinja::from_json(messages), jinja::from_json(tools), add_generation_prompt,
                                         jinja::from_json(context)));
}

}  // namespace grpo
