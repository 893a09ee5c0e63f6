// `grpo data calc` run as a user runs it: rows with the calculator's schema, the asked fraction of SFT
// conversations calling it, the same files for the same seed, clear errors for bad options.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "core/files.h"

namespace grpo {
namespace {

namespace fs = std::filesystem;

TEST(CliDataCalc, WritesRowsWithTheCalculatorAndToolCallingTargets) {
  const fs::path dir = fs::temp_directory_path() / ("grpo_cli_calc_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string a = (dir / "a").string(), b = (dir / "b").string();
  for (const std::string& out : {a, b}) {
    const auto r = test::run_grpo("data calc --out " + out + " --train 40 --test 4 --seed 3 --difficulty 2 --tool-fraction 0.5");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("(40 problems, "), std::string::npos) << r.output;
  }
  EXPECT_EQ(read_file(a + "/train.jsonl"), read_file(b + "/train.jsonl"));
  int rows = 0, calls = 0;
  for_each_line(a + "/train.jsonl", [&](int64_t, const std::string& line) {
    const auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["level"], 2);
    EXPECT_EQ(j["tools"][0]["function"]["name"], "calculator");
    if (j.contains("messages")) {
      ++calls;
      EXPECT_EQ(j["messages"][1]["tool_calls"][0]["function"]["name"], "calculator");
      EXPECT_EQ(j["messages"][2]["content"], j["answer"]);
    } else {
      EXPECT_EQ(j["response"], "\\boxed{" + j["answer"].get<std::string>() + "}");
    }
    ++rows;
  });
  EXPECT_EQ(rows, 40);
  EXPECT_GT(calls, 8);
  EXPECT_LT(calls, 32);

  auto r = test::run_grpo("data calc --out " + (dir / "c").string() + " --difficulty easy");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("unknown difficulty \"easy\""), std::string::npos) << r.output;
  r = test::run_grpo("data calc --out " + (dir / "c").string() + " --tool-fraction 2");
  EXPECT_NE(r.status, 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace grpo
