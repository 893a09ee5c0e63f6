// The generate library called directly on a `grpo init` tiny model (byte tokenizer): a prompt line becomes
// the request the engine runs (tokens of the text or of the chat template, the line's overrides over the
// command line's), a bad field is an error naming it, a line too long for the context names its field, and
// run_generate writes the good lines' completions, skips the bad one and throws naming the count; greedy
// completions of a line do not depend on the other lines of the file.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.h"
#include "generate/generate_file.h"
#include "generate/loaded_model.h"
#include "generate/prompt_line.h"
#include "temp_dir.h"
#include "test_util.h"

namespace grpo::generate {
namespace {

class GenerateLib : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<test::TempDir>();
    const test::CommandResult r = test::run_grpo("init --arch qwen3 --preset tiny --seed 1 --out " + model());
    ASSERT_EQ(r.status, 0) << r.output;
    loaded_ = std::make_unique<LoadedModel>(load_model(model(), "", "f32", 16, ""));
  }
  static void TearDownTestSuite() {
    loaded_.reset();
    dir_.reset();
  }
  static std::string model() { return dir_->path() + "/model"; }

  rollout::Request request(const std::string& line, bool chat = false) {
    const LineContext c{.defaults = defaults_,
                        .tok = loaded_->tokenizer(),
                        .no_tokenizer = loaded_->no_tokenizer,
                        .chat = chat,
                        .vocab = loaded_->model->vocab_size(),
                        .context = loaded_->model->max_positions(),
                        .images = nullptr,
                        .prompts_path = prompts_path_,
                        .image_pad = -1};
    return request_of(parse_line(line), c, 7);
  }
  std::string error_of(const std::string& line) {
    try {
      request(line);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "(no error)";
  }

  static std::unique_ptr<test::TempDir> dir_;
  static std::unique_ptr<LoadedModel> loaded_;
  rollout::Request defaults_ = request_defaults(GenerateOptions{});
  std::string prompts_path_ = "prompts.jsonl";
};
std::unique_ptr<test::TempDir> GenerateLib::dir_;
std::unique_ptr<LoadedModel> GenerateLib::loaded_;

TEST_F(GenerateLib, LineBecomesTheEngineRequest) {
  const rollout::Request r = request(R"({"prompt": "ab", "n": 3, "temperature": 0, "top_k": 5, "stop": "x"})");
  EXPECT_EQ(r.prompt, loaded_->tok->encode("ab"));
  EXPECT_EQ(r.n, 3);
  EXPECT_EQ(r.sampling.temperature, 0.0f);
  EXPECT_EQ(r.sampling.top_k, 5);
  EXPECT_EQ(r.max_new_tokens, 256);  // the command line's default, not overridden
  EXPECT_EQ(r.stop_strings, std::vector<std::string>{"x"});
  EXPECT_EQ(r.id, 7u);  // the line number keys the RNG

  const rollout::Request chat = request(R"({"messages": [{"role": "user", "content": "hi"}]})", true);
  const std::string text = loaded_->tok->decode(chat.prompt, false);
  EXPECT_TRUE(test::contains(text, "<|im_start|>user\nhi<|im_end|>")) << text;
  EXPECT_TRUE(test::contains(text, "<|im_start|>assistant\n")) << text;
}

TEST_F(GenerateLib, BadFieldsAreNamed) {
  EXPECT_TRUE(test::contains(error_of(R"({"prompt": "a", "n": 0})"), "field \"n\" must be an integer in [1,"));
  EXPECT_TRUE(test::contains(error_of(R"({"prompt": "a", "top_p": "nan"})"), "field \"top_p\" must be a number"));
  EXPECT_TRUE(test::contains(error_of(R"({"prompt": "a", "stop": ""})"), "a stop string must not be empty"));
  EXPECT_TRUE(test::contains(error_of(R"({"text": "a"})"), "expected a field \"prompt\", \"messages\""));
  EXPECT_TRUE(test::contains(error_of(R"({"messages": []})"), "\"messages\" needs --chat"));
  EXPECT_TRUE(test::contains(error_of(R"({"input_ids": [1, 100000]})"), "ids must be integers in [0,"));
  EXPECT_TRUE(test::contains(error_of(R"({"prompt": "a", "max_new_tokens": 1000000})"),
                             "field \"prompt\": the prompt's 1 tokens + max_new_tokens 1000000 exceed the model's"));
  EXPECT_TRUE(test::contains(error_of("{\"prompt\": "), "not valid JSON"));
}

TEST_F(GenerateLib, FileSkipsBadLinesAndKeepsEachLinesCompletions) {
  const test::TempDir d;
  const std::string one = d.write("one.jsonl", "{\"prompt\": \"hello\", \"temperature\": 0, \"max_new_tokens\": 8}\n");
  const std::string many = d.write("many.jsonl",
                                   "{\"prompt\": \"zz\", \"max_new_tokens\": 5}\n"
                                   "{\"prompt\": \"hello\", \"temperature\": 0, \"max_new_tokens\": 8}\n"
                                   "{\"prompt\": \"q\", \"n\": \"two\"}\n");
  GenerateOptions o;
  o.model = model();
  o.kv_bytes = 1 << 22;
  o.prompts = one;
  o.out = d.path() + "/one.out";
  const MakeTools no_tools = [](const Tokenizer&) -> GenerateTools { throw std::logic_error("no tools asked for"); };
  run_generate(o, no_tools);
  o.prompts = many;
  o.out = d.path() + "/many.out";
  try {
    run_generate(o, no_tools);
    ADD_FAILURE() << "a bad line must make run_generate throw";
  } catch (const std::exception& e) {
    EXPECT_TRUE(test::contains(e.what(), "1 line(s) of")) << e.what();
  }
  const auto alone = test::read_jsonl(d.path() + "/one.out"), among = test::read_jsonl(d.path() + "/many.out");
  ASSERT_EQ(alone.size(), 1u);
  ASSERT_EQ(among.size(), 2u);
  EXPECT_EQ(among[1]["prompt"], "hello");
  EXPECT_EQ(among[1]["completions"][0]["token_ids"], alone[0]["completions"][0]["token_ids"]);
  EXPECT_FALSE(alone[0]["completions"][0]["token_ids"].empty());
}

}  // namespace
}  // namespace grpo::generate
