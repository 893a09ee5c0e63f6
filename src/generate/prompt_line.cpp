// A prompt line as a rollout request (see prompt_line.h).
#include "generate/prompt_line.h"

#include "core/error.h"
#include "data/vision_data.h"

namespace grpo::generate {

namespace {

std::vector<int32_t> input_ids_of(const Json& j, int64_t V) {
  GRPO_CHECK(j["input_ids"].is_array(), "field \"input_ids\" must be an array of token ids");
  std::vector<int32_t> ids;
  for (const Json& v : j["input_ids"]) {
    GRPO_CHECK(v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() < V,
               "field \"input_ids\": ids must be integers in [0, ", V, "), got ", v.dump());
    ids.push_back(v.get<int32_t>());
  }
  return ids;
}

// The prompt's tokens from "input_ids", "messages" (needs chat) or "prompt"; `source` gets the field used.
std::vector<int32_t> prompt_of(const Json& j, const LineContext& c, bool has_pictures, const char*& source) {
  if (j.contains("input_ids")) {
    source = "input_ids";
    return input_ids_of(j, c.vocab);
  }
  // verl's dataset rows hold the chat messages in "prompt".
  const char* messages_field = j.contains("messages")                           ? "messages"
                               : j.contains("prompt") && j["prompt"].is_array() ? "prompt"
                                                                                : nullptr;
  if (messages_field) {
    source = messages_field;
    GRPO_CHECK(c.chat, "field \"", messages_field,
               "\" needs --chat (its chat messages go through the model's chat template)");
    GRPO_CHECK(j[messages_field].is_array(), "field \"", messages_field, "\" must be an array");
    const Json& messages = j[messages_field];
    return chat_prompt(*c.tok, has_pictures ? template_messages(messages, true) : messages,
                       j.value("tools", c.tools ? *c.tools : Json()));
  }
  GRPO_CHECK(j.contains("prompt"), "expected a field \"prompt\", \"messages\" or \"input_ids\"");
  source = "prompt";
  GRPO_CHECK(c.tok, "field \"prompt\" needs the model's tokenizer (", c.no_tokenizer, "): give \"input_ids\"");
  GRPO_CHECK(j["prompt"].is_string(), "field \"prompt\" must be a string or a list of chat messages");
  const std::string p = j["prompt"].get<std::string>();
  if (!c.chat) return c.tok->encode(has_pictures ? plain_vision_prompt(p) : p);
  const Json messages = Json::array({{{"role", "user"}, {"content", p}}});
  return chat_prompt(*c.tok, has_pictures ? template_messages(messages, true) : messages, c.tools ? *c.tools : Json());
}

// The line's picture paths ("images"), resolved against the prompts file; none without the field.
std::vector<std::string> picture_paths(const Json& j, const LineContext& c) {
  std::vector<std::string> paths;
  if (!j.contains("images") || j["images"].is_null()) return paths;
  GRPO_CHECK(j["images"].is_array(), field("images"), " must be a list of picture paths, got ", j["images"].dump());
  for (const Json& v : j["images"]) {
    GRPO_CHECK(v.is_string() && !v.get<std::string>().empty(), field("images"),
               " must hold picture paths (non-empty strings), got ", v.dump());
    paths.push_back(resolve_picture_path(c.prompts_path, v.get<std::string>()));
  }
  GRPO_CHECK(paths.empty() || c.images, field("images"),
             ": the model has no preprocessor_config.json (not a vision-language model)");
  return paths;
}

// "<image>" placeholders in "prompt" or "messages" (image items included); input_ids lines have none.
int64_t placeholders_of(const Json& j) {
  if (j.contains("input_ids")) return -1;
  for (const char* name : {"messages", "prompt"})
    if (j.contains(name) && j[name].is_array()) return count_image_placeholders(nlohmann::json::parse(j[name].dump()));
  if (j.contains("prompt") && j["prompt"].is_string())
    return count_image_placeholders(nlohmann::json::array({{{"role", "user"}, {"content", j["prompt"]}}}));
  return 0;
}

// Decodes the line's pictures into r.pictures and expands r.prompt's pads to their token counts.
void add_pictures(rollout::Request& r, const std::vector<std::string>& paths, const char* source,
                  const LineContext& c) {
  GRPO_CHECK(c.image_pad >= 0, field("images"), ": config.json has no image_token_id");
  const std::vector<ImageGrid> grids = probe_pictures(paths, *c.images, field("images"));
  int64_t pads = 0, tokens = 0;
  for (int32_t id : r.prompt) pads += id == c.image_pad;
  for (const ImageGrid& g : grids) tokens += g.tokens(c.images->merge_size);
  if (pads == static_cast<int64_t>(grids.size()))
    r.prompt = expand_image_pads(r.prompt, c.image_pad, grids, c.images->merge_size);
  else
    GRPO_CHECK(pads == tokens, "field \"", source, "\": ", pads, " <|image_pad|> tokens for ", grids.size(),
               " picture(s) (expected one per picture, or ", tokens, " when already expanded)");
  r.pictures = model_pictures(load_pictures(paths, grids, *c.images, field("images")));
}
}  // namespace

void apply_overrides(const Json& j, rollout::Request& r) {
  if (j.contains("n")) r.n = static_cast<int32_t>(integer_field(j, "n", 1, kInt32Max));
  if (j.contains("max_new_tokens"))
    r.max_new_tokens = static_cast<int32_t>(integer_field(j, "max_new_tokens", 1, kInt32Max));
  if (j.contains("seed")) r.seed = static_cast<uint64_t>(integer_field(j, "seed", 0, kInt64Max));
  if (j.contains("stop")) r.stop_strings = stop_field(j);
  apply_sampling_overrides(j, r.sampling);
}

void check_fits(const rollout::Request& r, const char* source, int64_t context) {
  const int64_t tokens = static_cast<int64_t>(r.prompt.size()) + r.max_new_tokens;
  GRPO_CHECK(!r.prompt.empty(), "field \"", source, "\": the prompt is empty");
  GRPO_CHECK(tokens <= context, "field \"", source, "\": the prompt's ", r.prompt.size(), " tokens + max_new_tokens ",
             r.max_new_tokens, " exceed the model's context of ", context, " tokens (max_position_embeddings)");
}

rollout::Request request_of(const Json& j, const LineContext& c, int64_t line) {
  GRPO_CHECK(j.is_object(), "expected a JSON object, got ", j.dump());
  rollout::Request r = c.defaults;
  apply_overrides(j, r);
  GRPO_CHECK(c.tok || !j.contains("stop"), field("stop"), ": stop strings need the model's tokenizer (", c.no_tokenizer,
             ")");
  const std::vector<std::string> paths = picture_paths(j, c);
  const int64_t placeholders = placeholders_of(j);
  GRPO_CHECK(placeholders < 0 || placeholders == static_cast<int64_t>(paths.size()), placeholders,
             " image placeholders (\"<image>\" or image items) but ", paths.size(), " pictures in \"images\"");
  const char* source = "";
  r.prompt = prompt_of(j, c, j.contains("images") && !j["images"].is_null(), source);
  if (!paths.empty()) add_pictures(r, paths, source, c);
  check_fits(r, source, c.context);
  r.id = static_cast<uint64_t>(line);
  return r;
}

Json parse_line(const std::string& text) {
  try {
    return Json::parse(text);
  } catch (const std::exception& e) {
    fail("not valid JSON (", e.what(), ")");
  }
}

}  // namespace grpo::generate
