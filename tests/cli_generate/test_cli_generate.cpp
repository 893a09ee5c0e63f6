// `grpo generate` through the built binary (GRPO_BINARY) on a `grpo init` tiny model with the byte tokenizer:
// a bad prompt line (invalid JSON, a missing field or one of the wrong type, a per-line sampling override out
// of range, a prompt longer than the context or the KV cache) is reported naming file:line and the field and
// skipped while the good lines are still generated (per-line n honoured, other fields echoed) and the exit
// status is non-zero; an invalid option fails before the model is loaded, naming the option, and writes
// nothing; greedy results do not depend on the other lines of the file or on the thread count. A model folder
// without tokenizer.json generates "input_ids" lines (ids in, ids out) and refuses what needs text.
// `grpo bench rollout` pairs each round's bandwidth with its own single-sequence decode and reports medians.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.h"
#include "core/files.h"
#include "temp_dir.h"
#include "test_util.h"

namespace grpo {
namespace {

using grpo::test::read_jsonl;

using nlohmann::json;

using test::CommandResult;

// Runs `grpo args`, stdout discarded (--out writes files), stderr captured in `output`.
CommandResult run(const std::string& args) { return test::run_grpo(args, "2>&1 >/dev/null"); }

// The stderr lines "error: PATH:LINE: ..." by line number.
std::map<int, std::string> errors_by_line(const std::string& err, const std::string& path) {
  std::map<int, std::string> out;
  std::istringstream in(err);
  const std::string prefix = "error: " + path + ":";
  for (std::string l; std::getline(in, l);) {
    const size_t at = l.find(prefix);
    if (at != std::string::npos) out[std::stoi(l.substr(at + prefix.size()))] += l;
  }
  return out;
}

class CliGenerate : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_dir_ = std::make_unique<test::TempDir>();
    const CommandResult r = run("init --arch qwen3 --preset tiny --seed 1 --out " + model());
    ASSERT_EQ(r.status, 0) << r.output;
  }
  static void TearDownTestSuite() { model_dir_.reset(); }
  static std::string model() { return model_dir_->path() + "/model"; }

  // `grpo generate` of `text` (written to prompts()) into out(), with a small KV cache (fast to set up).
  CommandResult generate(const std::string& text, const std::string& options, int64_t kv_bytes = 4000000) {
    dir_.write("prompts.jsonl", text);
    return run("generate --model " + model() + " --prompts " + prompts() + " --out " + out() + " --kv-cache-memory " +
               std::to_string(kv_bytes) + " " + options);
  }
  std::string prompts() const { return dir_.path() + "/prompts.jsonl"; }
  std::string out() const { return dir_.path() + "/out.jsonl"; }

  static std::unique_ptr<test::TempDir> model_dir_;
  test::TempDir dir_;
};

std::unique_ptr<test::TempDir> CliGenerate::model_dir_;

void expect_completions(const json& line, size_t n, size_t max_new_tokens) {
  ASSERT_TRUE(line.contains("completions")) << line.dump();
  ASSERT_EQ(line["completions"].size(), n) << line.dump();
  for (const json& c : line["completions"]) {
    EXPECT_TRUE(c["finish_reason"] == "stop" || c["finish_reason"] == "length") << c.dump();
    EXPECT_TRUE(c["text"].is_string());
    EXPECT_EQ(c["token_ids"].size(), c["logprobs"].size()) << c.dump();
    EXPECT_GE(c["token_ids"].size(), 1u);
    EXPECT_LE(c["token_ids"].size(), max_new_tokens);
  }
}

TEST_F(CliGenerate, BadLinesAreNamedAndSkippedTheRestIsGenerated) {
  const std::string long_prompt(4100, 'x');  // the tiny preset's context is 4096 tokens, one byte a token
  const std::vector<std::pair<std::string, std::string>> lines = {
      {R"({"prompt": "good one", "tag": "a"})", ""},
      {R"(not json)", "not valid JSON"},
      {R"([1, 2, 3])", "expected a JSON object"},
      {R"({"text": "neither"})", "expected a field \"prompt\", \"messages\" or \"input_ids\""},
      {R"({"input_ids": [1, 2, 384]})", "field \"input_ids\""},
      {R"({"messages": [{"role": "user", "content": "hi"}]})", "field \"messages\" needs --chat"},
      {R"({"prompt": [{"role": "user", "content": "hi"}]})", "field \"prompt\" needs --chat"},  // verl's row
      {R"({"prompt": 7})", "field \"prompt\" must be a string or a list of chat messages"},
      {R"({"prompt": ")" + long_prompt + R"("})", "field \"prompt\": the prompt's 4100 tokens"},
      {R"({"prompt": "n zero", "n": 0})", "field \"n\""},
      {R"({"prompt": "negative", "temperature": -0.5})", "field \"temperature\": temperature must be"},
      {R"({"prompt": "string", "top_p": "nan"})", "field \"top_p\" must be a number"},
      {R"({"prompt": "above one", "top_p": 1.5})", "field \"top_p\": top_p must be in (0, 1]"},
      {R"({"input_ids": [10, 20, 30], "n": 3, "extra": {"k": [1]}})", ""},
      {"", ""},  // blank: ignored
      {R"({"prompt": "float n", "max_new_tokens": 2.5})", "field \"max_new_tokens\" must be an integer"},
      {R"({"prompt": "stop type", "stop": [5]})", "field \"stop\""},
      {R"({"prompt": "negative seed", "seed": -1})", "field \"seed\""},
      {R"({"prompt": "negative k", "top_k": -3})", "field \"top_k\": top_k must be >= 0"},
      {R"({"prompt": ""})", "field \"prompt\": the prompt is empty"},
      {R"({"prompt": "good three", "n": 2, "temperature": 0.7, "top_k": 5, "seed": 9, "stop": "zz"})", ""},
  };
  std::string text;
  for (const auto& [line, error] : lines) text += line + "\n";
  const CommandResult r = generate(text, "--max-new-tokens 6");
  EXPECT_NE(r.status, 0);
  const std::map<int, std::string> errors = errors_by_line(r.output, prompts());
  for (size_t i = 0; i < lines.size(); ++i) {
    const int line = static_cast<int>(i) + 1;
    if (lines[i].second.empty()) {
      EXPECT_EQ(errors.count(line), 0u) << "line " << line << ": " << r.output;
    } else {
      ASSERT_EQ(errors.count(line), 1u) << "line " << line << ": " << r.output;
      EXPECT_NE(errors.at(line).find(lines[i].second), std::string::npos) << errors.at(line);
      EXPECT_NE(errors.at(line).find("(line skipped)"), std::string::npos) << errors.at(line);
    }
  }
  EXPECT_NE(r.output.find("17 line(s) of"), std::string::npos) << r.output;
  EXPECT_NE(errors.at(9).find("context of 4096 tokens"), std::string::npos) << errors.at(9);

  const std::vector<json> got = read_jsonl(out());
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0]["prompt"], "good one");
  EXPECT_EQ(got[0]["tag"], "a");
  expect_completions(got[0], 1, 6);
  EXPECT_EQ(got[1]["extra"], json({{"k", {1}}}));
  expect_completions(got[1], 3, 6);
  EXPECT_EQ(got[2]["prompt"], "good three");
  expect_completions(got[2], 2, 6);
}

TEST_F(CliGenerate, PerLineMaxNewTokensIsCheckedAgainstContextAndKvCache) {
  const CommandResult r = generate(R"({"prompt": "short", "max_new_tokens": 4092})" "\n"
                                   R"({"prompt": "fits", "max_new_tokens": 3})" "\n"
                                   R"({"prompt": "kv", "max_new_tokens": 3000})" "\n",
                                   "", 1000000);
  EXPECT_NE(r.status, 0);
  const std::map<int, std::string> errors = errors_by_line(r.output, prompts());
  ASSERT_EQ(errors.size(), 2u) << r.output;
  EXPECT_NE(errors.at(1).find("5 tokens + max_new_tokens 4092 exceed the model's context"), std::string::npos)
      << errors.at(1);
  EXPECT_NE(errors.at(3).find("KV blocks"), std::string::npos) << errors.at(3);
  const std::vector<json> got = read_jsonl(out());
  ASSERT_EQ(got.size(), 1u);
  expect_completions(got[0], 1, 3);
}

TEST_F(CliGenerate, InvalidOptionsFailBeforeLoadingTheModel) {
  dir_.write("prompts.jsonl", "{\"prompt\": \"hi\"}\n");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--n 0", "--n must be >= 1, got 0"},
      {"--max-new-tokens 0", "--max-new-tokens must be >= 1, got 0"},
      {"--temperature -1", "--temperature: temperature must be a finite number >= 0, got -1"},
      {"--temperature nan", "--temperature: temperature must be a finite number >= 0, got nan"},
      {"--top-p 1.5", "--top-p: top_p must be in (0, 1], got 1.5"},
      {"--top-k -3", "--top-k: top_k must be >= 0"},
      {"--min-p nan", "--min-p: min_p must be in [0, 1], got nan"},
      {"--seed -1", "--seed must be >= 0"},
      {"--stop ''", "--stop: a stop string must not be empty"},
      {"--kv-cache-fraction 0", "--kv-cache-fraction must be in (0, 1]"},
      {"--threads -1", "--threads must be >= 0"},
  };
  for (const auto& [option, message] : cases) {
    // A model folder that does not exist: the option's error must come first.
    const CommandResult r =
        run("generate --model " + dir_.path() + "/no-model --prompts " + prompts() + " --out " + out() + " " + option);
    EXPECT_NE(r.status, 0) << option;
    EXPECT_NE(r.output.find(message), std::string::npos) << option << ": " << r.output;
    EXPECT_EQ(r.output.find("no-model"), std::string::npos) << option << ": " << r.output;
    EXPECT_FALSE(std::filesystem::exists(out())) << option;
  }
}

// The "completions" of output line i of the JSONL file at path (null when there is no such line).
json completions_of(const std::string& path, size_t i) {
  const std::vector<json> out = read_jsonl(path);
  return i < out.size() ? out[i]["completions"] : json();
}

// The target prompt among others of other lengths and n (so that the batches differ from its own).
const std::string kTarget = R"({"prompt": "The answer is"})";
const std::string kMixed = R"({"prompt": "a much longer prompt than the others, to change the batch", "n": 3})"
                           "\n" R"({"input_ids": [7, 8, 9]})" "\n" +
                           kTarget + "\n" + R"({"prompt": "z", "n": 2})" + "\n";
const std::string kGreedy = "--temperature 0 --max-new-tokens 12 ";

// Greedy tokens and log-probs, bitwise, for bf16 (the default) and f32 weights and the three KV dtypes, and
// sampled ones too (each sample's RNG is keyed by the seed, its line and its index; the line is the same).
TEST_F(CliGenerate, ResultsDoNotDependOnTheOtherLines) {
  for (const std::string& opts : {kGreedy, kGreedy + "--dtype f32 ", kGreedy + "--kv-dtype f32 ",
                                 kGreedy + "--kv-dtype int8 ", std::string("--temperature 1 --max-new-tokens 12 ")}) {
    SCOPED_TRACE(opts);
    const std::string padded = "{}\n{}\n" + kTarget + "\n";  // two skipped lines: the target stays line 3
    CommandResult r = generate(padded, opts);
    const json alone = completions_of(out(), 0);
    ASSERT_FALSE(alone.is_null()) << r.output;
    r = generate(kMixed, opts);
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(completions_of(out(), 2), alone);
  }
}

TEST_F(CliGenerate, GreedyDoesNotDependOnTheThreadCount) {
  CommandResult r = generate(kMixed, kGreedy + "--threads 1");
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string one_thread = read_file(out());
  ASSERT_EQ(read_jsonl(out()).size(), 4u);
  r = generate(kMixed, kGreedy + "--threads 2");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(read_file(out()), one_thread);
}

// Ids in, ids out: without tokenizer.json the same greedy tokens as with it (up to the first stop token:
// the stop tokens come from config.json then), texts empty; text prompts and stop strings (per line or
// option) and --chat are refused naming the missing file.
TEST_F(CliGenerate, InputIdsNeedNoTokenizer) {
  namespace fs = std::filesystem;
  const std::string bare = dir_.path() + "/bare";
  fs::create_directories(bare);
  for (const auto& e : fs::directory_iterator(model()))
    if (e.path().filename() != "tokenizer.json")
      fs::copy(e.path(), bare + "/" + e.path().filename().string(), fs::copy_options::recursive);
  const std::string ids = R"({"input_ids": [7, 8, 9, 10]})";
  dir_.write("prompts.jsonl", ids + "\n");
  const std::string common = " --prompts " + prompts() + " --kv-cache-memory 4000000 " + kGreedy;
  ASSERT_EQ(run("generate --model " + model() + common + "--out " + dir_.path() + "/with.jsonl").status, 0);
  const CommandResult r = run("generate --model " + bare + common + "--out " + out());
  ASSERT_EQ(r.status, 0) << r.output;
  const json with = completions_of(dir_.path() + "/with.jsonl", 0)[0], without = completions_of(out(), 0)[0];
  const std::vector<int> a = with["token_ids"], b = without["token_ids"];
  ASSERT_FALSE(b.empty());
  const size_t n = std::min(a.size(), b.size());
  EXPECT_EQ(std::vector<int>(a.begin(), a.begin() + n), std::vector<int>(b.begin(), b.begin() + n));
  EXPECT_EQ(without["text"], "");

  dir_.write("prompts.jsonl", ids + "\n" + R"({"prompt": "hi"})" + "\n" + R"({"input_ids": [1, 2], "stop": "x"})" +
                                  "\n");
  const CommandResult bad = run("generate --model " + bare + common + "--out " + out());
  EXPECT_NE(bad.status, 0);
  const std::map<int, std::string> errors = errors_by_line(bad.output, prompts());
  ASSERT_EQ(errors.size(), 2u) << bad.output;
  EXPECT_NE(errors.at(2).find("field \"prompt\" needs the model's tokenizer (no tokenizer.json in " + bare),
            std::string::npos)
      << bad.output;
  EXPECT_NE(errors.at(3).find("field \"stop\": stop strings need the model's tokenizer"), std::string::npos)
      << bad.output;
  EXPECT_EQ(read_jsonl(out()).size(), 1u);
  for (const std::string option : {"--chat", "--stop x"}) {
    const CommandResult refused = run("generate --model " + bare + common + "--out " + out() + " " + option);
    EXPECT_NE(refused.status, 0) << option;
    const std::string flag = option.substr(0, option.find(' '));
    EXPECT_NE(refused.output.find(flag + " needs the model's tokenizer (no tokenizer.json"), std::string::npos)
        << refused.output;
  }
}

TEST(CliBenchRollout, DecodeRoundsPairBandwidthWithDecodeAndReportMedians) {
  const auto r = grpo::test::run_grpo(
      "bench rollout --preset tiny --prompts 2 --n 2 --prompt-len 4 --max-new-tokens 4 --skip-baseline", "2>/dev/null");
  ASSERT_EQ(r.status, 0) << r.output;
  const json j = json::parse(r.output);
  const json& rounds = j.at("decode1_rounds");
  ASSERT_EQ(rounds.size(), 3u);
  const double bytes = j.at("weight_bytes_per_token").get<double>();
  ASSERT_GT(bytes, 0);
  std::vector<double> fractions;
  for (const json& round : rounds) {
    const double f =
        round.at("decode1_tokens_per_s").get<double>() * bytes / round.at("bandwidth_bytes_per_s").get<double>();
    EXPECT_NEAR(round.at("bandwidth_fraction").get<double>(), f, 1e-9 * f);
    fractions.push_back(f);
  }
  std::sort(fractions.begin(), fractions.end());
  EXPECT_NEAR(j.at("bandwidth_fraction").get<double>(), fractions[1], 1e-9 * fractions[1]);
  EXPECT_TRUE(j.at("speedup").is_null());
}

// --lora-rank times the same rollout with an unmerged adapter, and bench train --profile prints both steps'
// scopes, the adapters' among them.
TEST(CliBenchRollout, LoraRankReportsTheAdaptersRatioAndTrainProfilesBothSteps) {
  const auto r = grpo::test::run_grpo("bench rollout --preset tiny --prompts 2 --n 2 --prompt-len 4 --max-new-tokens 4 "
                                      "--skip-baseline --lora-rank 4",
                                      "2>/dev/null");
  ASSERT_EQ(r.status, 0) << r.output;
  const json j = json::parse(r.output);
  EXPECT_EQ(j.at("lora_rank").get<int>(), 4);
  const double ratio = j.at("lora_rollout_time_ratio").get<double>();
  EXPECT_NEAR(ratio, j.at("gen_tokens_per_s").get<double>() / j.at("lora_gen_tokens_per_s").get<double>(),
              1e-9 * ratio);
  const auto t = grpo::test::run_grpo("bench train --preset tiny --tokens 64 --seq-len 32 --steps 1 --threads 1 "
                                      "--skip-baseline --lora-rank 4 --profile",
                                      "2>&1");
  ASSERT_EQ(t.status, 0) << t.output;
  EXPECT_NE(t.output.find("\"lora_step_ratio\""), std::string::npos) << t.output;
  for (const char* scope : {"linear_backward", "lora_forward", "lora_backward", "add_low_rank"})
    EXPECT_NE(t.output.find(std::string("  ") + scope + " "), std::string::npos) << scope << "\n" << t.output;
}

// --tools / --tool-config: multi-turn generation; completions add the response mask and the turn counts.
TEST_F(CliGenerate, ToolsAddTheResponseMaskAndTurns) {
  const std::string line = R"({"prompt": "What is 1234*5678?"})" "\n";
  CommandResult r = generate(line, "--tools --n 3 --max-new-tokens 24");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("--tools / --tool-config need --chat"), std::string::npos) << r.output;
  r = generate(line, "--chat --tool-config " + dir_.path() + "/missing.yaml");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("missing.yaml"), std::string::npos) << r.output;
  r = generate(line, "--chat --tools --max-assistant-turns 2 --n 3 --max-new-tokens 24 --temperature 1");
  ASSERT_EQ(r.status, 0) << r.output;
  const json comps = completions_of(out(), 0);
  ASSERT_EQ(comps.size(), 3u) << comps.dump();
  for (const json& c : comps) {
    ASSERT_EQ(c["response_mask"].size(), c["token_ids"].size()) << c.dump();
    EXPECT_GE(c["num_turns"].get<int>(), 2);  // the prompt's user turn and at least one assistant turn
    EXPECT_LE(c["num_turns"].get<int>(), 4);  // at most 2 assistant turns and the tool turn between them
    EXPECT_GE(c["tool_calls"].get<int>(), 0);
    EXPECT_TRUE(c["tool_failures"].is_object());
  }
}

}  // namespace
}  // namespace grpo
