// `grpo tokenize`, `grpo detokenize` and `grpo bench tokenize` run as a user runs them: JSONL through
// files, ids and texts equal to the reference cases, errors that name the input line.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/files.h"
#include "tokenizer/byte_tokenizer.h"

namespace grpo {
namespace {

const std::string kTokenizer = std::string(GRPO_SHARED_DIR) + "/models/qwen3-tokenizer";

struct CommandResult {
  int status;
  std::string out, err;
};

class CliTokenize : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("grpo_cli_tokenize_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The byte-level tokenizer of `grpo init`: loads in milliseconds, for tests that need no Qwen3.
  std::string byte_tokenizer() {
    const std::string path = (dir_ / "bytes").string();
    write_byte_tokenizer(path);
    return path;
  }

  // Runs `grpo args` with `input` as the file named INPUT in args.
  CommandResult run(const std::string& args, const std::string& input) {
    const std::string in = (dir_ / "input.jsonl").string(), out = (dir_ / "out").string(),
                      err = (dir_ / "err").string();
    write_file_atomic(in, input);
    std::string command = std::string(GRPO_BINARY) + " " + args + " > " + out + " 2> " + err;
    for (size_t p; (p = command.find("INPUT")) != std::string::npos;) command.replace(p, 5, in);
    const int raw = std::system(command.c_str());
    return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, read_file(out), read_file(err)};
  }

  std::filesystem::path dir_;
};

std::vector<nlohmann::json> lines_of(const std::string& text) {
  std::vector<nlohmann::json> out;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = text.find('\n', pos);
    out.push_back(nlohmann::json::parse(text.substr(pos, end - pos)));
    pos = end == std::string::npos ? text.size() : end + 1;
  }
  return out;
}

std::string reference(const std::string& name) { return read_file(std::string(GRPO_SHARED_DIR) + "/reference/tokenizer/" + name); }

TEST_F(CliTokenize, TokenizeAndDetokenizeReferenceCases) {
  const auto cases = lines_of(reference("qwen3_cases.jsonl"));
  std::string input, ids_input;
  for (const auto& c : cases) {
    input += nlohmann::json{{"text", c["text"]}}.dump() + "\n";
    ids_input += nlohmann::json{{"ids", c["ids"]}}.dump() + "\n";
  }
  const CommandResult tok = run("tokenize --tokenizer " + kTokenizer + " --input INPUT", input);
  ASSERT_EQ(tok.status, 0) << tok.err;
  const auto ids = lines_of(tok.out);
  ASSERT_EQ(ids.size(), cases.size());
  for (size_t k = 0; k < cases.size(); ++k) EXPECT_EQ(ids[k]["ids"], cases[k]["ids"]) << cases[k]["text"];

  const CommandResult detok = run("detokenize --tokenizer " + kTokenizer + " --input INPUT", ids_input);
  ASSERT_EQ(detok.status, 0) << detok.err;
  const auto texts = lines_of(detok.out);
  ASSERT_EQ(texts.size(), cases.size());
  for (size_t k = 0; k < cases.size(); ++k) EXPECT_EQ(texts[k]["text"], cases[k]["decoded"]);
}

TEST_F(CliTokenize, ChatCasesWithPerLineFields) {
  const std::string input = reference("qwen3_chat_cases.jsonl");  // lines carry add_generation_prompt etc.
  const auto cases = lines_of(input);
  const CommandResult r = run("tokenize --chat --tokenizer " + kTokenizer + " --input INPUT", input);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto ids = lines_of(r.out);
  ASSERT_EQ(ids.size(), cases.size());
  for (size_t k = 0; k < cases.size(); ++k) EXPECT_EQ(ids[k]["ids"], cases[k]["ids"]) << "case " << k;
}

TEST_F(CliTokenize, AddGenerationPromptFlagAndLineOverride) {
  const std::string messages = R"("messages": [{"role": "user", "content": "Hi"}])";
  const CommandResult r = run("tokenize --chat --add-generation-prompt --tokenizer " + kTokenizer + " --input INPUT",
                    "{" + messages + "}\n{" + messages + R"(, "add_generation_prompt": false})" + "\n{" + messages +
                        R"(, "enable_thinking": false})" + "\n");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto ids = lines_of(r.out);
  ASSERT_EQ(ids.size(), 3u);
  // <|im_start|>user\nHi<|im_end|>\n = 6 tokens; the prompt adds <|im_start|>assistant\n (3 tokens);
  // enable_thinking false adds an empty think block after it.
  EXPECT_EQ(ids[1]["ids"].size(), 6u);
  EXPECT_EQ(ids[0]["ids"].size(), 9u);
  EXPECT_GT(ids[2]["ids"].size(), 9u);
  EXPECT_EQ(ids[2]["ids"][9], 151667);  // <think>
}

TEST_F(CliTokenize, ErrorsNameTheLine) {
  const std::string bytes = byte_tokenizer();
  CommandResult r = run("tokenize --tokenizer " + bytes + " --input INPUT", "{\"text\": \"ok\"}\n{\"text\": \"bad \xFF\"}\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("input.jsonl:2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not valid UTF-8"), std::string::npos) << r.err;

  r = run("tokenize --tokenizer " + bytes + " --input INPUT", "{\"text\": \"ok\"}\n\n{\"txt\": 1}\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("input.jsonl:3"), std::string::npos) << r.err;

  r = run("detokenize --tokenizer " + bytes + " --input INPUT", "{\"ids\": [1, 2]}\n{\"ids\": [999999]}\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("input.jsonl:2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("999999"), std::string::npos) << r.err;

  r = run("tokenize --chat --tokenizer " + bytes + " --input INPUT", "{\"text\": \"no messages\"}\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("input.jsonl:1"), std::string::npos) << r.err;
}

// A vision-language model folder: the vision byte tokenizer and the reference model's preprocessor
// (min 1024, max 16384 pixels), with the reference pictures next to the input file.
TEST_F(CliTokenize, ChatLinesWithPicturesExpandTheirPads) {
  const std::string model = (dir_ / "vl").string();
  write_byte_tokenizer(model, /*vision=*/true);
  const std::string ref = std::string(GRPO_SHARED_DIR) + "/reference/models/qwen3-vl/";
  std::filesystem::copy_file(ref + "preprocessor_config.json", model + "/preprocessor_config.json");
  std::filesystem::copy_file(ref + "image_a.png", dir_ / "a.png");
  std::filesystem::copy_file(ref + "image_c.png", dir_ / "c.png");
  const std::string line =
      R"({"messages": [{"role": "user", "content": "<image>x<image>"}], "images": ["a.png", "c.png"]})"
      "\n"
      R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "y"}, {"type": "image"}]}], "images": ["a.png"]})"
      "\n"
      R"({"messages": [{"role": "user", "content": "no pictures <image>"}]})"
      "\n";
  const CommandResult r = run("tokenize --chat --tokenizer " + model + " --input INPUT", line);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto out = lines_of(r.out);
  ASSERT_EQ(out.size(), 3u);
  std::vector<int32_t> ids = out[0]["ids"];
  // <|im_start|>user\n <vs> pad x6 <ve> x <vs> pad x2 <ve> <|im_end|>\n
  std::vector<int32_t> want = {257, 'u', 's', 'e', 'r', '\n', kByteVisionStartId};
  want.insert(want.end(), 6, kByteImagePadId);
  want.insert(want.end(), {kByteVisionEndId, 'x', kByteVisionStartId, kByteImagePadId, kByteImagePadId, kByteVisionEndId,
                           258, '\n'});
  EXPECT_EQ(ids, want);
  EXPECT_EQ(out[0]["image_grid_thw"], nlohmann::json::parse("[[1, 4, 6], [1, 2, 4]]"));
  EXPECT_EQ(out[1]["image_grid_thw"], nlohmann::json::parse("[[1, 4, 6]]"));
  EXPECT_FALSE(out[2].contains("image_grid_thw"));
  std::vector<int32_t> literal = out[2]["ids"];
  EXPECT_EQ(std::count(literal.begin(), literal.end(), kByteImagePadId), 0);

  CommandResult bad = run("tokenize --chat --tokenizer " + model + " --input INPUT",
                          line + R"({"messages": [{"role": "user", "content": "<image>"}], "images": []})" "\n");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("input.jsonl:4: 1 image placeholders"), std::string::npos) << bad.err;
  bad = run("tokenize --chat --tokenizer " + model + " --input INPUT",
            R"({"messages": [{"role": "user", "content": "<image>"}], "images": ["nothere.png"]})" "\n");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("input.jsonl:1: images[0]: [image] "), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("nothere.png: cannot open"), std::string::npos) << bad.err;
  bad = run("tokenize --chat --tokenizer " + byte_tokenizer() + " --input INPUT", line);
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("has no preprocessor_config.json"), std::string::npos) << bad.err;
}

TEST_F(CliTokenize, BenchReportsThroughput) {
  std::string text;
  for (const auto& c : lines_of(reference("qwen3_cases.jsonl"))) {
    std::string t = c["text"].get<std::string>();
    for (char& ch : t)
      if (ch == '\n' || ch == '\r') ch = ' ';
    text += t + "\n";
  }
  const CommandResult r = run("bench tokenize --repeat 1 --json --tokenizer " + kTokenizer + " --input INPUT", text);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["tokens"].get<int64_t>(), 1000);
  EXPECT_GT(j["single_seconds"].get<double>(), 0.0);
  EXPECT_GT(j["all_seconds"].get<double>(), 0.0);
  const CommandResult bad = run("bench tokenize --tokenizer " + byte_tokenizer() + " --input INPUT", "fine\nnot \xC3(\n");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("input.jsonl:2"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace grpo
