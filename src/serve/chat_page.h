// The chat page served at GET /: one HTML document with its script and style inline (no external assets).
// It keeps the conversation, streams each reply from /v1/chat/completions (stream, logprobs for a live token
// count) and shows tokens/s and the time to the first token; an API key typed in is sent as a Bearer token.
#pragma once

namespace grpo::serve {

extern const char* const kChatPage;

}  // namespace grpo::serve
