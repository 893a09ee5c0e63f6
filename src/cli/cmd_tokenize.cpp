// `grpo tokenize`, `grpo detokenize` and `grpo bench tokenize`: JSONL in, JSONL out, in input order.
//   tokenize:   {"text": ...} lines (or, with --chat, {"messages", "tools", "add_generation_prompt",
//               "enable_thinking", "images"} rendered with the model's chat template) -> {"ids": [...]}
//               lines; with pictures (paths relative to the input file, one per "<image>" or image item, as
//               in datasets) each <|image_pad|> is expanded to its picture's tokens and the line also gets
//               "image_grid_thw" (the model folder's preprocessor_config.json sizes the pictures)
//   detokenize: {"ids": [...]} lines -> {"text": ...} lines
//   bench tokenize: MB/s and tokens/s of encoding a text file (one document a line), 1 thread and all cores
// Lines are processed in blocks, encoded in parallel; errors name the input and its line.
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/command.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/files.h"
#include "core/threads.h"
#include "data/vision_data.h"
#include "image/preprocess.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace grpo::cli {
namespace {

using nlohmann::json;

constexpr size_t kBlockLines = 4096;

struct TokenizeOptions {
  std::string tokenizer;
  std::string input = "-";
  bool chat = false;
  bool add_generation_prompt = false;
  bool add_special_tokens = false;
  bool skip_special_tokens = false;
};

std::string source_name(const std::string& input) { return input == "-" ? "<stdin>" : input; }

// Reads the non-blank lines of `input` in blocks of kBlockLines and calls fn(line numbers, lines).
void for_each_block(const std::string& input,
                    const std::function<void(const std::vector<int64_t>&, const std::vector<std::string>&)>& fn) {
  std::vector<int64_t> numbers;
  std::vector<std::string> lines;
  for_each_line(input, [&](int64_t n, const std::string& line) {
    if (line.find_first_not_of(" \t") == std::string::npos) return;
    numbers.push_back(n);
    lines.push_back(line);
    if (lines.size() == kBlockLines) {
      fn(numbers, lines);
      numbers.clear();
      lines.clear();
    }
  });
  if (!lines.empty()) fn(numbers, lines);
}

template <typename Json>
Json parse_line(const std::string& line, const std::string& where) {
  utf8::check_valid(line, where);
  try {
    Json j = Json::parse(line);
    if (!j.is_object()) fail(where, ": expected a JSON object");
    return j;
  } catch (const nlohmann::json::exception& e) {
    fail(where, ": invalid JSON: ", e.what());
  }
}

template <typename Json>
bool bool_field(const Json& j, const char* key, bool default_value, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return default_value;
  if (!j[key].is_boolean()) fail(where, ": ", key, ": expected true or false");
  return j[key].template get<bool>();
}

// One input line, rendered: its "text", or its conversation rendered with the chat template (JSON objects
// keep their key order, as in Python, so tool schemas print as given), and its pictures' grids.
struct LineText {
  std::string text;
  std::vector<ImageGrid> grids;
};

LineText line_text(const Tokenizer& tok, const TokenizeOptions& o, const ImageProcessorConfig* images,
                   const std::string& line, const std::string& where) {
  if (!o.chat) {
    const json j = parse_line<json>(line, where);
    if (!j.contains("text") || !j["text"].is_string()) fail(where, ": expected {\"text\": string}");
    return {j["text"].get<std::string>(), {}};
  }
  const auto j = parse_line<nlohmann::ordered_json>(line, where);
  if (!j.contains("messages") || !j["messages"].is_array())
    fail(where, ": expected {\"messages\": [...]} (with --chat)");
  nlohmann::ordered_json tools;
  if (j.contains("tools") && !j["tools"].is_null()) {
    if (!j["tools"].is_array()) fail(where, ": tools: expected an array");
    tools = j["tools"];
  }
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  if (j.contains("enable_thinking") && !j["enable_thinking"].is_null())
    extra["enable_thinking"] = bool_field(j, "enable_thinking", true, where);
  LineText out;
  const bool has_images = j.contains("images") && !j["images"].is_null();
  if (has_images) {
    if (!j["images"].is_array()) fail(where, ": images: expected a list of picture paths");
    std::vector<std::string> paths;
    for (const auto& p : j["images"]) {
      if (!p.is_string()) fail(where, ": images: expected picture paths (strings), got ", p.dump());
      paths.push_back(resolve_picture_path(o.input, p.get<std::string>()));
    }
    const int64_t placeholders = count_image_placeholders(nlohmann::json::parse(j["messages"].dump()));
    if (placeholders != static_cast<int64_t>(paths.size()))
      fail(where, ": ", placeholders, " image placeholders (\"<image>\" or image items) but ", paths.size(),
           " pictures in \"images\"");
    if (!paths.empty() && !images)
      fail(where, ": the line has pictures but ", o.tokenizer, " has no preprocessor_config.json (a vision-language model folder)");
    if (!paths.empty()) out.grids = probe_pictures(paths, *images, where);
  }
  try {
    out.text = tok.apply_chat_template(template_messages(j["messages"], has_images), tools,
                                       bool_field(j, "add_generation_prompt", o.add_generation_prompt, where), extra);
  } catch (const Error& e) {
    fail(where, ": ", e.what());
  }
  return out;
}

void write_ids(std::string& out, const std::vector<int32_t>& ids, const std::vector<ImageGrid>& grids) {
  out += "{\"ids\":[";
  for (size_t k = 0; k < ids.size(); ++k) {
    if (k) out += ',';
    out += std::to_string(ids[k]);
  }
  out += ']';
  if (!grids.empty()) {
    out += ",\"image_grid_thw\":[";
    for (size_t k = 0; k < grids.size(); ++k)
      out += cat(k ? "," : "", "[", grids[k].t, ",", grids[k].h, ",", grids[k].w, "]");
    out += ']';
  }
  out += "}\n";
}

void run_tokenize(const TokenizeOptions& o) {
  const Tokenizer tok = Tokenizer::load(o.tokenizer);
  std::optional<ImageProcessorConfig> images;
  if (o.chat && std::filesystem::is_directory(o.tokenizer) && has_image_processor_config(o.tokenizer))
    images = load_image_processor_config(o.tokenizer);
  const std::string source = source_name(o.input);
  for_each_block(o.input, [&](const std::vector<int64_t>& numbers, const std::vector<std::string>& lines) {
    // Parse, render (the template engine is thread-safe) and encode in parallel; report the first error.
    std::vector<std::vector<int32_t>> ids(lines.size());
    std::vector<std::vector<ImageGrid>> grids(lines.size());
    std::vector<std::string> errors(lines.size());
    const auto n = static_cast<int64_t>(lines.size());
#pragma omp parallel for schedule(dynamic, 16) num_threads(num_threads())
    for (int64_t k = 0; k < n; ++k) {
      const std::string where = cat(source, ":", numbers[k]);
      try {
        LineText in = line_text(tok, o, images ? &*images : nullptr, lines[k], where);  // errors name the line
        try {
          ids[k] = tok.encode(in.text, o.add_special_tokens);
        } catch (const std::exception& e) {
          errors[k] = cat(where, ": ", e.what());
          continue;
        }
        if (!in.grids.empty()) ids[k] = expand_picture_pads(tok, ids[k], in.grids, images->merge_size, where);
        grids[k] = std::move(in.grids);
      } catch (const std::exception& e) {
        errors[k] = e.what();
      }
    }
    std::string out;
    for (size_t k = 0; k < lines.size(); ++k) {
      if (!errors[k].empty()) fail(errors[k]);
      write_ids(out, ids[k], grids[k]);
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
  });
  std::fflush(stdout);
}

void run_detokenize(const TokenizeOptions& o) {
  const Tokenizer tok = Tokenizer::load(o.tokenizer);
  const std::string source = source_name(o.input);
  for_each_block(o.input, [&](const std::vector<int64_t>& numbers, const std::vector<std::string>& lines) {
    std::string out;
    for (size_t k = 0; k < lines.size(); ++k) {
      const std::string where = cat(source, ":", numbers[k]);
      const json j = parse_line<json>(lines[k], where);
      if (!j.contains("ids") || !j["ids"].is_array()) fail(where, ": expected {\"ids\": [...]}");
      std::vector<int32_t> ids;
      for (const json& id : j["ids"]) {
        if (!id.is_number_integer()) fail(where, ": ids: expected integers, got ", id.dump());
        ids.push_back(id.get<int32_t>());
      }
      std::string text;
      try {
        text = tok.decode(ids, o.skip_special_tokens);
      } catch (const Error& e) {
        fail(where, ": ", e.what());
      }
      out += json{{"text", text}}.dump();
      out += '\n';
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
  });
  std::fflush(stdout);
}

struct BenchOptions {
  std::string tokenizer;
  std::string input;
  int repeat = 3;
  bool json_output = false;
};

void run_bench(const BenchOptions& o) {
  const Tokenizer tok = Tokenizer::load(o.tokenizer);
  const std::string data = read_file(o.input);
  std::vector<std::string> docs;
  size_t bytes = 0;
  int64_t line_number = 0;
  for (size_t pos = 0; pos < data.size();) {
    size_t end = data.find('\n', pos);
    if (end == std::string::npos) end = data.size();
    ++line_number;
    std::string_view line = std::string_view(data).substr(pos, end - pos);
    utf8::check_valid(line, cat(o.input, ":", line_number));
    if (!line.empty()) {
      docs.emplace_back(line);
      bytes += line.size();
    }
    pos = end + 1;
  }
  GRPO_CHECK(!docs.empty(), o.input, ": no text to tokenize");
  GRPO_CHECK(o.repeat >= 1, "--repeat: expected >= 1, got ", o.repeat);

  // Single thread: best of `repeat` passes (the first also fills the word cache).
  int64_t tokens = 0;
  double best_single = 1e30;
  for (int r = 0; r < o.repeat; ++r) {
    const auto start = std::chrono::steady_clock::now();
    int64_t count = 0;
    for (const std::string& d : docs) count += static_cast<int64_t>(tok.encode(d).size());
    best_single = std::min(best_single, seconds_since(start));
    tokens = count;
  }
  double best_all = 1e30;
  for (int r = 0; r < o.repeat; ++r) {
    const auto start = std::chrono::steady_clock::now();
    const auto ids = tok.encode_batch(docs);
    best_all = std::min(best_all, seconds_since(start));
    int64_t count = 0;
    for (const auto& v : ids) count += static_cast<int64_t>(v.size());
    GRPO_CHECK(count == tokens, "[bench] parallel encoding gave ", count, " tokens, single-threaded ", tokens);
  }
  const double mb = static_cast<double>(bytes) / 1e6;
  if (o.json_output) {
    std::printf("%s\n", json{{"bytes", bytes},
                             {"documents", docs.size()},
                             {"tokens", tokens},
                             {"threads", num_threads()},
                             {"single_seconds", best_single},
                             {"all_seconds", best_all}}
                            .dump()
                            .c_str());
    return;
  }
  std::printf("tokenize %s: %.2f MB, %zu documents, %lld tokens\n", o.input.c_str(), mb, docs.size(),
              static_cast<long long>(tokens));
  std::printf("  1 thread  : %8.2f MB/s  %10.0f tokens/s\n", mb / best_single, tokens / best_single);
  std::printf("  %d threads: %8.2f MB/s  %10.0f tokens/s\n", num_threads(), mb / best_all, tokens / best_all);
}

void setup_tokenize(CLI::App& app) {
  {
    auto o = std::make_shared<TokenizeOptions>();
    CLI::App* cmd = app.add_subcommand("tokenize", "Encode JSONL {\"text\"} (or --chat conversations) into {\"ids\"}");
    cmd->add_option("--tokenizer", o->tokenizer, "Tokenizer folder or tokenizer.json")->required();
    cmd->add_option("--input", o->input, "JSONL input (- = stdin)");
    cmd->add_flag("--chat", o->chat,
                  "Lines are {\"messages\", \"tools\", \"images\", ...}, rendered with the chat template (image "
                  "pads expanded)");
    cmd->add_flag("--add-generation-prompt", o->add_generation_prompt,
                  "With --chat: end with the assistant prompt (a line's own field wins)");
    cmd->add_flag("--add-special-tokens", o->add_special_tokens, "Add bos/eos as the tokenizer's config asks");
    cmd->callback([o] { run_tokenize(*o); });
  }
  {
    auto o = std::make_shared<TokenizeOptions>();
    CLI::App* cmd = app.add_subcommand("detokenize", "Decode JSONL {\"ids\"} into {\"text\"}");
    cmd->add_option("--tokenizer", o->tokenizer, "Tokenizer folder or tokenizer.json")->required();
    cmd->add_option("--input", o->input, "JSONL input (- = stdin)");
    cmd->add_flag("--skip-special-tokens", o->skip_special_tokens, "Leave special tokens out of the text");
    cmd->callback([o] { run_detokenize(*o); });
  }
  {
    auto o = std::make_shared<BenchOptions>();
    CLI::App* bench = group_command(app, "bench", "Benchmarks");
    CLI::App* cmd = bench->add_subcommand("tokenize", "Encoding speed on a text file (one document a line)");
    cmd->add_option("--tokenizer", o->tokenizer, "Tokenizer folder or tokenizer.json")->required();
    cmd->add_option("--input", o->input, "UTF-8 text file")->required();
    cmd->add_option("--repeat", o->repeat, "Passes per measurement (best is reported)");
    cmd->add_flag("--json", o->json_output, "Print one JSON object instead of a table");
    cmd->callback([o] { run_bench(*o); });
  }
}

GRPO_REGISTER_COMMAND(setup_tokenize);

}  // namespace
}  // namespace grpo::cli
