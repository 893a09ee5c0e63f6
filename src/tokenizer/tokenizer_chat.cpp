// Tokenizer::apply_chat_template: the model's chat template rendered by grpo::render_chat_template with
// bos_token / eos_token in the context, as transformers does. Kept apart from tokenizer.cpp so that code
// which only encodes does not link the template engine.
#include "core/error.h"
#include "tokenizer/tokenizer_impl.h"

namespace grpo {

std::string Tokenizer::apply_chat_template(const ChatTemplateInput& in) const {
  if (impl_->chat_template.empty())
    fail("[tokenizer] ", impl_->source, ": no chat_template (tokenizer_config.json has none or is missing)");
  ChatTemplateInput input = in;
  if (!input.extra.contains("bos_token")) input.extra["bos_token"] = impl_->bos_token;
  if (!input.extra.contains("eos_token")) input.extra["eos_token"] = impl_->eos_token;
  return render_chat_template(impl_->chat_template, input, "tokenizer_config.json: chat_template");
}

}  // namespace grpo
