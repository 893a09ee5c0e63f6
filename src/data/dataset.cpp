// JSONL prompt datasets (see dataset.h).
#include "data/dataset.h"

#include <cctype>
#include <fstream>

#include "core/error.h"
#include "core/files.h"
#include "data/vision_data.h"

namespace grpo {

PromptOverflow prompt_overflow_from_config(bool filter_overlong_prompts, const std::string& truncation) {
  if (filter_overlong_prompts) return PromptOverflow::Filter;
  if (truncation == "left") return PromptOverflow::TruncateLeft;
  if (truncation == "right") return PromptOverflow::TruncateRight;
  if (truncation == "error") return PromptOverflow::Error;
  fail("[dataset] data.truncation \"", truncation, "\": expected error, left or right");
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

// `key`: "messages", or "prompt" for verl's rows.
void check_messages(const nlohmann::json& messages, const char* key, const std::string& where) {
  GRPO_CHECK(messages.is_array() && !messages.empty(), where, ": \"", key,
             "\" must be a non-empty array of {role, content}, got ", messages.type_name());
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto& m = messages[i];
    GRPO_CHECK(m.is_object(), where, ": ", key, "[", i, "] must be an object {role, content}");
    GRPO_CHECK(m.contains("role") && m["role"].is_string(), where, ": ", key, "[", i, "] needs a string \"role\"");
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

// Parquet (by name, or by its "PAR1" magic): no Arrow/Parquet library in Debian 12, so the message says how
// to convert the file once.
void refuse_parquet(const std::string& path) {
  bool parquet = ends_with_icase(path, ".parquet");
  if (!parquet && path != "-") {
    std::ifstream f(path, std::ios::binary);
    char magic[4] = {};
    parquet = f.read(magic, 4) && std::string(magic, 4) == "PAR1";
  }
  if (!parquet) return;
  std::string jsonl = ends_with_icase(path, ".parquet") ? path.substr(0, path.size() - 8) + ".jsonl" : path + ".jsonl";
  fail("[dataset] ", path, ": Parquet files cannot be read (no Parquet library in Debian 12); convert it to JSONL "
       "once, e.g.\n  python3 -c \"import pandas as pd; pd.read_parquet('", path, "').to_json('", jsonl,
       "', orient='records', lines=True, force_ascii=False)\"\nand set the path to ", jsonl,
       " (verl's rows load unchanged)");
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
  }
  ex.answer = answer_of(j, where);
  ex.id = id_of(j, where);
  if (j.contains("data_source")) ex.data_source = text_field(j, "data_source", where);
  if (j.contains("response")) ex.response = text_field(j, "response", where);
  GRPO_CHECK(!require_response || !ex.response.empty(), where,
             ": needs a non-empty \"response\" (the target text for supervised fine-tuning)");
  if (j.contains(image_key) && !j[image_key].is_null()) {
    ex.has_image_key = true;
    ex.images = image_paths(j[image_key], image_key, where);
    const int64_t placeholders = count_image_placeholders(ex);
    GRPO_CHECK(placeholders == static_cast<int64_t>(ex.images.size()), where, ": ", placeholders,
               " image placeholder", placeholders == 1 ? "" : "s", " (\"", kImagePlaceholder,
               "\" in the text or {\"type\": \"image\"} items) but ", ex.images.size(), " picture",
               ex.images.size() == 1 ? "" : "s", " in \"", image_key, "\"");
  }
  ex.extra = nlohmann::json::object();
  for (const auto& [k, v] : j.items())
    if (k != "prompt" && k != "messages" && k != "answer" && k != "reward_model" && k != "id" &&
        k != "data_source" && k != "response" && k != image_key)
      ex.extra[k] = v;
  return ex;
}

Dataset load_dataset(const std::string& path, const DatasetOptions& options) {
  GRPO_CHECK(options.max_prompt_length >= 0, "[dataset] max_prompt_length must be >= 0, got ",
             options.max_prompt_length);
  refuse_parquet(path);
  Dataset ds;
  ds.path = path;
  for_each_line(path, [&](int64_t line_no, const std::string& line) {
    if (line.find_first_not_of(" \t") == std::string::npos) return;  // blank lines separate nothing
    ++ds.lines;
    const std::string where = cat("[dataset] ", path, ":", line_no);
    Example ex = parse_example(line, where, options.require_response, options.image_key);
    ex.line = line_no;
    if (ex.id.empty()) ex.id = std::to_string(line_no);
    if (!ex.images.empty()) {
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
  });
  GRPO_CHECK(ds.lines > 0, "[dataset] ", path, ": no examples (the file is empty)");
  GRPO_CHECK(!ds.examples.empty(), "[dataset] ", path, ": all ", ds.lines, " prompts are longer than ",
             options.max_prompt_length, " tokens and were filtered out; raise data.max_prompt_length, or set "
             "data.filter_overlong_prompts: false with data.truncation: left or right");
  return ds;
}

}  // namespace grpo
