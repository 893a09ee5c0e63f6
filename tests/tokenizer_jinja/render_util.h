// Test helper: renders a template string with a JSON context (key order kept) through the Jinja engine.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "tokenizer/jinja/json_io.h"
#include "tokenizer/jinja/template.h"

namespace grpo::jinja::testing {

inline std::string render(const std::string& source, const std::string& context_json = "{}") {
  const Template tpl(source, "test_template");
  return tpl.render(from_json(nlohmann::ordered_json::parse(context_json)));
}

// The grpo::Error message of rendering (or parsing) `source`, or "" when it succeeds.
inline std::string render_error(const std::string& source, const std::string& context_json = "{}") {
  try {
    render(source, context_json);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace grpo::jinja::testing
