// OpenAI's request bodies as rollout requests (see openai_request.h).
#include "serve/openai_request.h"

#include <limits>

#include "generate/request_fields.h"
#include "serve/api_error.h"

namespace grpo::serve {

namespace {

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min(), kInt64Max = std::numeric_limits<int64_t>::max();
constexpr size_t kMaxStops = 16;
constexpr int kMaxDepth = 64;

ApiError bad(const std::string& param, const std::string& message) { return ApiError(400, param, message); }

// Runs fn (a generate::*_field reader), its grpo::Error becoming a 400 naming `param`.
template <typename Fn>
auto field_of(const std::string& param, Fn fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const ApiError&) {
    throw;
  } catch (const std::exception& e) {
    throw bad(param, e.what());
  }
}

// The body as a JSON object, its null fields dropped (clients send null for "not given").
Json parse_body(const std::string& body, const ModelInfo& m) {
  Json j;
  bool too_deep = false;
  try {  // nesting is bounded: copies and the chat template recurse over it
    j = Json::parse(body, [&](int depth, Json::parse_event_t, Json&) {
      too_deep = too_deep || depth > kMaxDepth;
      return !too_deep;
    });
  } catch (const std::exception& e) {
    throw bad("", std::string("malformed JSON in the request body: ") + e.what());
  }
  if (too_deep) throw bad("", "the request body nests deeper than " + std::to_string(kMaxDepth) + " levels");
  if (!j.is_object()) throw bad("", "the request body must be a JSON object, got " + std::string(j.type_name()));
  for (auto it = j.begin(); it != j.end();) it = it.value().is_null() ? j.erase(it) : std::next(it);
  if (j.contains("model")) {
    if (!j["model"].is_string()) throw bad("model", "field \"model\" must be a string");
    if (j["model"].get<std::string>() != m.name)
      throw ApiError(
          404, "model",
          "The model '" + j["model"].get<std::string>() + "' does not exist; this server has '" + m.name + "'",
          "invalid_request_error", "model_not_found");
  }
  return j;
}

bool bool_field(const Json& j, const char* key) {
  if (!j.contains(key)) return false;
  if (!j[key].is_boolean()) throw bad(key, generate::field(key) + " must be true or false, got " + j[key].dump());
  return j[key].get<bool>();
}

// n, sampling, seed and stop strings of `j` over the model's stop ids.
rollout::Request sampling_of(const Json& j, const ModelInfo& m, uint64_t default_seed) {
  rollout::Request r;
  if (!bool_field(j, "ignore_eos")) r.stop_token_ids = m.stop_ids;  // vLLM's extension (benchmarks, tests)
  r.seed = default_seed;
  if (j.contains("n"))
    r.n = static_cast<int32_t>(field_of("n", [&] { return generate::integer_field(j, "n", 1, m.max_n); }));
  for (const char* key : {"temperature", "top_p", "top_k", "min_p"})
    if (j.contains(key)) field_of(key, [&] { generate::apply_sampling_overrides(Json{{key, j[key]}}, r.sampling); });
  if (j.contains("seed"))
    r.seed = static_cast<uint64_t>(
        field_of("seed", [&] { return generate::integer_field(j, "seed", kInt64Min, kInt64Max); }));
  if (j.contains("stop")) {
    r.stop_strings = field_of("stop", [&] { return generate::stop_field(j); });
    if (r.stop_strings.size() > kMaxStops) throw bad("stop", "field \"stop\" holds at most 16 strings");
    if (!m.tok) throw bad("stop", "field \"stop\": stop strings need the model's tokenizer.json");
  }
  return r;
}

// max_completion_tokens (or max_tokens) of r's prompt, within the context; without either, what is left of it.
void set_max_tokens(const Json& j, rollout::Request& r, const ModelInfo& m, const char* prompt_field) {
  const int64_t prompt = static_cast<int64_t>(r.prompt.size());
  if (prompt == 0) throw bad(prompt_field, generate::field(prompt_field) + ": the prompt is empty");
  if (prompt >= m.context)
    throw bad(prompt_field, generate::field(prompt_field) + ": the prompt's " + std::to_string(prompt) +
                                " tokens leave no room in the model's context of " + std::to_string(m.context) +
                                " tokens");
  const char* key = j.contains("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  if (!j.contains(key)) {
    r.max_new_tokens = static_cast<int32_t>(m.context - prompt);
    return;
  }
  const int64_t max = field_of(key, [&] { return generate::integer_field(j, key, 1, kInt64Max); });
  if (prompt + max > m.context)
    throw bad(key, generate::field(key) + " = " + std::to_string(max) + " with the prompt's " + std::to_string(prompt) +
                       " tokens exceeds the model's context of " + std::to_string(m.context) + " tokens (at most " +
                       std::to_string(m.context - prompt) + ")");
  r.max_new_tokens = static_cast<int32_t>(max);
}

void stream_fields(const Json& j, ParsedRequest& p) {
  p.stream = bool_field(j, "stream");
  if (!j.contains("stream_options")) return;
  const Json& o = j["stream_options"];
  if (!o.is_object()) throw bad("stream_options", "field \"stream_options\" must be an object");
  p.include_usage = bool_field(o, "include_usage");
}

// An image_url part's URL ({"image_url": {"url": ...}} or {"image_url": "..."}).
std::string image_url_of(const Json& part, const std::string& where) {
  if (!part.contains("image_url")) throw bad("messages", where + ": an image_url part needs an \"image_url\"");
  const Json& u = part["image_url"];
  if (u.is_string()) return u.get<std::string>();
  if (u.is_object() && u.contains("url") && u["url"].is_string()) return u["url"].get<std::string>();
  throw bad("messages", where + ": an image_url part needs {\"image_url\": {\"url\": \"data:...\"}}");
}

// One message's content for the template: text parts joined, image_url parts (collected in `urls`) replaced
// by image items when there are pictures.
Json content_of(const Json& c, const std::string& where, std::vector<std::string>& urls, bool vision) {
  if (c.is_string()) return c;
  if (!c.is_array()) throw bad("messages", where + ".content must be a string, null or a list of parts");
  Json items = Json::array();
  std::string text;
  bool pictures = false;
  for (size_t k = 0; k < c.size(); ++k) {
    const Json& part = c[k];
    const std::string at = where + ".content[" + std::to_string(k) + "]";
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
      throw bad("messages", at + " must be an object with a \"type\"");
    const std::string type = part["type"].get<std::string>();
    if (type == "text") {
      if (!part.contains("text") || !part["text"].is_string()) throw bad("messages", at + ".text must be a string");
      text += part["text"].get<std::string>();
      items.push_back({{"type", "text"}, {"text", part["text"]}});
    } else if (type == "image_url") {
      if (!vision) throw bad("messages", at + ": this model takes no pictures (not a vision-language model)");
      urls.push_back(image_url_of(part, at));
      items.push_back({{"type", "image"}});
      pictures = true;
    } else {
      throw bad("messages", at + ".type must be \"text\" or \"image_url\", got \"" + type + "\"");
    }
  }
  return pictures ? items : Json(text);
}

Json template_messages_of(const Json& j, std::vector<std::string>& urls, bool vision) {
  if (!j.contains("messages") || !j["messages"].is_array() || j["messages"].empty())
    throw bad("messages", "field \"messages\" must be a non-empty list of messages");
  Json out = Json::array();
  for (size_t i = 0; i < j["messages"].size(); ++i) {
    const Json& msg = j["messages"][i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!msg.is_object() || !msg.contains("role") || !msg["role"].is_string())
      throw bad("messages", where + " must be an object with a string \"role\"");
    const std::string role = msg["role"].get<std::string>();
    if (role != "system" && role != "developer" && role != "user" && role != "assistant" && role != "tool")
      throw bad("messages", where + ".role must be system, developer, user, assistant or tool, got \"" + role + "\"");
    Json m = msg;
    m["role"] = role == "developer" ? "system" : role;  // the chat templates know system, not developer
    m["content"] = msg.contains("content") && !msg["content"].is_null()
                       ? content_of(msg["content"], where, urls, vision)
                       : Json("");
    if (msg.contains("tool_calls") && !msg["tool_calls"].is_array())
      throw bad("messages", where + ".tool_calls must be a list");
    out.push_back(std::move(m));
  }
  return out;
}

// The tools the template renders (null when none, or tool_choice "none").
Json tools_of(const Json& j) {
  if (!j.contains("tools")) return Json();
  const Json& tools = j["tools"];
  if (!tools.is_array()) throw bad("tools", "field \"tools\" must be a list of {\"type\": \"function\", ...}");
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& t = tools[i];
    if (!t.is_object() || !t.contains("function") || !t["function"].is_object() || !t["function"].contains("name") ||
        !t["function"]["name"].is_string())
      throw bad("tools",
                "tools[" + std::to_string(i) + "] must be {\"type\": \"function\", \"function\": {\"name\": ...}}");
  }
  if (j.contains("tool_choice") && j["tool_choice"] == "none") return Json();
  return tools.empty() ? Json() : tools;
}

// The reply's forced start for tool_choice (empty for "auto", "none" or none given): "required" opens a hermes
// tool call, {"type": "function", "function": {"name": N}} opens a call of N, which must be one of the tools.
std::string forced_reply_start(const Json& j, const Json& tools) {
  if (!j.contains("tool_choice")) return "";
  const Json& c = j["tool_choice"];
  const char* expected = "\"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}";
  if (c.is_string()) {
    const std::string s = c.get<std::string>();
    if (s == "none" || s == "auto") return "";
    if (s != "required") throw bad("tool_choice", std::string("field \"tool_choice\" must be ") + expected);
    if (tools.is_null()) throw bad("tool_choice", "tool_choice \"required\" needs tools");
    return "<tool_call>\n";
  }
  if (!c.is_object() || !c.contains("function") || !c["function"].is_object() || !c["function"].contains("name") ||
      !c["function"]["name"].is_string())
    throw bad("tool_choice", std::string("field \"tool_choice\" must be ") + expected);
  const std::string name = c["function"]["name"].get<std::string>();
  bool known = false;
  for (const Json& t : tools.is_null() ? Json::array() : tools) known = known || t["function"]["name"] == name;
  if (!known) throw bad("tool_choice", "tool_choice names the function \"" + name + "\", which is not in tools");
  return "<tool_call>\n{\"name\": " + Json(name).dump() + ", \"arguments\": ";
}

// A completions prompt: a string (tokenised) or a list of token ids.
std::vector<int32_t> completion_prompt(const Json& p, const ModelInfo& m) {
  if (p.is_string()) {
    if (!m.tok) throw bad("prompt", "field \"prompt\": text needs the model's tokenizer.json; give token ids");
    return m.tok->encode(p.get<std::string>());
  }
  std::vector<int32_t> ids;
  for (const Json& v : p) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= m.vocab)
      throw bad("prompt", "field \"prompt\": token ids must be integers in [0, " + std::to_string(m.vocab) + "), got " +
                              v.dump());
    ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  return ids;
}

// The prompts of a completions request: a string, a list of strings, a list of ids, or a list of id lists.
std::vector<std::vector<int32_t>> completion_prompts(const Json& j, const ModelInfo& m) {
  if (!j.contains("prompt")) throw bad("prompt", "field \"prompt\" is required");
  const Json& p = j["prompt"];
  const char* expected = "field \"prompt\" must be a string, a list of strings, a list of token ids or a list of lists";
  if (p.is_string()) return {completion_prompt(p, m)};
  if (!p.is_array() || p.empty()) throw bad("prompt", expected);
  if (p[0].is_number_integer()) return {completion_prompt(p, m)};
  std::vector<std::vector<int32_t>> out;
  for (const Json& one : p) {
    if (!one.is_string() && !one.is_array()) throw bad("prompt", expected);
    out.push_back(completion_prompt(one, m));
  }
  return out;
}

}  // namespace

ParsedRequest parse_chat_request(const std::string& body, const ModelInfo& m, uint64_t default_seed) {
  const Json j = parse_body(body, m);
  if (!m.tok) throw bad("messages", "chat completions need the model's tokenizer.json and chat template");
  ParsedRequest p;
  p.endpoint = Endpoint::Chat;
  stream_fields(j, p);
  p.logprobs = bool_field(j, "logprobs");
  if (j.contains("top_logprobs"))
    p.top_logprobs = static_cast<int32_t>(
        field_of("top_logprobs", [&] { return generate::integer_field(j, "top_logprobs", 0, 20); }));
  if (p.top_logprobs > 0 && !p.logprobs) throw bad("top_logprobs", "top_logprobs needs \"logprobs\": true");
  rollout::Request r = sampling_of(j, m, default_seed);
  r.top_logprobs = p.logprobs ? p.top_logprobs : 0;
  std::vector<std::string> urls;
  const Json messages = template_messages_of(j, urls, m.pictures != nullptr);
  const Json tools = tools_of(j);
  p.tools = !tools.is_null();
  if (!urls.empty()) field_of("messages", [&] { m.pictures->read(urls, r); });
  r.prompt = field_of("messages", [&] { return generate::chat_prompt(*m.tok, messages, tools); });
  p.reply_start = forced_reply_start(j, tools);
  if (!p.reply_start.empty()) {
    const std::vector<int32_t> forced = m.tok->encode(p.reply_start);
    r.prompt.insert(r.prompt.end(), forced.begin(), forced.end());
  }
  if (!urls.empty()) field_of("messages", [&] { m.pictures->expand(r); });
  set_max_tokens(j, r, m, "messages");
  p.requests.push_back(std::move(r));
  return p;
}

ParsedRequest parse_completion_request(const std::string& body, const ModelInfo& m, uint64_t default_seed) {
  const Json j = parse_body(body, m);
  ParsedRequest p;
  p.endpoint = Endpoint::Completions;
  stream_fields(j, p);
  p.echo = bool_field(j, "echo");
  if (j.contains("logprobs")) {
    p.top_logprobs =
        static_cast<int32_t>(field_of("logprobs", [&] { return generate::integer_field(j, "logprobs", 0, 5); }));
    p.logprobs = true;
  }
  if (p.echo && p.logprobs && p.stream)
    throw bad("echo", "echo with logprobs is answered whole: send it without stream (or echo without logprobs)");
  const rollout::Request base = sampling_of(j, m, default_seed);
  for (std::vector<int32_t>& prompt : completion_prompts(j, m)) {
    rollout::Request r = base;
    r.top_logprobs = p.top_logprobs;
    r.prompt_logprobs = p.echo && p.logprobs;  // the prompt's tokens are scored too
    r.prompt = std::move(prompt);
    set_max_tokens(j, r, m, "prompt");
    p.requests.push_back(std::move(r));
  }
  return p;
}

}  // namespace grpo::serve
