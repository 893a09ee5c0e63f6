// OpenAI's response bodies from rollout results: chat.completion and its stream's chat.completion.chunk,
// text_completion (whose choices also carry token_ids and token_logprobs, the extension external RL
// drivers exchange), model lists, usage, log-probs and tool calls (the hermes <tool_call> blocks of a reply,
// parsed by src/tools, as `tool_calls` with JSON-string arguments).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "rollout/request.h"
#include "serve/openai_request.h"

namespace grpo::serve {

// What every response of one request repeats.
struct ResponseHead {
  std::string id;   // "chatcmpl-..." / "cmpl-..."
  int64_t created;  // unix seconds
  std::string model;
  const Tokenizer* tok;  // null: texts empty, token ids only
};

// A reply's text split into its content (tool-call blocks removed, trimmed) and its tool calls (OpenAI's
// [{"id", "type": "function", "function": {"name", "arguments": "<json>"}}], empty when none parsed).
struct ToolSplit {
  std::string content;
  Json calls = Json::array();
};
ToolSplit split_tool_calls(const std::string& text, const std::string& call_id_prefix);

// The text before a possible tool call: cut at the first "<tool_call>", and while the reply runs (`final`
// false) without a trailing prefix of that tag, so that streamed content never shows a call.
std::string content_before_calls(const std::string& text, bool final);

const char* finish_reason_of(rollout::FinishReason r, bool tool_calls);

// {"content": [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob", "bytes"}]}]} of `tokens`;
// top [tokens, n]: each token's n alternatives (n = 0: none).
Json chat_logprobs(const Tokenizer* tok, const std::vector<int32_t>& tokens, const std::vector<float>& logprobs,
                   const std::vector<rollout::TokenLogprob>& top);
// Completions' {"tokens", "token_logprobs", "top_logprobs", "text_offset"} of `tokens` (text offsets from
// text_start); top_logprobs: per token {text: logprob} of its alternatives (null when none were asked for).
Json completion_logprobs(const Tokenizer* tok, const std::vector<int32_t>& tokens, const std::vector<float>& logprobs,
                         const std::vector<rollout::TokenLogprob>& top, size_t text_start);
Json usage_of(const ParsedRequest& p, const std::vector<rollout::RequestResult>& results);

Json chat_response(const ResponseHead& h, const ParsedRequest& p, const std::vector<rollout::RequestResult>& results);
Json completion_response(const ResponseHead& h, const ParsedRequest& p,
                         const std::vector<rollout::RequestResult>& results);
// One "data: {...}\n\n" event of a stream: a chat chunk or a text_completion chunk for choice `index`.
std::string chat_chunk(const ResponseHead& h, int64_t index, const Json& delta, const Json& logprobs,
                       const char* finish_reason);
std::string completion_chunk(const ResponseHead& h, int64_t index, const std::string& text, const Json& extra,
                             const char* finish_reason);
// The stream's usage chunk (choices empty) and its end.
std::string usage_chunk(const ResponseHead& h, const ParsedRequest& p, const Json& usage);
inline constexpr const char* kStreamDone = "data: [DONE]\n\n";

Json model_list(const std::string& model, int64_t created);

}  // namespace grpo::serve
