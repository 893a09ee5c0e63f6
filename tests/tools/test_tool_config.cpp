// verl's tool config YAML: the three kinds of implementation, the schemas as the chat template gets them
// (key order kept), errors naming the file, the tool and the field, and Python tools on the worker pool.
#include <gtest/gtest.h>

#include "error_of.h"
#include "temp_dir.h"
#include "tools/tool_runner.h"

namespace grpo::tools {
namespace {

const char* kConfig = R"(tools:
  - class_name: grpo.tools.Calculator
    config:
      type: native
  - class_name: grpo.tools.CommandTool
    config:
      type: native
      command: "tr a-z A-Z"
    tool_schema:
      type: function
      function:
        name: shout
        description: Upper-cases a text.
        parameters:
          type: object
          properties:
            text:
              type: string
              description: The text.
            times:
              type: integer
          required: ["text"]
  - class_name: grpo.tools.PythonTool
    config:
      path: PY
      function: lookup
      workers: 2
    tool_schema:
      type: function
      function:
        name: lookup
        description: Looks a word up.
        parameters:
          type: object
          properties:
            word: {type: string}
          required: [word]
)";

const char* kPython = R"(import os
import time
def lookup(word):
    if word == "die":
        os._exit(3)
    if word == "boom":
        raise ValueError("no such word: boom")
    if word == "hang":
        time.sleep(60)
    if word == "long":
        return "x" * 5000
    if word == "dict":
        return {"word": word, "n": 2}
    return "definition of " + word
)";

std::string with_python(const test::TempDir& dir) {
  std::string config = kConfig;
  config.replace(config.find("PY"), 2, dir.write("tools.py", kPython));
  return dir.write("tools.yaml", config);
}

TEST(ToolConfig, LoadsTheThreeKindsWithTheirSchemasInOrder) {
  test::TempDir dir;
  const ToolSet set = ToolSet::load(with_python(dir));
  ASSERT_EQ(set.size(), 3u);
  EXPECT_EQ(set.names(), "calculator, shout, lookup");
  const auto tools = set.template_tools();
  EXPECT_EQ(tools[0], calculator_schema());
  // The config's key order is kept, as transformers prints a schema.
  EXPECT_EQ(tools[1].dump(),
            R"({"type":"function","function":{"name":"shout","description":"Upper-cases a text.","parameters":{"type":"object","properties":{"text":{"type":"string","description":"The text."},"times":{"type":"integer"}},"required":["text"]}}})");
  EXPECT_EQ(set.schemas().size(), 3u);
  EXPECT_EQ(set.schemas()[2]["function"]["name"], "lookup");
}

TEST(ToolConfig, RunsCommandAndPythonTools) {
  test::TempDir dir;
  ToolRunnerOptions o;
  o.timeout_s = 3;
  o.max_tool_response_length = 100;
  o.max_tool_output_bytes = 1000;
  ToolRunner runner(ToolSet::load(with_python(dir)), o);
  const auto r = runner.run_turn(format_tool_call({"shout", {{"text", "hello"}}}) +
                                 format_tool_call({"lookup", {{"word", "cat"}}}) +
                                 format_tool_call({"lookup", {{"word", "boom"}}}) +
                                 format_tool_call({"lookup", {{"word", "dict"}}}) +
                                 format_tool_call({"lookup", {{"word", "long"}}}) +
                                 format_tool_call({"lookup", {{"wort", "cat"}}}))
                     .get();
  ASSERT_EQ(r.size(), 6u);
  EXPECT_EQ(r[0].text, "{\"TEXT\":\"HELLO\"}\n");
  EXPECT_EQ(r[1].failure, ToolFailure::None);
  EXPECT_EQ(r[1].text, "definition of cat");
  EXPECT_EQ(r[2].failure, ToolFailure::ToolError);
  EXPECT_EQ(r[2].text, "Error when executing tool: ValueError: no such word: boom");
  EXPECT_EQ(r[3].text, "{\"word\": \"dict\", \"n\": 2}");
  EXPECT_EQ(r[4].failure, ToolFailure::OutputTooLong);
  EXPECT_EQ(r[5].failure, ToolFailure::BadArguments);
  // A hang is cut off; the worker is restarted and the next call works.
  const auto hang = runner.run_call({"lookup", {{"word", "hang"}}});
  EXPECT_EQ(hang.failure, ToolFailure::Timeout);
  EXPECT_EQ(hang.text, "Error when executing tool: lookup timed out after 3 s");
  EXPECT_EQ(runner.run_call({"lookup", {{"word", "dog"}}}).text, "definition of dog");
  // A worker that dies is a crash; the next call gets a fresh one.
  const auto died = runner.run_call({"lookup", {{"word", "die"}}});
  EXPECT_EQ(died.failure, ToolFailure::Crashed);
  EXPECT_EQ(died.text, "Error when executing tool: lookup: the Python worker died");
  EXPECT_EQ(runner.run_call({"lookup", {{"word", "cat"}}}).text, "definition of cat");
}

TEST(ToolConfig, ErrorsNameTheFileTheToolAndTheField) {
  test::TempDir dir;
  auto error = [&](const std::string& yaml) { return test::error_of([&] { ToolSet::load(dir.write("t.yaml", yaml)); }); };
  const std::string file = dir.path() + "/t.yaml";
  EXPECT_NE(test::error_of([&] { ToolSet::load(dir.path() + "/none.yaml"); }).find("no such file"), std::string::npos);
  EXPECT_NE(error("tools: [").find("not valid YAML"), std::string::npos);
  EXPECT_NE(error("tool: []").find("expected a mapping with a list `tools:"), std::string::npos);
  EXPECT_NE(error("tools: []").find("`tools` is empty"), std::string::npos);
  EXPECT_EQ(error("tools:\n  - config: {}\n"),
            cat("[tools] ", file, ": tools[0]: class_name is missing (one of grpo.tools.Calculator, "
                "grpo.tools.CommandTool, grpo.tools.PythonTool)"));
  EXPECT_NE(error("tools:\n  - class_name: verl.tools.gsm8k_tool.Gsm8kTool\n    tool_schema: {}\n")
                .find("tools[0]: class_name \"verl.tools.gsm8k_tool.Gsm8kTool\" is not one of ours"),
            std::string::npos);
  EXPECT_NE(error("tools:\n  - class_name: grpo.tools.Calculator\n    schema: {}\n").find("unknown key \"schema\""),
            std::string::npos);
  EXPECT_NE(error("tools:\n  - class_name: grpo.tools.Calculator\n    config: {precision: 3}\n")
                .find("config.precision is not a setting of grpo.tools.Calculator"),
            std::string::npos);
  const std::string schema = "    tool_schema: {type: function, function: {name: f, parameters: {type: object}}}\n";
  EXPECT_NE(error("tools:\n  - class_name: grpo.tools.CommandTool\n" + schema).find("tools[0] (f): config.command is missing"),
            std::string::npos);
  EXPECT_NE(error("tools:\n  - class_name: grpo.tools.CommandTool\n    config: {command: cat}\n")
                .find("tool_schema is missing"),
            std::string::npos);
  EXPECT_NE(error("tools:\n  - class_name: grpo.tools.CommandTool\n    config: {command: cat}\n"
                  "    tool_schema: {type: function, function: {description: x}}\n")
                .find("tool_schema.function.name must be a non-empty string"),
            std::string::npos);
  EXPECT_NE(error("tools:\n  - class_name: grpo.tools.CommandTool\n    config: {command: cat}\n"
                  "    tool_schema: {type: function, function: {name: f, parameters: {type: object, properties: "
                  "{a: {type: str}}}}}\n")
                .find("properties.a.type: unknown type \"str\""),
            std::string::npos);
  EXPECT_NE(error("tools:\n  - class_name: grpo.tools.CommandTool\n    config: {command: cat}\n"
                  "    tool_schema: {type: function, function: {name: f, parameters: {type: object, required: [a]}}}\n")
                .find("required names \"a\", which is not one of its properties"),
            std::string::npos);
  EXPECT_NE(error("tools:\n  - class_name: grpo.tools.PythonTool\n    config: {path: missing.py}\n" + schema)
                .find("config.path: missing.py is not a file"),
            std::string::npos);
  EXPECT_NE(error("tools:\n  - class_name: grpo.tools.Calculator\n  - class_name: grpo.tools.Calculator\n")
                .find("two tools are named \"calculator\""),
            std::string::npos);
  EXPECT_NE(test::error_of([] { ToolSet::builtin({"search"}); }).find("unknown built-in tool \"search\""),
            std::string::npos);
}

}  // namespace
}  // namespace grpo::tools
