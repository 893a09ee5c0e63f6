// OpenAI's request bodies as rollout requests: POST /v1/chat/completions (messages through the model's chat
// template, tools rendered by it, pictures as image_url data URLs for vision-language models) and POST
// /v1/completions (a prompt as a string, a list of strings, token ids or a list of those). Sampling: n,
// temperature, top_p, top_k, min_p and ignore_eos (extensions), max_tokens / max_completion_tokens, stop, seed. Every
// error is an ApiError naming the field: malformed JSON 400, an unknown model 404, max_tokens past the context
// 400. Fields this server does not implement (penalties, logit_bias, response_format, ...) are ignored.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rollout/request.h"
#include "tokenizer/tokenizer.h"

namespace grpo::serve {

using Json = nlohmann::ordered_json;

// Turns a chat's image_url parts into pictures (vision-language models): `messages` get image items in
// their place, and after the prompt is tokenised its <|image_pad|> tokens are expanded.
class PictureReader {
 public:
  virtual ~PictureReader() = default;
  // Decodes the data URLs (in order) into r.pictures; `messages` are the template's (image items).
  virtual void read(const std::vector<std::string>& data_urls, rollout::Request& r) const = 0;
  // Expands r.prompt's pads to r.pictures' token counts.
  virtual void expand(rollout::Request& r) const = 0;
};

struct ModelInfo {
  std::string name;      // the "model" requests must name
  const Tokenizer* tok;  // null: token-id prompts of /v1/completions only
  int64_t vocab = 0, context = 0;
  std::vector<int32_t> stop_ids;
  const PictureReader* pictures = nullptr;  // null: a text model
  int32_t max_n = 16;                       // n at most
};

enum class Endpoint { Chat, Completions };

struct ParsedRequest {
  Endpoint endpoint = Endpoint::Chat;
  std::vector<rollout::Request> requests;  // one per prompt (several for a list of prompts), each with n samples
  bool stream = false, include_usage = false;
  bool logprobs = false;
  int32_t top_logprobs = 0;
  bool echo = false;   // completions: the prompt's text before each choice's
  bool tools = false;  // chat with tools: <tool_call> blocks of the reply become tool_calls
  // tool_choice "required" or a named function: the reply's start, appended to the prompt (the model writes
  // the rest of the call); the reply's text is this followed by what the engine generated.
  std::string reply_start;
};

// Throws ApiError. The requests' seeds are the given one, else `default_seed` (a fresh one per request).
ParsedRequest parse_chat_request(const std::string& body, const ModelInfo& m, uint64_t default_seed);
ParsedRequest parse_completion_request(const std::string& body, const ModelInfo& m, uint64_t default_seed);

}  // namespace grpo::serve
