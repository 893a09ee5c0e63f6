// JSONL prompt datasets (see dataset.h).
#include "grpo/dataset.h"

#include "core/error.h"
#include "core/files.h"

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

void check_messages(const nlohmann::json& messages, const std::string& where) {
  GRPO_CHECK(messages.is_array() && !messages.empty(), where,
             ": \"messages\" must be a non-empty array of {role, content}, got ", messages.type_name());
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto& m = messages[i];
    GRPO_CHECK(m.is_object(), where, ": messages[", i, "] must be an object {role, content}");
    GRPO_CHECK(m.contains("role") && m["role"].is_string(), where, ": messages[", i, "] needs a string \"role\"");
    GRPO_CHECK(m.contains("content") && m["content"].is_string(), where, ": messages[", i,
               "] needs a string \"content\"");
  }
}

}  // namespace

Example parse_example(const std::string& line, const std::string& where, bool require_response) {
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
  if (has_prompt) {
    ex.prompt = text_field(j, "prompt", where);
    GRPO_CHECK(!ex.prompt.empty(), where, ": \"prompt\" is empty");
  } else {
    check_messages(j["messages"], where);
    ex.messages = j["messages"];
  }
  GRPO_CHECK(j.contains("answer"), where, ": needs \"answer\"");
  const auto& answer = j["answer"];
  GRPO_CHECK(answer.is_string() || answer.is_number(), where, ": \"answer\" must be a string or a number, got ",
             answer.type_name());
  ex.answer = answer.is_string() ? answer.get<std::string>() : answer.dump();
  if (j.contains("id")) {
    GRPO_CHECK(j["id"].is_string() || j["id"].is_number_integer(), where,
               ": \"id\" must be a string or an integer, got ", j["id"].type_name());
    ex.id = j["id"].is_string() ? j["id"].get<std::string>() : j["id"].dump();
  }
  if (j.contains("response")) ex.response = text_field(j, "response", where);
  GRPO_CHECK(!require_response || !ex.response.empty(), where,
             ": needs a non-empty \"response\" (the target text for supervised fine-tuning)");
  ex.extra = nlohmann::json::object();
  for (const auto& [k, v] : j.items())
    if (k != "prompt" && k != "messages" && k != "answer" && k != "id" && k != "response") ex.extra[k] = v;
  return ex;
}

Dataset load_dataset(const std::string& path, const DatasetOptions& options) {
  GRPO_CHECK(options.max_prompt_length >= 0, "[dataset] max_prompt_length must be >= 0, got ",
             options.max_prompt_length);
  Dataset ds;
  ds.path = path;
  for_each_line(path, [&](int64_t line_no, const std::string& line) {
    if (line.find_first_not_of(" \t") == std::string::npos) return;  // blank lines separate nothing
    ++ds.lines;
    const std::string where = cat("[dataset] ", path, ":", line_no);
    Example ex = parse_example(line, where, options.require_response);
    ex.line = line_no;
    if (ex.id.empty()) ex.id = std::to_string(line_no);
    if (options.encode_prompt) {
      ex.prompt_ids = options.encode_prompt(ex);
      const auto limit = static_cast<size_t>(options.max_prompt_length);
      if (limit > 0 && ex.prompt_ids.size() > limit) {
        switch (options.overflow) {
          case PromptOverflow::Filter: ++ds.filtered; return;
          case PromptOverflow::TruncateLeft:
            ex.prompt_ids.erase(ex.prompt_ids.begin(), ex.prompt_ids.end() - static_cast<ptrdiff_t>(limit));
            ++ds.truncated;
            break;
          case PromptOverflow::TruncateRight:
            ex.prompt_ids.resize(limit);
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
  return ds;
}

}  // namespace grpo
