// `grpo reward`: scores a JSONL of responses by data_source (verl's rules) or with a config's reward
// set-up (a custom Python function), writes each row back with its score and extra results, prints
// the mean per data_source, and names bad rows by file, line and field.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_run.h"
#include "temp_dir.h"

using namespace grpo;

namespace {

std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> rows;
  for (std::string line; std::getline(in, line);) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

const char* kRows =
    R"({"data_source": "openai/gsm8k", "response": "so #### 72", "reward_model": {"ground_truth": "72"}, "extra_info": {"index": 0}})"
    "\n"
    R"({"data_source": "openai/gsm8k", "response": "The answer is 72.", "reward_model": {"ground_truth": "72"}})"
    "\n"
    R"({"data_source": "math_dapo", "response": "Answer: 5", "reward_model": {"ground_truth": "5"}, "keep": [1, 2]})"
    "\n"
    R"({"data_source": "math_dapo", "response": "I do not know", "reward_model": {"ground_truth": "5"}})"
    "\n";

}  // namespace

TEST(CliReward, ScoresByDataSourceAndKeepsTheRows) {
  test::TempDir dir;
  const std::string in = dir.write("in.jsonl", kRows), out = dir.path() + "/out.jsonl";
  const auto r = test::run_grpo("reward --input " + in + " --out " + out);
  ASSERT_EQ(r.status, 0) << r.output;
  const auto rows = read_jsonl(out);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0]["score"], 1.0);
  EXPECT_EQ(rows[1]["score"], 0.0) << "verl's GSM8K needs ####";
  EXPECT_EQ(rows[2]["score"], 1.0);
  EXPECT_EQ(rows[2]["acc"], 1.0);
  EXPECT_EQ(rows[2]["keep"], nlohmann::json::parse("[1, 2]")) << "input fields are kept";
  EXPECT_EQ(rows[3]["score"], -1.0);
  EXPECT_EQ(rows[3]["acc"], 0.0);
  EXPECT_EQ(rows[0]["extra_info"]["index"], 0);
  EXPECT_NE(r.output.find("openai/gsm8k"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("0.5000"), std::string::npos) << r.output;   // gsm8k mean
  EXPECT_NE(r.output.find("0.0000"), std::string::npos) << r.output;   // math_dapo mean (+1 - 1)
}

// The same kind of rows in a Parquet file written by DuckDB (tests/data/parquet/generator/reward_rows.mjs).
TEST(CliReward, ScoresParquetRows) {
  test::TempDir dir;
  const std::string in = std::string(GRPO_SOURCE_DIR) + "/tests/data/parquet/duckdb_reward_rows.parquet";
  const std::string out = dir.path() + "/out.jsonl";
  const auto r = test::run_grpo("reward --input " + in + " --out " + out);
  ASSERT_EQ(r.status, 0) << r.output;
  const auto rows = read_jsonl(out);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0]["score"], 1.0);
  EXPECT_EQ(rows[1]["score"], 0.0) << "verl's GSM8K needs ####";
  EXPECT_EQ(rows[2]["score"], 1.0);
  EXPECT_EQ(rows[3]["score"], -1.0);
  EXPECT_EQ(rows[3]["extra_info"]["index"], 3) << "columns are kept";
  EXPECT_EQ(rows[0]["reward_model"]["style"], "rule");
}

TEST(CliReward, UsesTheConfigsCustomFunction) {
  test::TempDir dir;
  const std::string py = dir.write("my_reward.py",
                                   "def compute_score(data_source, solution_str, ground_truth, extra_info=None, scale=1):\n"
                                   "    return {'score': scale * len(solution_str), 'chars': len(solution_str)}\n");
  const std::string config = dir.write("run.yaml", "data:\n  train_files: t.jsonl\nactor_rollout_ref:\n  model:\n"
                                                   "    path: m\ncustom_reward_function:\n  path: " + py +
                                                   "\n  reward_kwargs: {scale: 2}\n");
  const std::string in = dir.write("in.jsonl", kRows), out = dir.path() + "/out.jsonl";
  const auto r = test::run_grpo("reward " + config + " --input " + in + " --out " + out);
  ASSERT_EQ(r.status, 0) << r.output;
  const auto rows = read_jsonl(out);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0]["score"], 20.0);  // 2 x len("so #### 72")
  EXPECT_EQ(rows[0]["chars"], 10.0);
  EXPECT_NE(r.output.find("python"), std::string::npos) << r.output;
}

TEST(CliReward, BadRowsAndUnknownSourcesAreNamed) {
  test::TempDir dir;
  const std::string out = dir.path() + "/out.jsonl";
  auto r = test::run_grpo("reward --input " +
                          dir.write("a.jsonl", std::string(kRows) + R"({"data_source": "x", "response": 3, "answer": "1"})" + "\n") +
                          " --out " + out);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("a.jsonl:5"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"response\""), std::string::npos) << r.output;
  r = test::run_grpo("reward --input " + dir.write("b.jsonl", R"({"data_source": "openai/gsm8k", "response": "x"})" "\n") +
                     " --out " + out);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("b.jsonl:1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("reward_model.ground_truth"), std::string::npos) << r.output;
  r = test::run_grpo("reward --input " +
                     dir.write("c.jsonl", R"({"data_source": "my/own", "response": "x", "answer": "1"})" "\n") +
                     " --out " + out);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("\"my/own\""), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("openai/gsm8k"), std::string::npos) << r.output;
}
