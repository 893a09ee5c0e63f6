// Other well-known chat template styles, written here in the style of LLaMA-3, Mistral ([INST], roles that
// must alternate) and Gemma, rendered through the public render_chat_template entry point.
#include <gtest/gtest.h>

#include "core/error.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/jinja/chat_context.h"
#include "tokenizer/jinja/json_io.h"
#include "tokenizer/jinja/template.h"

using grpo::ChatTemplateInput;
using grpo::render_chat_template;

namespace {

const char* kLlama3Style = R"({{- bos_token }}
{%- if messages[0].role == 'system' %}
    {%- set system_message = messages[0].content | trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = '' %}
{%- endif %}
{%- if system_message %}
    {{- '<|start_header_id|>system<|end_header_id|>\n\n' + system_message + '<|eot_id|>' }}
{%- endif %}
{%- for message in messages %}
    {{- '<|start_header_id|>' + message.role + '<|end_header_id|>\n\n' + message.content | trim + '<|eot_id|>' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
)";

const char* kMistralStyle = R"({{- bos_token }}
{%- for message in messages %}
    {%- if (message.role == 'user') != (loop.index0 % 2 == 0) %}
        {{- raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}
    {%- endif %}
    {%- if message.role == 'user' %}
        {{- '[INST] ' + message.content + ' [/INST]' }}
    {%- elif message.role == 'assistant' %}
        {{- ' ' + message.content + eos_token }}
    {%- else %}
        {{- raise_exception('Only user and assistant roles are supported!') }}
    {%- endif %}
{%- endfor %}
)";

// Gemma style: no system role, assistant renamed to "model", trailing newline kept by the template text.
const char* kGemmaStyle =
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
    "{% for message in messages %}{% if message['role'] == 'assistant' %}{% set role = 'model' %}{% else %}"
    "{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + "
    "'<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %}";

ChatTemplateInput input(const char* messages_json, bool add_generation_prompt) {
  ChatTemplateInput in;
  in.messages = nlohmann::json::parse(messages_json);
  in.add_generation_prompt = add_generation_prompt;
  in.extra = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
  return in;
}

}  // namespace

TEST(TemplateStyles, Llama3StyleSystemMessageIsTrimmedAndSlicedOff) {
  const auto in = input(R"([{"role": "system", "content": " Be brief. "}, {"role": "user", "content": "Hi "},
                            {"role": "assistant", "content": "Hello!"}])",
                        true);
  EXPECT_EQ(render_chat_template(kLlama3Style, in, "llama3"),
            "<s><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  const auto no_system = input(R"([{"role": "user", "content": "Hi"}])", false);
  EXPECT_EQ(render_chat_template(kLlama3Style, no_system, "llama3"), "<s><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>");
}

TEST(TemplateStyles, MistralStyleInstBlocks) {
  const auto in = input(R"([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"},
                            {"role": "user", "content": "Bye"}])",
                        true);
  EXPECT_EQ(render_chat_template(kMistralStyle, in, "mistral"), "<s>[INST] Hi [/INST] Hello</s>[INST] Bye [/INST]");
}

TEST(TemplateStyles, MistralStyleRejectsBadRoleOrderWithTheTemplatesMessage) {
  const auto twice = input(R"([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])", false);
  try {
    render_chat_template(kMistralStyle, twice, "mistral");
    FAIL() << "expected raise_exception";
  } catch (const grpo::Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "[jinja] mistral:4: raise_exception: Conversation roles must alternate user/assistant/user/assistant/...");
  }
  const auto system = input(R"([{"role": "system", "content": "s"}])", false);
  try {
    render_chat_template(kMistralStyle, system, "mistral");
    FAIL() << "expected raise_exception";
  } catch (const grpo::Error& e) {
    // "system" at index 0 is not "user": the alternation check fires first.
    EXPECT_NE(std::string(e.what()).find("Conversation roles must alternate"), std::string::npos);
  }
  const auto tool = input(R"([{"role": "user", "content": "a"}, {"role": "tool", "content": "b"}])", false);
  EXPECT_THROW(
      {
        try {
          render_chat_template(kMistralStyle, tool, "mistral");
        } catch (const grpo::Error& e) {
          EXPECT_EQ(std::string(e.what()), "[jinja] mistral:11: raise_exception: Only user and assistant roles are supported!");
          throw;
        }
      },
      grpo::Error);
}

TEST(TemplateStyles, GemmaStyleRenamesAssistantAndTrims) {
  const auto in = input(R"([{"role": "user", "content": " q "}, {"role": "assistant", "content": "a\n"}])", true);
  EXPECT_EQ(render_chat_template(kGemmaStyle, in, "gemma"),
            "<s><start_of_turn>user\nq<end_of_turn>\n<start_of_turn>model\na<end_of_turn>\n<start_of_turn>model\n");
}

TEST(TemplateStyles, ToolSchemasThroughAMacroWithIndentedJson) {
  const char* tpl = R"({%- macro render_tool(tool) -%}
{{ tool.function.name }}: {{ tool.function.parameters | tojson(indent=2) }}
{%- endmacro %}
{%- if tools %}
<tools>
{%- for tool in tools %}
{{ render_tool(tool) }}
{%- endfor %}
</tools>
{% endif %}
{%- for message in messages %}
{{ message.role }}: {{ message.content }}
{% endfor %}
)";
  const auto tools = nlohmann::ordered_json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])");
  const auto messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "Weather?"}])");
  const auto context = grpo::jinja::chat_context(grpo::jinja::from_json(messages), grpo::jinja::from_json(tools), false,
                                                 grpo::jinja::Value::none());
  // `{%- for` eats the newline after <tools>, `{%- endfor %}` the one after each tool, and trim_blocks
  // the newline after `%}`: the tools sit between the tags with no blank lines.
  EXPECT_EQ(grpo::jinja::Template(tpl, "tools").render(context),
            "<tools>get_weather: {\n  \"type\": \"object\",\n  \"properties\": {\n    \"city\": {\n      \"type\": \"string\"\n"
            "    }\n  },\n  \"required\": [\n    \"city\"\n  ]\n}</tools>\nuser: Weather?\n");
}

TEST(TemplateStyles, ContextHoldsTransformersVariables) {
  ChatTemplateInput in = input(R"([{"role": "user", "content": "x"}])", true);
  in.extra["enable_thinking"] = false;
  const char* tpl =
      "{{ tools is none }} {{ documents is none }} {{ add_generation_prompt }} {{ enable_thinking is false }} {{ bos_token }}";
  EXPECT_EQ(render_chat_template(tpl, in), "True True True True <s>");
  in.messages = nlohmann::json::object();
  EXPECT_THROW(render_chat_template(tpl, in), grpo::Error);
}
