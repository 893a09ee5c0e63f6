// OpenAI's response bodies (see openai_response.h).
#include "serve/openai_response.h"

#include "tools/hermes.h"

namespace grpo::serve {

namespace {
constexpr std::string_view kCallOpen = "<tool_call>", kCallClose = "</tool_call>";

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

std::string token_text(const Tokenizer* tok, int32_t id) {
  if (!tok || id < 0 || id >= tok->vocab_size()) return "";
  return tok->decode(std::vector<int32_t>{id}, false);
}

Json bytes_of(const std::string& s) {
  Json bytes = Json::array();
  for (unsigned char c : s) bytes.push_back(static_cast<int>(c));
  return bytes;
}

// The alternatives per token in `top` [tokens, n].
size_t alternatives(const std::vector<int32_t>& tokens, const std::vector<rollout::TokenLogprob>& top) {
  return tokens.empty() ? 0 : top.size() / tokens.size();
}
}  // namespace

namespace {
// Completions' log-probs with echo: the prompt's tokens then the sample's, the prompt scored by the engine
// (Request::prompt_logprobs); the first token has none (null), as in OpenAI's API.
Json echoed_logprobs(const Tokenizer* tok, const rollout::Request& r, const rollout::RequestResult& result,
                     const rollout::SampleResult& s) {
  const size_t n = static_cast<size_t>(r.top_logprobs);
  std::vector<int32_t> tokens = r.prompt;
  tokens.insert(tokens.end(), s.tokens.begin(), s.tokens.end());
  std::vector<float> logprobs = {0.0f};  // (the first prompt token's: replaced by null)
  logprobs.insert(logprobs.end(), result.prompt_logprobs.begin(), result.prompt_logprobs.end());
  logprobs.insert(logprobs.end(), s.logprobs.begin(), s.logprobs.end());
  std::vector<rollout::TokenLogprob> top(n);
  top.insert(top.end(), result.prompt_top_logprobs.begin(), result.prompt_top_logprobs.end());
  top.insert(top.end(), s.top_logprobs.begin(), s.top_logprobs.end());
  Json out = completion_logprobs(tok, tokens, logprobs, top, 0);
  out["token_logprobs"][0] = nullptr;
  out["top_logprobs"][0] = nullptr;
  return out;
}
}  // namespace

Json completion_logprobs(const Tokenizer* tok, const std::vector<int32_t>& tokens, const std::vector<float>& logprobs,
                         const std::vector<rollout::TokenLogprob>& top, size_t text_start) {
  Json out = {{"tokens", Json::array()},
              {"token_logprobs", Json::array()},
              {"top_logprobs", Json::array()},
              {"text_offset", Json::array()}};
  const size_t n = alternatives(tokens, top);
  size_t offset = text_start;
  for (size_t t = 0; t < tokens.size(); ++t) {
    const std::string s = token_text(tok, tokens[t]);
    out["tokens"].push_back(s);
    out["token_logprobs"].push_back(t < logprobs.size() ? Json(logprobs[t]) : Json());
    Json alts = n > 0 ? Json::object() : Json();
    for (size_t k = 0; k < n; ++k)
      if (top[t * n + k].token >= 0) alts[token_text(tok, top[t * n + k].token)] = top[t * n + k].logprob;
    out["top_logprobs"].push_back(std::move(alts));
    out["text_offset"].push_back(offset);
    offset += s.size();
  }
  return out;
}

ToolSplit split_tool_calls(const std::string& text, const std::string& call_id_prefix) {
  ToolSplit out;
  std::string content;
  size_t from = 0;
  while (true) {
    const size_t open = text.find(kCallOpen, from);
    const size_t close = open == std::string::npos ? std::string::npos : text.find(kCallClose, open);
    if (close == std::string::npos) {
      content += text.substr(from);
      break;
    }
    content += text.substr(from, open - from);
    from = close + kCallClose.size();
  }
  for (const tools::ParsedCall& c : tools::parse_tool_calls(text)) {
    if (c.failure != tools::ToolFailure::None) continue;
    const Json function = {{"name", c.call.name}, {"arguments", c.call.arguments.dump()}};
    out.calls.push_back(
        {{"id", call_id_prefix + std::to_string(out.calls.size())}, {"type", "function"}, {"function", function}});
  }
  out.content = out.calls.empty() ? trim(text) : trim(content);
  return out;
}

std::string content_before_calls(const std::string& text, bool final) {
  const size_t open = text.find(kCallOpen);
  if (open != std::string::npos) return text.substr(0, open);
  if (final) return text;
  for (size_t keep = std::min(text.size(), kCallOpen.size() - 1); keep > 0; --keep)
    if (std::string_view(text).substr(text.size() - keep) == kCallOpen.substr(0, keep))
      return text.substr(0, text.size() - keep);
  return text;
}

const char* finish_reason_of(rollout::FinishReason r, bool tool_calls) {
  // OpenAI's names are the engine's (stop, length), with tool_calls for a reply that calls tools.
  return tool_calls ? "tool_calls" : rollout::finish_reason_name(r).data();
}

Json chat_logprobs(const Tokenizer* tok, const std::vector<int32_t>& tokens, const std::vector<float>& logprobs,
                   const std::vector<rollout::TokenLogprob>& top) {
  Json content = Json::array();
  const size_t n = alternatives(tokens, top);
  for (size_t t = 0; t < tokens.size() && t < logprobs.size(); ++t) {
    const std::string s = token_text(tok, tokens[t]);
    Json alts = Json::array();
    for (size_t k = 0; k < n; ++k) {
      const rollout::TokenLogprob& a = top[t * n + k];
      if (a.token < 0) continue;
      const std::string text = token_text(tok, a.token);
      alts.push_back({{"token", text}, {"logprob", a.logprob}, {"bytes", bytes_of(text)}});
    }
    content.push_back({{"token", s}, {"logprob", logprobs[t]}, {"bytes", bytes_of(s)}, {"top_logprobs", alts}});
  }
  return {{"content", content}};
}

Json usage_of(const ParsedRequest& p, const std::vector<rollout::RequestResult>& results) {
  int64_t prompt = 0, completion = 0;
  for (const rollout::Request& r : p.requests) prompt += static_cast<int64_t>(r.prompt.size());
  for (const rollout::RequestResult& r : results)
    for (const rollout::SampleResult& s : r.samples) completion += static_cast<int64_t>(s.tokens.size());
  return {{"prompt_tokens", prompt}, {"completion_tokens", completion}, {"total_tokens", prompt + completion}};
}

Json chat_response(const ResponseHead& h, const ParsedRequest& p, const std::vector<rollout::RequestResult>& results) {
  Json choices = Json::array();
  for (const rollout::RequestResult& r : results)
    for (const rollout::SampleResult& s : r.samples) {
      const int64_t index = static_cast<int64_t>(choices.size());
      const std::string text = p.reply_start + s.text;
      Json message = {{"role", "assistant"}, {"content", text}};
      bool calls = false;
      if (p.tools) {
        ToolSplit split = split_tool_calls(text, "call_" + h.id + "_" + std::to_string(index) + "_");
        calls = !split.calls.empty();
        message["content"] = calls && split.content.empty() ? Json() : Json(split.content);
        if (calls) message["tool_calls"] = std::move(split.calls);
      }
      choices.push_back({{"index", index},
                         {"message", message},
                         {"logprobs", p.logprobs ? chat_logprobs(h.tok, s.tokens, s.logprobs, s.top_logprobs) : Json()},
                         {"finish_reason", finish_reason_of(s.finish_reason, calls)}});
    }
  return {{"id", h.id},       {"object", "chat.completion"}, {"created", h.created},
          {"model", h.model}, {"choices", choices},          {"usage", usage_of(p, results)}};
}

Json completion_response(const ResponseHead& h, const ParsedRequest& p,
                         const std::vector<rollout::RequestResult>& results) {
  Json choices = Json::array();
  for (size_t i = 0; i < results.size(); ++i) {
    const std::string prefix = p.echo && h.tok ? h.tok->decode(p.requests[i].prompt, false) : "";
    for (const rollout::SampleResult& s : results[i].samples) {
      Json c = {{"index", choices.size()},
                {"text", prefix + s.text},
                {"logprobs", Json()},
                {"finish_reason", finish_reason_of(s.finish_reason, false)}};
      if (p.logprobs)
        c["logprobs"] = p.echo ? echoed_logprobs(h.tok, p.requests[i], results[i], s)
                               : completion_logprobs(h.tok, s.tokens, s.logprobs, s.top_logprobs, prefix.size());
      c["token_ids"] = s.tokens;
      c["token_logprobs"] = s.logprobs;
      if (p.echo) c["prompt_token_ids"] = p.requests[i].prompt;
      choices.push_back(std::move(c));
    }
  }
  return {{"id", h.id},       {"object", "text_completion"}, {"created", h.created},
          {"model", h.model}, {"choices", choices},          {"usage", usage_of(p, results)}};
}

namespace {

// One server-sent event carrying a chunk of `object` with one choice.
std::string sse_choice_chunk(const ResponseHead& h, const char* object, const Json& choice) {
  const Json chunk = {
      {"id", h.id}, {"object", object}, {"created", h.created}, {"model", h.model}, {"choices", Json::array({choice})}};
  return "data: " + chunk.dump() + "\n\n";
}

}  // namespace

std::string chat_chunk(const ResponseHead& h, int64_t index, const Json& delta, const Json& logprobs,
                       const char* finish_reason) {
  const Json choice = {{"index", index},
                       {"delta", delta},
                       {"logprobs", logprobs},
                       {"finish_reason", finish_reason ? Json(finish_reason) : Json()}};
  return sse_choice_chunk(h, "chat.completion.chunk", choice);
}

std::string completion_chunk(const ResponseHead& h, int64_t index, const std::string& text, const Json& extra,
                             const char* finish_reason) {
  Json choice = {{"index", index},
                 {"text", text},
                 {"logprobs", Json()},
                 {"finish_reason", finish_reason ? Json(finish_reason) : Json()}};
  for (auto it = extra.begin(); it != extra.end(); ++it) choice[it.key()] = it.value();
  return sse_choice_chunk(h, "text_completion", choice);
}

std::string usage_chunk(const ResponseHead& h, const ParsedRequest& p, const Json& usage) {
  const Json chunk = {{"id", h.id},
                      {"object", p.endpoint == Endpoint::Chat ? "chat.completion.chunk" : "text_completion"},
                      {"created", h.created},
                      {"model", h.model},
                      {"choices", Json::array()},
                      {"usage", usage}};
  return "data: " + chunk.dump() + "\n\n";
}

Json model_list(const std::string& model, int64_t created) {
  const Json m = {{"id", model}, {"object", "model"}, {"created", created}, {"owned_by", "grpo.cpp"}};
  return {{"object", "list"}, {"data", Json::array({m})}};
}

}  // namespace grpo::serve
