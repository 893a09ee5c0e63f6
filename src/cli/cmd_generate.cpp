// `grpo generate`: samples completions for a JSONL file of prompts with the rollout engine. Input lines
// {"prompt": "..."}, {"messages": [...]} or verl's dataset rows {"prompt": [...]} (chat messages; with
// --chat: the model's chat template plus the generation prompt) or {"input_ids": [...]}, each optionally
// with its own "n", "max_new_tokens", "temperature", "top_p", "top_k", "min_p", "seed" and "stop" (a string
// or an array of strings) that override the command line for that line; output lines echo the input (other
// fields included) plus "completions": [{text, token_ids, logprobs, finish_reason}]. An invalid option
// fails before the model is loaded, naming the option. A bad line (invalid JSON or field, a prompt that
// does not fit the model's context or the KV cache) is reported (file:line, field) and skipped; the rest of
// the file is still generated and written, and the exit status is non-zero. Progress on stderr. A model
// folder without tokenizer.json works when every line is {"input_ids"}: ids in, ids out (texts empty; text
// prompts, --chat and stop strings are refused, naming the missing file). Stop tokens then come from
// config.json's eos_token_id. Vision-language models (a folder with preprocessor_config.json): a line's
// "images" lists picture paths (relative to the prompts file), one per "<image>" in "prompt" / string
// contents or image item in "messages", in order, as in datasets; each <|image_pad|> becomes its picture's
// tokens. With "input_ids", the ids hold one <|image_pad|> per picture or the pads already expanded (`grpo
// tokenize`). A line's pictures are decoded when the file is read and held until the run ends.
// Tools (--tools for the built-in calculator, or --tool-config with verl's tool config; needs --chat):
// multi-turn generation as in training (docs/tools.md): the tools' schemas go into each prompt's chat
// template, a turn with a <tool_call> is answered by the tools and the model goes on; a completion then also
// has "response_mask" (0 for the tool turns' tokens), "num_turns", "tool_calls" and "tool_failures".
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>
#include <cstdio>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "cli/command.h"
#include "core/files.h"
#include "core/threads.h"
#include "data/vision_data.h"
#include "data/prompting.h"
#include "loop/tool_turns.h"
#include "image/preprocess.h"
#include "rollout/decoder_model.h"
#include "rollout/engine.h"
#include "rollout/tokenizer_text.h"
#include "tokenizer/tokenizer.h"

namespace grpo::cli {
namespace {

using Json = nlohmann::ordered_json;
using rollout::SamplingParams;

constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min(), kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

struct GenerateArgs {
  std::string model, adapter, prompts, out, kv_dtype = "bf16", dtype = "bf16";
  int n = 1, max_new_tokens = 256, top_k = 0, threads = 0;
  double temperature = 1.0, top_p = 1.0, min_p = 0.0, kv_fraction = 0.3;
  int64_t kv_bytes = 0, seed = 0;
  bool chat = false;
  std::vector<std::string> stop;
  bool tools = false;        // the built-in calculator
  std::string tool_config;   // verl's tool config YAML
  int max_assistant_turns = 0;
};

ops::KvDType kv_dtype_of(const std::string& s) {
  if (s == "f32") return ops::KvDType::F32;
  if (s == "bf16") return ops::KvDType::BF16;
  if (s == "int8") return ops::KvDType::I8;
  fail("[generate] --kv-dtype: expected f32, bf16 or int8, got \"", s, "\"");
}

// v as a float; beyond float's range it becomes +-inf (rejected as not finite) rather than undefined.
float to_float(double v) {
  if (std::fabs(v) > std::numeric_limits<float>::max()) return std::copysign(std::numeric_limits<float>::infinity(), v);
  return static_cast<float>(v);
}

// Stores one sampling value in p after checking it with the engine's rules (rollout::validate_sampling) on
// otherwise default (valid) parameters, so that an error is about this value alone and names `what`.
template <typename T>
void set_sampling(SamplingParams& p, T SamplingParams::*field, T value, const std::string& what) {
  SamplingParams one;
  one.*field = value;
  rollout::validate_sampling(one, what);
  p.*field = value;
}

void check_stops(const std::vector<std::string>& stops, const std::string& what) {
  for (const std::string& s : stops) GRPO_CHECK(!s.empty(), what, ": a stop string must not be empty");
}

// The command line's settings as the request every line starts from. Throws naming the option; runs before
// the model is loaded.
rollout::Request request_defaults(const GenerateArgs& a) {
  rollout::Request r;
  GRPO_CHECK(a.n >= 1, "[generate] --n must be >= 1, got ", a.n);
  GRPO_CHECK(a.max_new_tokens >= 1, "[generate] --max-new-tokens must be >= 1, got ", a.max_new_tokens);
  GRPO_CHECK(a.seed >= 0, "[generate] --seed must be >= 0, got ", a.seed);
  check_stops(a.stop, "[generate] --stop");
  r.n = a.n;
  r.max_new_tokens = a.max_new_tokens;
  r.seed = static_cast<uint64_t>(a.seed);
  r.stop_strings = a.stop;
  set_sampling(r.sampling, &SamplingParams::temperature, to_float(a.temperature), "--temperature");
  set_sampling(r.sampling, &SamplingParams::top_p, to_float(a.top_p), "--top-p");
  set_sampling(r.sampling, &SamplingParams::top_k, a.top_k, "--top-k");
  set_sampling(r.sampling, &SamplingParams::min_p, to_float(a.min_p), "--min-p");
  return r;
}

void check_engine_options(const GenerateArgs& a) {
  kv_dtype_of(a.kv_dtype);
  GRPO_CHECK(a.kv_bytes >= 0, "[generate] --kv-cache-memory must be >= 0, got ", a.kv_bytes);
  GRPO_CHECK(std::isfinite(a.kv_fraction) && a.kv_fraction > 0 && a.kv_fraction <= 1,
             "[generate] --kv-cache-fraction must be in (0, 1], got ", a.kv_fraction);
  GRPO_CHECK(a.threads >= 0, "[generate] --threads must be >= 0 (0: all cores), got ", a.threads);
}

std::string field(const char* key) { return cat("field \"", key, "\""); }

// A line's integer field in [lo, hi]; anything else (a float, a string such as "nan") is an error naming it.
int64_t integer_field(const Json& j, const char* key, int64_t lo, int64_t hi) {
  const Json& v = j.at(key);
  GRPO_CHECK(v.is_number_integer(), field(key), " must be an integer, got ", v.dump());
  // Non-negative integers parse as unsigned: beyond int64 they are out of any range asked for here.
  const bool fits = !v.is_number_unsigned() || v.get<uint64_t>() <= static_cast<uint64_t>(kInt64Max);
  GRPO_CHECK(fits && v.get<int64_t>() >= lo && v.get<int64_t>() <= hi, field(key), " must be an integer in [", lo,
             ", ", hi, "], got ", v.dump());
  return v.get<int64_t>();
}

// A line's numeric field (a string such as "nan" is an error naming it).
float number_field(const Json& j, const char* key) {
  const Json& v = j.at(key);
  GRPO_CHECK(v.is_number(), field(key), " must be a number, got ", v.dump());
  return to_float(v.get<double>());
}

std::vector<std::string> stop_field(const Json& j) {
  const Json& v = j.at("stop");
  std::vector<std::string> stops;
  if (v.is_string()) {
    stops.push_back(v.get<std::string>());
  } else {
    GRPO_CHECK(v.is_array(), field("stop"), " must be a string or an array of strings, got ", v.dump());
    for (const Json& s : v) {
      GRPO_CHECK(s.is_string(), field("stop"), " must be a string or an array of strings, got ", v.dump());
      stops.push_back(s.get<std::string>());
    }
  }
  check_stops(stops, field("stop"));
  return stops;
}

template <typename T>
void override_sampling(const Json& j, const char* key, SamplingParams& p, T SamplingParams::*member) {
  if (!j.contains(key)) return;
  if constexpr (std::is_same_v<T, float>)
    set_sampling(p, member, number_field(j, key), field(key));
  else
    set_sampling(p, member, static_cast<T>(integer_field(j, key, kInt32Min, kInt32Max)), field(key));
}

// Applies the line's own settings to r (the command line's), each checked with its option's rule.
void apply_overrides(const Json& j, rollout::Request& r) {
  if (j.contains("n")) r.n = static_cast<int32_t>(integer_field(j, "n", 1, kInt32Max));
  if (j.contains("max_new_tokens"))
    r.max_new_tokens = static_cast<int32_t>(integer_field(j, "max_new_tokens", 1, kInt32Max));
  if (j.contains("seed")) r.seed = static_cast<uint64_t>(integer_field(j, "seed", 0, kInt64Max));
  if (j.contains("stop")) r.stop_strings = stop_field(j);
  override_sampling(j, "temperature", r.sampling, &SamplingParams::temperature);
  override_sampling(j, "top_p", r.sampling, &SamplingParams::top_p);
  override_sampling(j, "top_k", r.sampling, &SamplingParams::top_k);
  override_sampling(j, "min_p", r.sampling, &SamplingParams::min_p);
}

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

// Rendered as the rollouts and SFT render prompts (enable_thinking false: Qwen3's empty think block), so
// that a model trained here is tried on the text it was trained on.
std::vector<int32_t> chat_prompt(const Tokenizer& tok, const Json& messages, const Json& tools) {
  return tok.encode(tok.apply_chat_template(messages, tools, true, Json::object({{"enable_thinking", false}})));
}

// The prompt's tokens from "input_ids", "messages" (needs --chat) or "prompt"; `source` gets the field used.
std::vector<int32_t> prompt_of(const Json& j, const LineContext& c, bool has_pictures, const char*& source) {
  if (j.contains("input_ids")) {
    source = "input_ids";
    return input_ids_of(j, c.vocab);
  }
  // verl's dataset rows hold the chat messages in "prompt".
  const char* messages_field = j.contains("messages")                          ? "messages"
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
  return chat_prompt(*c.tok, has_pictures ? template_messages(messages, true) : messages,
                     c.tools ? *c.tools : Json());
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
  GRPO_CHECK(paths.empty() || c.images, field("images"), ": the model has no preprocessor_config.json (not a "
             "vision-language model)");
  return paths;
}

// "<image>" placeholders in "prompt" or "messages" (image items included); input_ids lines have none.
int64_t placeholders_of(const Json& j) {
  if (j.contains("input_ids")) return -1;
  for (const char* name : {"messages", "prompt"})
    if (j.contains(name) && j[name].is_array())
      return count_image_placeholders(nlohmann::json::parse(j[name].dump()));
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

// The model's limits, checked per line so that a line too long for them is skipped instead of failing all.
void check_fits(const rollout::Request& r, const char* source, const LineContext& c) {
  const int64_t tokens = static_cast<int64_t>(r.prompt.size()) + r.max_new_tokens;
  GRPO_CHECK(!r.prompt.empty(), "field \"", source, "\": the prompt is empty");
  GRPO_CHECK(tokens <= c.context, "field \"", source, "\": the prompt's ", r.prompt.size(), " tokens + max_new_tokens ",
             r.max_new_tokens, " exceed the model's context of ", c.context, " tokens (max_position_embeddings)");
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
  check_fits(r, source, c);
  r.id = static_cast<uint64_t>(line);  // the RNG key: a line's samples do not depend on the other lines
  return r;
}

Json parse_line(const std::string& text) {
  try {
    return Json::parse(text);
  } catch (const std::exception& e) {
    fail("not valid JSON (", e.what(), ")");
  }
}

// Every line's request and input; a bad line is reported on stderr and counted in `bad`.
struct Lines {
  std::vector<Json> inputs;
  std::vector<rollout::Request> requests;  // id: the line number
  int64_t bad = 0;
};

// Skips (and reports) the lines whose prompt + max_new_tokens need more KV blocks than the cache has: only
// possible when --kv-cache-memory or --kv-cache-fraction gives less than the work can use.
void drop_lines_over_the_cache(Lines& lines, const rollout::Engine& engine, const std::string& path) {
  const int64_t blocks = engine.kv_cache().num_blocks(), bs = engine.kv_cache().block_size();
  size_t kept = 0;
  for (size_t i = 0; i < lines.requests.size(); ++i) {
    const rollout::Request& r = lines.requests[i];
    const int64_t need = rollout::kv_blocks_for(1, static_cast<int64_t>(r.prompt.size()) + r.max_new_tokens, bs,
                                                "[generate] KV sizing");
    if (need > blocks) {
      ++lines.bad;
      std::fprintf(stderr,
                   "error: %s:%llu: the prompt's %zu tokens + max_new_tokens %d need %lld KV blocks, the cache has %lld "
                   "(raise --kv-cache-memory or lower max_new_tokens) (line skipped)\n",
                   path.c_str(), static_cast<unsigned long long>(r.id), r.prompt.size(), r.max_new_tokens,
                   static_cast<long long>(need), static_cast<long long>(blocks));
      continue;
    }
    if (kept != i) {
      lines.requests[kept] = std::move(lines.requests[i]);
      lines.inputs[kept] = std::move(lines.inputs[i]);
    }
    ++kept;
  }
  lines.requests.resize(kept);
  lines.inputs.resize(kept);
}

Lines read_lines(const std::string& path, const LineContext& c) {
  Lines out;
  for_each_line(path, [&](int64_t line, const std::string& text) {
    if (text.find_first_not_of(" \t") == std::string::npos) return;
    try {
      Json j = parse_line(text);
      out.requests.push_back(request_of(j, c, line));
      out.inputs.push_back(std::move(j));
    } catch (const std::exception& e) {
      ++out.bad;
      std::fprintf(stderr, "error: %s:%lld: %s (line skipped)\n", path.c_str(), static_cast<long long>(line), e.what());
    }
  });
  return out;
}

rollout::ProgressFn progress_printer() {
  auto last = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  return [last](const rollout::Progress& p) {
    auto now = std::chrono::steady_clock::now();
    if (std::chrono::duration<double>(now - *last).count() > 1.0 || p.requests_done == p.requests_total) {
      std::fprintf(stderr, "\r[generate] %lld/%lld requests, %lld tokens, %.0f tokens/s   ",
                   static_cast<long long>(p.requests_done), static_cast<long long>(p.requests_total),
                   static_cast<long long>(p.tokens_generated), p.tokens_per_second);
      *last = now;
    }
    return true;
  };
}

std::string output_lines(const Lines& lines, const std::vector<rollout::RequestResult>& res, bool with_tools) {
  std::string out;
  for (size_t i = 0; i < res.size(); ++i) {
    Json j = lines.inputs[i];
    Json comps = Json::array();
    for (const rollout::SampleResult& s : res[i].samples) {
      Json c = {{"text", s.text},
                {"token_ids", s.tokens},
                {"logprobs", s.logprobs},
                {"finish_reason", std::string(rollout::finish_reason_name(s.finish_reason))}};
      if (with_tools) {
        c["response_mask"] = s.response_mask;
        c["num_turns"] = s.turns.assistant_turns + s.turns.user_turns + 1;
        c["tool_calls"] = s.turns.tool_calls;
        c["tool_failures"] = s.turns.failures;
      }
      comps.push_back(std::move(c));
    }
    j["completions"] = comps;
    out += j.dump() + "\n";
  }
  return out;
}

// The model folder's tokenizer; none without tokenizer.json (`why` then says so), when the options need none.
std::optional<Tokenizer> load_tokenizer(const GenerateArgs& a, std::string& why) {
  const std::filesystem::path file = std::filesystem::path(a.model) / "tokenizer.json";
  if (std::filesystem::exists(file)) return Tokenizer::load(a.model);
  why = cat("no tokenizer.json in ", a.model);
  GRPO_CHECK(!a.chat, "[generate] --chat needs the model's tokenizer (", why, ")");
  GRPO_CHECK(a.stop.empty(), "[generate] --stop needs the model's tokenizer (", why, ")");
  return std::nullopt;
}

void run_generate(const GenerateArgs& a) {
  rollout::Request defaults = request_defaults(a);
  check_engine_options(a);
  if (a.threads > 0) set_num_threads(a.threads);
  std::string no_tokenizer;
  const std::optional<Tokenizer> tok = load_tokenizer(a, no_tokenizer);
  auto weights = ModelWeights::load(a.model);
  if (tok) {
    GRPO_CHECK(tok->vocab_size() <= weights->config().vocab_size, "[generate] ", a.model, ": the tokenizer has ",
               tok->vocab_size(), " token ids but the model's vocab_size is ", weights->config().vocab_size);
    defaults.stop_token_ids = tok->stop_ids();
  } else {
    for (int64_t id : weights->config().eos_token_ids) defaults.stop_token_ids.push_back(static_cast<int32_t>(id));
  }

  rollout::EngineConfig ec;
  ec.kv_dtype = kv_dtype_of(a.kv_dtype);
  ec.kv_memory_bytes = a.kv_bytes;
  ec.kv_memory_fraction = a.kv_fraction;
  rollout::DecoderRolloutModel model(*weights, parse_compute_mode(a.dtype), ec.block_size);
  std::unique_ptr<LoraAdapters> lora;  // applied at every step, not merged
  if (!a.adapter.empty()) lora = LoraAdapters::load(weights->config(), a.adapter);
  model.set_lora(lora.get());
  std::optional<ImageProcessorConfig> images;
  if (has_image_processor_config(a.model)) images = load_image_processor_config(a.model);
  std::unique_ptr<RunTools> tools;
  if (a.tools || !a.tool_config.empty()) {
    GRPO_CHECK(a.chat && tok, "[generate] --tools / --tool-config need --chat (tool turns are rendered by the "
               "model's chat template)");
    MultiTurnConfig mt;
    mt.enable = true;
    mt.tool_config_path = a.tool_config;
    mt.max_assistant_turns = a.max_assistant_turns;
    tools = std::make_unique<RunTools>(mt, *tok, response_end_id(*tok, true));
  }
  const LineContext context{.defaults = defaults,
                            .tok = tok ? &*tok : nullptr,
                            .no_tokenizer = no_tokenizer,
                            .chat = a.chat,
                            .vocab = model.vocab_size(),
                            .context = model.max_positions(),
                            .images = images ? &*images : nullptr,
                            .prompts_path = a.prompts,
                            .image_pad = static_cast<int32_t>(weights->config().image_token_id),
                            .tools = tools ? &tools->schemas : nullptr};
  Lines lines = read_lines(a.prompts, context);
  // The KV budget never exceeds what these requests can hold at once.
  ec.kv_max_blocks = std::max<int64_t>(
      1, rollout::kv_blocks_for(lines.requests, ec.max_seqs, ec.block_size, model.max_positions()));
  rollout::Engine engine(model, ec, tok ? rollout::tokenizer_decode_fn(*tok) : rollout::DecodeFn{});
  std::fprintf(stderr, "[generate] %s\n", engine.kv_budget().describe().c_str());
  drop_lines_over_the_cache(lines, engine, a.prompts);
  std::vector<rollout::RequestResult> res =
      engine.generate(lines.requests, progress_printer(), tools ? tools->options : rollout::MultiTurn{});
  std::fprintf(stderr, "\n");
  const std::string out = output_lines(lines, res, tools != nullptr);
  if (a.out == "-")
    std::fwrite(out.data(), 1, out.size(), stdout);
  else
    write_file_atomic(a.out, out);
  GRPO_CHECK(lines.bad == 0, "[generate] ", lines.bad, " line(s) of ", a.prompts, " were skipped (see above)");
}

void setup_generate(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  CLI::App* c = app.add_subcommand("generate", "Sample completions for JSONL prompts with the rollout engine");
  c->add_option("--adapter", a->adapter, "PEFT LoRA adapter folder to apply (unmerged)");
  c->add_option("--model", a->model,
                "Hugging Face model folder (without tokenizer.json: \"input_ids\" prompts only, texts empty)")
      ->required();
  c->add_option("--prompts", a->prompts,
                "JSONL: {\"prompt\"}, {\"messages\"} or {\"input_ids\"} per line; optional \"n\", \"max_new_tokens\", "
                "\"temperature\", \"top_p\", \"top_k\", \"min_p\", \"seed\", \"stop\" override the options for that "
                "line; \"images\": picture paths (relative to this file) for the line's \"<image>\" placeholders or "
                "image items; a bad line is reported and skipped")
      ->required();
  c->add_option("--out", a->out, "JSONL output: each input line plus \"completions\" (- for stdout)")->required();
  c->add_option("--n", a->n, "Samples per prompt (>= 1)");
  c->add_option("--max-new-tokens", a->max_new_tokens,
                "Tokens to generate at most (>= 1; prompt + this must fit the model's context)");
  c->add_option("--temperature", a->temperature, "Sampling temperature (finite, >= 0; 0: greedy)");
  c->add_option("--top-p", a->top_p, "Nucleus sampling mass, in (0, 1]");
  c->add_option("--top-k", a->top_k, "Keep the k most likely tokens (>= 0; 0: off)");
  c->add_option("--min-p", a->min_p, "Drop tokens below min-p x the most likely one, in [0, 1]");
  c->add_option("--seed", a->seed, "Seed (>= 0)");
  c->add_option("--kv-dtype", a->kv_dtype, "KV cache dtype: f32, bf16 or int8");
  c->add_option("--kv-cache-memory", a->kv_bytes,
                "KV cache budget in bytes (default: a fraction of free memory); never more than the prompts can use");
  c->add_option("--kv-cache-fraction", a->kv_fraction,
                "KV cache budget as a fraction of free memory, in (0, 1]; never more than the prompts can use");
  c->add_option("--dtype", a->dtype, "Weights read as f32 or bf16")->check(CLI::IsMember({"f32", "bf16"}));
  c->add_flag("--chat", a->chat, "Apply the model's chat template with the generation prompt (enable_thinking "
                                 "false, as training renders prompts)");
  c->add_option("--stop", a->stop, "Stop string (repeatable, not empty); excluded from the text");
  c->add_option("--threads", a->threads, "Threads (default 0: all cores)");
  c->add_flag("--tools", a->tools, "Multi-turn with the built-in calculator tool (needs --chat; docs/tools.md)");
  c->add_option("--tool-config", a->tool_config,
                "Multi-turn with the tools of verl's tool config YAML (needs --chat; docs/tools.md)");
  c->add_option("--max-assistant-turns", a->max_assistant_turns, "With tools: assistant turns at most (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  c->callback([a] { run_generate(*a); });
}

GRPO_REGISTER_COMMAND(setup_generate);

}  // namespace
}  // namespace grpo::cli
