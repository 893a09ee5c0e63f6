// A streamed response's server-sent events: the first chunk of each choice (role), its text deltas as tokens
// arrive, its end (the rest of the text, tool calls, finish_reason), then the usage chunk
// (stream_options.include_usage) and "data: [DONE]". Text that may still turn out to be the start of a stop
// string (or, with tools, of a <tool_call> block) is held back until it is settled, so that what was sent is
// always a prefix of the final text.
#pragma once
#include <string>
#include <vector>

#include "serve/engine_queue.h"
#include "serve/openai_response.h"

namespace grpo::serve {

class ResponseStream {
 public:
  ResponseStream(const ParsedRequest& p, ResponseHead head);
  std::string start();  // the role chunks (chat); completions: the prompts' text with echo, else nothing
  std::string on_tokens(const TokenEvent& e);  // the settled part of the new text, with the tokens' log-probs
  std::string finish(const std::vector<rollout::RequestResult>& results);

 private:
  int64_t choice_of(size_t request, int32_t sample) const;
  // (tokens, logprobs, top: the new tokens, none at the end)
  std::string delta(int64_t choice, const std::string& text, const TokenEvent* tokens, const char* finish_reason);
  const ParsedRequest& p_;
  ResponseHead head_;
  size_t hold_ = 0;                  // bytes held back at the end of a running text (longest stop string - 1)
  std::vector<size_t> sent_;         // [choices] bytes of text sent
  std::vector<size_t> text_offset_;  // [choices] completions' logprobs: the text offset of the next token
};

}  // namespace grpo::serve
