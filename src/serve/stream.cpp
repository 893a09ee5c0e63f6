// A streamed response's events (see stream.h).
#include "serve/stream.h"

#include <algorithm>

namespace grpo::serve {

namespace {
// The length of the first `n` bytes of s backed off to a UTF-8 character boundary.
size_t utf8_floor(const std::string& s, size_t n) {
  while (n > 0 && n < s.size() && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return n;
}
}  // namespace

ResponseStream::ResponseStream(const ParsedRequest& p, ResponseHead head) : p_(p), head_(std::move(head)) {
  size_t choices = 0;
  for (const rollout::Request& r : p.requests) {
    choices += static_cast<size_t>(r.n);
    for (const std::string& s : r.stop_strings) hold_ = std::max(hold_, s.size() - 1);
  }
  sent_.assign(choices, 0);
  text_offset_.assign(choices, 0);
}

int64_t ResponseStream::choice_of(size_t request, int32_t sample) const {
  return static_cast<int64_t>(request) * p_.requests.front().n + sample;
}

std::string ResponseStream::start() {
  std::string out;
  if (p_.endpoint == Endpoint::Completions) {  // echo: each choice starts with its prompt's text
    if (!p_.echo || !head_.tok) return "";
    for (size_t i = 0; i < p_.requests.size(); ++i) {
      const std::string prompt = head_.tok->decode(p_.requests[i].prompt, false);
      for (int32_t k = 0; k < p_.requests[i].n; ++k)
        out += completion_chunk(head_, choice_of(i, k), prompt,
                                Json{{"token_ids", Json::array()}, {"token_logprobs", Json::array()}}, nullptr);
    }
    return out;
  }
  for (size_t c = 0; c < sent_.size(); ++c)
    out += chat_chunk(head_, static_cast<int64_t>(c), Json{{"role", "assistant"}, {"content", ""}}, Json(), nullptr);
  return out;
}

std::string ResponseStream::delta(int64_t choice, const std::string& text, const TokenEvent* e,
                                  const char* finish_reason) {
  const bool tokens = e && !e->tokens.empty();
  if (p_.endpoint == Endpoint::Chat) {
    const Json lp = p_.logprobs && tokens ? chat_logprobs(head_.tok, e->tokens, e->logprobs, e->top) : Json();
    return chat_chunk(head_, choice, text.empty() ? Json::object() : Json{{"content", text}}, lp, finish_reason);
  }
  Json extra = {{"token_ids", tokens ? Json(e->tokens) : Json::array()},
                {"token_logprobs", tokens ? Json(e->logprobs) : Json::array()}};
  if (p_.logprobs && tokens) {
    size_t& offset = text_offset_[choice];
    Json lp = completion_logprobs(head_.tok, e->tokens, e->logprobs, e->top, offset);
    offset = lp["text_offset"].back().get<size_t>() + lp["tokens"].back().get<std::string>().size();
    extra["logprobs"] = std::move(lp);
  }
  return completion_chunk(head_, choice, text, extra, finish_reason);
}

std::string ResponseStream::on_tokens(const TokenEvent& e) {
  const int64_t choice = choice_of(e.request, e.sample);
  const std::string text_so_far = p_.reply_start + e.text;
  const std::string visible = p_.tools ? content_before_calls(text_so_far, false) : text_so_far;
  const size_t settled = utf8_floor(visible, visible.size() > hold_ ? visible.size() - hold_ : 0);
  size_t& sent = sent_[choice];
  const std::string text = settled > sent ? visible.substr(sent, settled - sent) : "";
  sent = std::max(sent, settled);
  if (text.empty() && !(p_.logprobs || p_.endpoint == Endpoint::Completions)) return "";
  return delta(choice, text, &e, nullptr);
}

std::string ResponseStream::finish(const std::vector<rollout::RequestResult>& results) {
  std::string out;
  for (size_t i = 0; i < results.size(); ++i)
    for (size_t k = 0; k < results[i].samples.size(); ++k) {
      const rollout::SampleResult& s = results[i].samples[k];
      const int64_t choice = choice_of(i, static_cast<int32_t>(k));
      // What was streamed is a prefix of this (with tools: the text before the first call, untrimmed).
      const std::string text = p_.reply_start + s.text;
      const std::string content = p_.tools ? content_before_calls(text, true) : text;
      const Json calls_json =
          p_.tools ? split_tool_calls(text, "call_" + head_.id + "_" + std::to_string(choice) + "_").calls
                   : Json::array();
      const size_t sent = sent_[choice];
      const std::string rest = content.size() > sent ? content.substr(sent) : "";
      if (!rest.empty()) out += delta(choice, rest, nullptr, nullptr);
      const bool calls = !calls_json.empty();
      if (calls) {
        Json tool_calls = calls_json;
        for (size_t c = 0; c < tool_calls.size(); ++c) tool_calls[c]["index"] = c;
        out += chat_chunk(head_, choice, Json{{"tool_calls", tool_calls}}, Json(), nullptr);
      }
      out += p_.endpoint == Endpoint::Chat
                 ? chat_chunk(head_, choice, Json::object(), Json(), finish_reason_of(s.finish_reason, calls))
                 : completion_chunk(head_, choice, "", Json::object(), finish_reason_of(s.finish_reason, false));
    }
  if (p_.include_usage) out += usage_chunk(head_, p_, usage_of(p_, results));
  return out + kStreamDone;
}

}  // namespace grpo::serve
