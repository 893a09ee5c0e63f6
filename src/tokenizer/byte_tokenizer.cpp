// The byte tokenizer files (see byte_tokenizer.h), in the layout of a Qwen tokenizer so that the same
// loaders handle both: BPE model with the byte alphabet as vocabulary, added tokens with their flags, and
// tokenizer_config.json with added_tokens_decoder and the chat template.
#include "tokenizer/byte_tokenizer.h"

#include <nlohmann/json.hpp>

#include "core/files.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/vl_chat_template.h"

namespace grpo {

namespace {

using nlohmann::ordered_json;

// <|...|> tokens are control tokens (special); <think> tags are ordinary added tokens, as in Qwen3.
bool is_special_token(const std::string& t) { return t.rfind("<|", 0) == 0; }

// ChatML: <|im_start|>{role}\n{content}<|im_end|>\n per message; the generation prompt opens an assistant
// turn, with an empty think block when enable_thinking is false (as Qwen3's template does). Tool use as
// Qwen3's template writes it (assistant `tool_calls` as hermes <tool_call> blocks, consecutive `tool` turns
// in one user turn of <tool_response> blocks), but the tools are listed in a short system turn
// ("Tools: calculator(expression)"), as byte-level prompts are one token a character.
constexpr const char* kChatTemplate = R"tmpl(
{%- if tools %}
  {{- '<|im_start|>system\n' }}
  {%- if messages[0].role == 'system' %}{{- messages[0].content + '\n' }}{%- endif %}
  {{- 'Tools:' }}
  {%- for tool in tools %}
    {%- set f = tool.function if tool.function is defined else tool %}
    {%- set args = f.parameters.properties | list if f.parameters is defined and f.parameters.properties is defined else [] %}
    {{- ' ' + f.name + '(' + args | join(', ') + ')' }}
  {%- endfor %}
  {{- '<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
  {%- if message.role == 'system' and loop.first and tools %}
  {%- elif message.role == 'tool' %}
    {%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}
    {{- '\n<tool_response>\n' + message.content + '\n</tool_response>' }}
    {%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\n' }}{%- endif %}
  {%- elif message.tool_calls %}
    {%- set content = message.content if message.content is string else '' %}
    {{- '<|im_start|>' + message.role + '\n' + content }}
    {%- for tool_call in message.tool_calls %}
      {%- if (loop.first and content) or (not loop.first) %}{{- '\n' }}{%- endif %}
      {%- set call = tool_call.function if tool_call.function is defined else tool_call %}
      {{- '<tool_call>\n{"name": "' + call.name + '", "arguments": ' }}
      {%- if call.arguments is string %}{{- call.arguments }}{%- else %}{{- call.arguments | tojson }}{%- endif %}
      {{- '}\n</tool_call>' }}
    {%- endfor %}
    {{- '<|im_end|>\n' }}
  {%- else %}
    {{- '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}
  {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
  {{- '<|im_start|>assistant\n' }}
  {%- if enable_thinking is defined and enable_thinking is false %}
    {{- '<think>\n\n</think>\n\n' }}
  {%- endif %}
{%- endif %})tmpl";

ordered_json byte_level_component() {
  return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
}

ordered_json added_token_entry(int64_t id, const std::string& content) {
  return {{"id", id},          {"content", content}, {"single_word", false}, {"lstrip", false},
          {"rstrip", false},   {"normalized", false}, {"special", is_special_token(content)}};
}

}  // namespace

const std::vector<std::string>& byte_tokenizer_added_tokens(bool vision) {
  static const std::vector<std::string> text{"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"};
  static const std::vector<std::string> with_vision = [] {
    std::vector<std::string> t = text;
    for (const char* v : {"<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"}) t.push_back(v);
    return t;
  }();
  return vision ? with_vision : text;
}

void write_byte_tokenizer(const std::string& dir, bool vision) {
  ordered_json vocab = ordered_json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_level::encode(std::string(1, static_cast<char>(b)))] = b;
  ordered_json added = ordered_json::array();
  ordered_json added_decoder = ordered_json::object();
  const auto& tokens = byte_tokenizer_added_tokens(vision);
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int64_t id = 256 + static_cast<int64_t>(i);
    ordered_json e = added_token_entry(id, tokens[i]);
    added.push_back(e);
    e.erase("id");
    added_decoder[std::to_string(id)] = e;
  }
  ordered_json tokenizer = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer", byte_level_component()},
      {"post_processor", nullptr},
      {"decoder", byte_level_component()},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", false},
        {"vocab", vocab},
        {"merges", ordered_json::array()}}},
  };
  ordered_json config = {
      {"add_bos_token", false},
      {"add_prefix_space", false},
      {"added_tokens_decoder", added_decoder},
      {"additional_special_tokens", {"<|im_start|>", "<|im_end|>"}},
      {"bos_token", nullptr},
      {"chat_template", vision ? vl_chat_template() : kChatTemplate},
      {"clean_up_tokenization_spaces", false},
      {"eos_token", "<|im_end|>"},
      {"errors", "replace"},
      {"model_max_length", 131072},
      {"pad_token", "<|endoftext|>"},
      {"split_special_tokens", false},
      {"tokenizer_class", "PreTrainedTokenizerFast"},
      {"unk_token", nullptr},
  };
  make_dirs(dir);
  write_file_atomic(dir + "/tokenizer.json", tokenizer.dump(2) + "\n");
  write_file_atomic(dir + "/tokenizer_config.json", config.dump(2) + "\n");
}

}  // namespace grpo
