// JSONL prompt datasets (see dataset.h).
#include "data/dataset.h"

#include <algorithm>
#include <cctype>
#include <span>

#include "core/error.h"
#include "core/files.h"
#include "data/vision_data.h"

namespace grpo {

PromptOverflow prompt_overflow_from_config(bool filter_overlong_prompts, PromptOverflow truncation) {
  return filter_overlong_prompts ? PromptOverflow::Filter : truncation;
}

namespace {

std::string text_field(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto& v = j.at(key);
  GRPO_CHECK(v.is_string(), where, ": \"", key, "\" must be a string, got ", v.type_name());
  return v.get<std::string>();
}

void check_content_items(const nlohmann::json& items, const char* key, size_t m, const std::string& where) {
  for (size_t i = 0; i < items.size(); ++i) {
    const auto& it = items[i];
    GRPO_CHECK(it.is_object(), where, ": ", key, "[", m, "].content[", i, "] must be an object ({\"type\": \"text\", ",
               "\"text\": ...} or {\"type\": \"image\"})");
    const bool image = is_image_item(it);
    GRPO_CHECK(!(it.contains("type") && it["type"] == "video") && !it.contains("video"), where, ": ", key, "[", m,
               "].content[", i, "]: video items are not supported");
    GRPO_CHECK(image || (it.contains("text") && it["text"].is_string()), where, ": ", key, "[", m, "].content[", i,
               "] must be {\"type\": \"text\", \"text\": string} or {\"type\": \"image\"}, got ", it.dump());
  }
}

// Moves the turns after the last user turn of a `messages` row, when there are assistant turns among
// them, into response_messages (see Example).
void split_response_turns(Example& ex, const std::string& where) {
  size_t last_user = ex.messages.size();
  for (size_t i = 0; i < ex.messages.size(); ++i)
    if (ex.messages[i]["role"] == "user") last_user = i;
  if (last_user == ex.messages.size() || last_user + 1 == ex.messages.size()) return;
  bool assistant = false;
  for (size_t i = last_user + 1; i < ex.messages.size(); ++i) assistant = assistant || ex.messages[i]["role"] == "assistant";
  if (!assistant) return;
  GRPO_CHECK(ex.messages[last_user + 1]["role"] == "assistant", where, ": messages[", last_user + 1,
             "]: the turns after the last user turn (the target) must start with an assistant turn");
  ex.response_messages = nlohmann::ordered_json::array();
  for (size_t i = last_user + 1; i < ex.messages.size(); ++i)
    ex.response_messages.push_back(nlohmann::ordered_json::parse(ex.messages[i].dump()));
  ex.messages.erase(ex.messages.begin() + static_cast<std::ptrdiff_t>(last_user + 1), ex.messages.end());
}

// `key`: "messages", or "prompt" for verl's rows.
void check_messages(const nlohmann::json& messages, const char* key, const std::string& where) {
  GRPO_CHECK(messages.is_array() && !messages.empty(), where, ": \"", key,
             "\" must be a non-empty array of {role, content}, got ", messages.type_name());
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto& m = messages[i];
    GRPO_CHECK(m.is_object(), where, ": ", key, "[", i, "] must be an object {role, content}");
    GRPO_CHECK(m.contains("role") && m["role"].is_string(), where, ": ", key, "[", i, "] needs a string \"role\"");
    if (m.contains("tool_calls")) {  // an assistant's calls (OpenAI's form): its content may be null
      GRPO_CHECK(m["role"] == "assistant" && m["tool_calls"].is_array(), where, ": ", key, "[", i,
                 "].tool_calls must be a list of calls, in an assistant turn");
      for (const auto& c : m["tool_calls"]) {
        const auto& f = c.is_object() && c.contains("function") ? c["function"] : c;
        GRPO_CHECK(f.is_object() && f.contains("name") && f["name"].is_string() && f.contains("arguments") &&
                       (f["arguments"].is_object() || f["arguments"].is_string()),
                   where, ": ", key, "[", i, "].tool_calls: each call needs {\"function\": {\"name\": text, ",
                   "\"arguments\": object}}");
      }
      if (!m.contains("content") || m["content"].is_null()) continue;
    }
    GRPO_CHECK(m.contains("content") && (m["content"].is_string() || m["content"].is_array()), where, ": ", key, "[", i,
               "] needs a string \"content\" (or a list of content items)");
    if (m["content"].is_array()) check_content_items(m["content"], key, i, where);
  }
}

std::vector<std::string> image_paths(const nlohmann::json& v, const std::string& key, const std::string& where) {
  GRPO_CHECK(v.is_array(), where, ": \"", key, "\" must be a list of picture paths, got ", v.type_name());
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    GRPO_CHECK(v[i].is_string() && !v[i].get<std::string>().empty(), where, ": \"", key, "\"[", i,
               "] must be a picture path (a non-empty string), got ", v[i].dump());
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

bool ends_with_icase(const std::string& s, const std::string& suffix) {
  if (s.size() < suffix.size()) return false;
  for (size_t i = 0; i < suffix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[s.size() - suffix.size() + i])) != suffix[i]) return false;
  return true;
}

void check_placeholder_count(const Example& ex, const std::string& image_key, const std::string& where) {
  const int64_t placeholders = count_image_placeholders(ex);
  GRPO_CHECK(placeholders == static_cast<int64_t>(ex.images.size()), where, ": ", placeholders,
             " image placeholder", placeholders == 1 ? "" : "s", " (\"", kImagePlaceholder,
             "\" in the text or {\"type\": \"image\"} items) but ", ex.images.size(), " picture",
             ex.images.size() == 1 ? "" : "s", " in \"", image_key, "\"");
}

// The reference answer: `answer` (text or number), or verl's reward_model.ground_truth (text or number; a
// list or object is kept as its JSON text for external rewards).
std::string answer_of(const nlohmann::json& j, const std::string& where) {
  const bool has_answer = j.contains("answer"), has_verl = j.contains("reward_model");
  GRPO_CHECK(has_answer || has_verl, where,
             ": needs \"answer\" (or verl's \"reward_model\": {\"ground_truth\": ...})");
  GRPO_CHECK(!(has_answer && has_verl), where,
             ": has both \"answer\" and \"reward_model\"; expected one (the reference answer)");
  if (has_answer) {
    const auto& a = j["answer"];
    GRPO_CHECK(a.is_string() || a.is_number(), where, ": \"answer\" must be a string or a number, got ",
               a.type_name());
    return a.is_string() ? a.get<std::string>() : a.dump();
  }
  const auto& rm = j["reward_model"];
  GRPO_CHECK(rm.is_object() && rm.contains("ground_truth"), where,
             ": \"reward_model\" must be an object with \"ground_truth\" (verl's rows), got ",
             rm.is_object() ? "an object without it" : rm.type_name());
  const auto& gt = rm["ground_truth"];
  GRPO_CHECK(!gt.is_null(), where, ": \"reward_model.ground_truth\" is null");
  return gt.is_string() ? gt.get<std::string>() : gt.dump();
}

// `id` (text or integer), else verl's extra_info.index; "" when neither (the caller uses the line number).
std::string id_of(const nlohmann::json& j, const std::string& where) {
  const nlohmann::json* id = nullptr;
  const char* name = "id";
  if (j.contains("id")) {
    id = &j["id"];
  } else if (j.contains("extra_info") && j["extra_info"].is_object() && j["extra_info"].contains("index")) {
    id = &j["extra_info"]["index"];
    name = "extra_info.index";
  }
  if (!id) return "";
  GRPO_CHECK(id->is_string() || id->is_number_integer(), where, ": \"", name,
             "\" must be a string or an integer, got ", id->type_name());
  return id->is_string() ? id->get<std::string>() : id->dump();
}

}  // namespace

Example parse_example(const std::string& line, const std::string& where, bool require_response,
                      const std::string& image_key) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::parse_error& e) {
    fail(where, ": invalid JSON (", e.what(), ")");
  }
  Example ex = example_from_row(j, where, require_response, image_key);
  if (!ex.tools.is_null()) ex.tools = nlohmann::ordered_json::parse(line)["tools"];  // the row's key order
  return ex;
}

Example example_from_row(const nlohmann::json& j, const std::string& where, bool require_response,
                         const std::string& image_key) {
  GRPO_CHECK(j.is_object(), where, ": expected a JSON object, got ", j.type_name());
  Example ex;
  const bool has_prompt = j.contains("prompt"), has_messages = j.contains("messages");
  GRPO_CHECK(has_prompt != has_messages, where,
             has_prompt ? ": has both \"prompt\" and \"messages\"; expected one" : ": needs \"prompt\" or \"messages\"");
  if (has_prompt && j["prompt"].is_array()) {  // verl: the prompt is the chat turns
    check_messages(j["prompt"], "prompt", where);
    ex.messages = j["prompt"];
  } else if (has_prompt) {
    ex.prompt = text_field(j, "prompt", where);
    GRPO_CHECK(!ex.prompt.empty(), where, ": \"prompt\" is empty");
  } else {
    check_messages(j["messages"], "messages", where);
    ex.messages = j["messages"];
    split_response_turns(ex, where);
  }
  ex.answer = answer_of(j, where);
  ex.id = id_of(j, where);
  if (j.contains("data_source")) ex.data_source = text_field(j, "data_source", where);
  if (j.contains("response")) ex.response = text_field(j, "response", where);
  GRPO_CHECK(ex.response.empty() || ex.response_messages.is_null(), where,
             ": has both \"response\" and turns after the last user turn of \"messages\"; expected one target");
  GRPO_CHECK(!require_response || !ex.response.empty() || !ex.response_messages.is_null(), where,
             ": needs a non-empty \"response\" (the target text for supervised fine-tuning), or assistant turns "
             "after the last user turn of \"messages\"");
  if (j.contains("tools") && !j["tools"].is_null()) {
    GRPO_CHECK(j["tools"].is_array(), where, ": \"tools\" must be a list of function schemas, got ", j["tools"].type_name());
    ex.tools = nlohmann::ordered_json::parse(j["tools"].dump());
  }
  if (j.contains(image_key) && !j[image_key].is_null()) {
    ex.has_image_key = true;
    ex.images = image_paths(j[image_key], image_key, where);
    check_placeholder_count(ex, image_key, where);
  }
  ex.extra = nlohmann::json::object();
  for (const auto& [k, v] : j.items())
    if (k != "prompt" && k != "messages" && k != "answer" && k != "reward_model" && k != "id" &&
        k != "data_source" && k != "response" && k != "tools" && k != image_key)
      ex.extra[k] = v;
  return ex;
}

namespace {

// Pictures, the prompt's tokens and the length limit of one parsed example; appends it to ds unless it is
// filtered out. Picture paths are resolved against the data file and probed; pictures stored in a Parquet
// file were probed by the caller.
void add_example(Dataset& ds, Example&& ex, const std::string& path, const std::string& where,
                 const DatasetOptions& options) {
  if (ex.id.empty()) ex.id = std::to_string(ex.line);
  if (!ex.images.empty() && !ex.picture_file) {
    GRPO_CHECK(options.image_processor, where, ": the row has pictures but the model has no preprocessor_config.json",
               " (not a vision-language model)");
    for (std::string& p : ex.images) p = resolve_picture_path(path, p);
    ex.image_grids = probe_pictures(ex.images, *options.image_processor, where);
  }
  if (options.encode_prompt) {
    try {
      ex.prompt_ids = options.encode_prompt(ex);
    } catch (const Error& e) {
      fail(where, ": ", e.what());
    }
    const auto limit = static_cast<size_t>(options.max_prompt_length);
    if (limit > 0 && ex.prompt_ids.size() > limit) {
      switch (options.overflow) {
        case PromptOverflow::Filter: ++ds.filtered; return;
        case PromptOverflow::TruncateLeft:
        case PromptOverflow::TruncateRight:
          GRPO_CHECK(ex.images.empty(), where, ": the prompt has ", ex.prompt_ids.size(),
                     " tokens, more than data.max_prompt_length = ", limit,
                     ", and a prompt with pictures cannot be truncated (set data.filter_overlong_prompts)");
          if (options.overflow == PromptOverflow::TruncateRight) {
            ex.prompt_ids.resize(limit);
            ++ds.truncated;
            break;
          }
          ex.prompt_ids.erase(ex.prompt_ids.begin(), ex.prompt_ids.end() - static_cast<ptrdiff_t>(limit));
          ++ds.truncated;
          break;
        case PromptOverflow::Error:
          fail(where, ": the prompt has ", ex.prompt_ids.size(), " tokens, more than data.max_prompt_length = ",
               limit, " (set data.filter_overlong_prompts or data.truncation)");
      }
    }
  }
  ds.examples.push_back(std::move(ex));
}

void load_jsonl(Dataset& ds, const std::string& path, const DatasetOptions& options) {
  for_each_line(path, [&](int64_t line_no, const std::string& line) {
    if (line.find_first_not_of(" \t") == std::string::npos) return;  // blank lines separate nothing
    ++ds.lines;
    const std::string where = cat("[dataset] ", path, ":", line_no);
    Example ex = parse_example(line, where, options.require_response, options.image_key);
    ex.line = line_no;
    add_example(ds, std::move(ex), path, where, options);
  });
}

// Whether a top-level Parquet column holds binary values (pictures' bytes) anywhere inside it.
bool column_holds_bytes(const parquet::Schema& schema, int field) {
  for (const parquet::LeafColumn& leaf : schema.leaves())
    if (leaf.top == field && leaf.kind == parquet::ValueKind::Binary) return true;
  return false;
}

// A row's pictures stored in the Parquet file: `value` is the image column (a list of {bytes, path}, of
// bytes, or one such item). Items with bytes are probed here and read again when the example is used;
// a list with paths only (no bytes) names picture files instead.
void attach_stored_pictures(Example& ex, const nlohmann::json& value, const std::string& column,
                            const std::shared_ptr<const parquet::ParquetFile>& file, int row_group, int64_t row,
                            const std::string& where, const DatasetOptions& options) {
  if (value.is_null()) return;
  const nlohmann::json items = value.is_array() ? value : nlohmann::json::array({value});
  std::vector<std::span<const uint8_t>> bytes;
  std::vector<std::string> paths;
  for (size_t k = 0; k < items.size(); ++k) {
    const nlohmann::json& it = items[k];
    const nlohmann::json* b = it.is_binary() ? &it : (it.is_object() && it.contains("bytes") ? &it["bytes"] : nullptr);
    if (b && b->is_binary()) {
      bytes.emplace_back(b->get_binary().data(), b->get_binary().size());
    } else if (it.is_object() && it.contains("path") && it["path"].is_string() && !it["path"].get<std::string>().empty()) {
      paths.push_back(it["path"].get<std::string>());
    } else {
      fail(where, ": \"", column, "\"[", k, "] has neither bytes nor a path: ", it.is_binary() ? "binary" : it.dump());
    }
  }
  GRPO_CHECK(bytes.empty() || paths.empty(), where, ": \"", column, "\" mixes pictures stored in the file (",
             bytes.size(), ") with paths only (", paths.size(), "); expected one or the other");
  ex.has_image_key = true;
  if (!paths.empty()) {
    ex.images = paths;
  } else {
    GRPO_CHECK(bytes.empty() || options.image_processor, where,
               ": the row has pictures but the model has no preprocessor_config.json (not a vision-language model)");
    for (size_t k = 0; k < bytes.size(); ++k) ex.images.push_back(cat(file->path(), " row ", ex.line, " ", column, "[", k, "]"));
    if (!bytes.empty()) ex.image_grids = probe_picture_bytes(bytes, ex.images, *options.image_processor, where);
    ex.picture_file = file;
    ex.picture_row_group = row_group;
    ex.picture_row = row;
    ex.picture_column = column;
  }
  check_placeholder_count(ex, column, where);
}

// Rows of a Parquet file, a few at a time (stored pictures: only their sizes are kept).
void load_parquet(Dataset& ds, const std::string& path, const DatasetOptions& options) {
  constexpr int64_t kPictureRowsPerRead = 256;
  const auto file = std::make_shared<const parquet::ParquetFile>(path);
  const parquet::Schema& schema = file->schema();
  const int image_field = schema.field_index(options.image_key);
  const bool stored = image_field >= 0 && column_holds_bytes(schema, image_field);
  std::vector<std::string> columns;
  for (const std::string& c : file->column_names())
    if (!(stored && c == options.image_key)) columns.push_back(c);
  int64_t row_no = 0;
  for (int g = 0; g < file->num_row_groups(); ++g) {
    const int64_t n = file->row_group_rows(g);
    for (int64_t b = 0; b < n; b += kPictureRowsPerRead) {
      const int64_t e = std::min(n, b + kPictureRowsPerRead);
      std::vector<nlohmann::json> rows =
          columns.empty() ? std::vector<nlohmann::json>(static_cast<size_t>(e - b), nlohmann::json::object())
                          : file->read_rows(g, b, e, columns);
      std::vector<nlohmann::json> pictures;
      if (stored) pictures = file->read_rows(g, b, e, {options.image_key});
      for (int64_t r = b; r < e; ++r) {
        ++ds.lines;
        ++row_no;
        const std::string where = cat("[dataset] ", path, " row ", row_no);
        Example ex = example_from_row(rows[static_cast<size_t>(r - b)], where, options.require_response, options.image_key);
        ex.line = row_no;
        if (stored)
          attach_stored_pictures(ex, pictures[static_cast<size_t>(r - b)][options.image_key], options.image_key, file, g,
                                 r, where, options);
        add_example(ds, std::move(ex), path, where, options);
      }
    }
  }
}

}  // namespace

bool is_parquet_file(const std::string& path) {
  if (ends_with_icase(path, ".parquet")) return true;
  return path != "-" && parquet::has_parquet_magic(path);
}

Dataset load_dataset(const std::string& path, const DatasetOptions& options) {
  GRPO_CHECK(options.max_prompt_length >= 0, "[dataset] max_prompt_length must be >= 0, got ",
             options.max_prompt_length);
  Dataset ds;
  ds.path = path;
  if (is_parquet_file(path)) load_parquet(ds, path, options);
  else load_jsonl(ds, path, options);
  GRPO_CHECK(ds.lines > 0, "[dataset] ", path, ": no examples (the file is empty)");
  GRPO_CHECK(!ds.examples.empty(), "[dataset] ", path, ": all ", ds.lines, " prompts are longer than ",
             options.max_prompt_length, " tokens and were filtered out; raise data.max_prompt_length, or set "
             "data.filter_overlong_prompts: false with data.truncation: left or right");
  return ds;
}

Dataset load_datasets(const std::vector<std::string>& paths, const DatasetOptions& options) {
  GRPO_CHECK(!paths.empty(), "[dataset] no data files given");
  if (paths.size() == 1) return load_dataset(paths[0], options);
  Dataset all;
  for (const std::string& p : paths) {
    Dataset one = load_dataset(p, options);
    all.path += (all.path.empty() ? "" : ", ") + p;
    all.lines += one.lines;
    all.filtered += one.filtered;
    all.truncated += one.truncated;
    for (Example& ex : one.examples) all.examples.push_back(std::move(ex));
  }
  return all;
}

}  // namespace grpo
