// The Qwen3 chat template renders every reference conversation exactly as transformers does
// (shared/reference/tokenizer/qwen3_chat_cases.jsonl, rendered by Jinja2 3.1 the way transformers sets it up).
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "core/files.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/jinja/chat_context.h"
#include "tokenizer/jinja/json_io.h"
#include "tokenizer/jinja/template.h"

using namespace grpo;

namespace {

std::string qwen3_template() {
  const auto config = nlohmann::ordered_json::parse(read_file(GRPO_SHARED_DIR "/models/qwen3-tokenizer/tokenizer_config.json"));
  return config.at("chat_template").get<std::string>();
}

std::vector<nlohmann::ordered_json> reference_cases() {
  std::vector<nlohmann::ordered_json> cases;
  for_each_line(GRPO_SHARED_DIR "/reference/tokenizer/qwen3_chat_cases.jsonl", [&](int64_t, const std::string& line) {
    if (!line.empty()) cases.push_back(nlohmann::ordered_json::parse(line));
  });
  return cases;
}

// The context exactly as the reference generator passed it, with key order kept.
jinja::Value context_of(const nlohmann::ordered_json& c) {
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  if (c.contains("enable_thinking")) extra["enable_thinking"] = c["enable_thinking"];
  extra["eos_token"] = "<|im_end|>";
  return jinja::chat_context(jinja::from_json(c.at("messages")),
                             c.contains("tools") ? jinja::from_json(c["tools"]) : jinja::Value::none(),
                             c.at("add_generation_prompt").get<bool>(), jinja::from_json(extra));
}

}  // namespace

TEST(Qwen3Reference, EveryCaseRendersExactly) {
  const std::string source = qwen3_template();
  const auto cases = reference_cases();
  ASSERT_GE(cases.size(), 7u);
  const auto tpl = jinja::cached_template(source, "qwen3");
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(tpl->render(context_of(cases[i])), cases[i].at("rendered").get<std::string>()) << "case " << i;
  }
}

// The public entry point takes nlohmann::json (keys sorted), so it matches wherever key order cannot show:
// every case without tool schemas.
TEST(Qwen3Reference, RenderChatTemplateMatchesCasesWithoutTools) {
  const std::string source = qwen3_template();
  int checked = 0;
  for (const auto& c : reference_cases()) {
    if (c.contains("tools")) continue;
    ChatTemplateInput input;
    input.messages = nlohmann::json::parse(c.at("messages").dump());
    input.add_generation_prompt = c.at("add_generation_prompt").get<bool>();
    if (c.contains("enable_thinking")) input.extra["enable_thinking"] = c["enable_thinking"].get<bool>();
    EXPECT_EQ(render_chat_template(source, input, "qwen3"), c.at("rendered").get<std::string>());
    ++checked;
  }
  EXPECT_GE(checked, 6);
}

TEST(Qwen3Reference, OrderedEntryPointKeepsToolSchemaKeyOrder) {
  const auto cases = reference_cases();
  const auto it = std::find_if(cases.begin(), cases.end(), [](const auto& c) { return c.contains("tools"); });
  ASSERT_NE(it, cases.end());
  const std::string rendered = jinja::render_chat(qwen3_template(), it->at("messages"), it->at("tools"),
                                                  it->at("add_generation_prompt").get<bool>(), nullptr, "qwen3");
  EXPECT_EQ(rendered, it->at("rendered").get<std::string>());
  EXPECT_NE(rendered.find(R"({"type": "function", "function": {"name": "get_weather")"), std::string::npos);
}

TEST(Qwen3Reference, ParsedOnceAndRenderedFast) {
  const std::string source = qwen3_template();
  const auto cases = reference_cases();
  EXPECT_EQ(jinja::cached_template(source, "qwen3").get(), jinja::cached_template(source, "qwen3").get());
  const jinja::Value context = context_of(cases.back());
  const auto tpl = jinja::cached_template(source, "qwen3");
  const int reps = 200;
  const auto start = std::chrono::steady_clock::now();
  size_t total = 0;
  for (int i = 0; i < reps; ++i) total += tpl->render(context).size();
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / reps;
  EXPECT_GT(total, 0u);
  // Generous bound (sanitizer builds are ~10x slower): a render is a few microseconds in Release.
  EXPECT_LT(us, 5000.0) << "render took " << us << " us";
}
