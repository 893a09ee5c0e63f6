// One line of `grpo generate`'s prompts file as a rollout request: {"prompt": "..."}, {"messages": [...]},
// verl's dataset rows {"prompt": [...]} (chat messages, need chat) or {"input_ids": [...]}, with the line's
// own overrides ("n", "max_new_tokens", "temperature", "top_p", "top_k", "min_p", "seed", "stop") and, for
// vision-language models, "images" (picture paths relative to the prompts file, one per placeholder). The
// request is checked against the model's context. Errors name the field and what was expected.
#pragma once
#include <cstdint>
#include <string>

#include "generate/request_fields.h"
#include "image/preprocess.h"
#include "rollout/request.h"
#include "tokenizer/tokenizer.h"

namespace grpo::generate {

// What a line is read with: the command line's settings, the tokenizer (null without tokenizer.json) and the
// model's limits.
struct LineContext {
  const rollout::Request& defaults;
  const Tokenizer* tok;
  const std::string& no_tokenizer;  // why tok is null: "no tokenizer.json in MODEL"
  bool chat;
  int64_t vocab, context;
  const ImageProcessorConfig* images;  // the model's preprocessor_config.json; null for a text model
  const std::string& prompts_path;     // picture paths are relative to it
  int32_t image_pad;                   // config.json's image_token_id (-1: none)
  const Json* tools = nullptr;         // --tools / --tool-config: the tools' schemas for the chat template
};

// The line's settings applied to r (the command line's), each checked with its option's rule.
void apply_overrides(const Json& j, rollout::Request& r);
// The request of line `line` (its number: the request's id, the RNG key, so that a line's samples do not
// depend on the other lines).
rollout::Request request_of(const Json& j, const LineContext& c, int64_t line);
// The prompt's tokens + max_new_tokens within the model's context (`source`: the prompt's field).
void check_fits(const rollout::Request& r, const char* source, int64_t context);
// text as JSON, else an error "not valid JSON (...)".
Json parse_line(const std::string& text);

}  // namespace grpo::generate
