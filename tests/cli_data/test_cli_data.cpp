// `grpo data shapes` run as a user runs it: pictures and verl-style rows in the folder, the same files
// for the same seed, clear errors for bad options.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "core/files.h"
#include "image/image.h"

namespace grpo {
namespace {

namespace fs = std::filesystem;

TEST(CliData, ShapesWritesPicturesAndRows) {
  const fs::path dir = fs::temp_directory_path() / ("grpo_cli_data_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string a = (dir / "a").string(), b = (dir / "b").string();
  for (const std::string& out : {a, b}) {
    const auto r = test::run_grpo("data shapes --out " + out + " --train 6 --test 2 --seed 3 --difficulty 2 --listing-fraction 1");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("(6 problems)"), std::string::npos) << r.output;
  }
  EXPECT_EQ(read_file(a + "/train.jsonl"), read_file(b + "/train.jsonl"));
  int rows = 0;
  for_each_line(a + "/train.jsonl", [&](int64_t, const std::string& line) {
    const auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["level"], 2);
    EXPECT_EQ(j["response"].get<std::string>().rfind("Shapes: ", 0), 0u);
    const Image img = load_image(a + "/" + j["images"][0].get<std::string>());
    EXPECT_EQ(img.height, 96);
    ++rows;
  });
  EXPECT_EQ(rows, 6);
  EXPECT_TRUE(fs::exists(a + "/images/test-1.png"));
  EXPECT_FALSE(fs::exists(a + "/val.jsonl"));

  // --rl and --val add their files (and pictures); the training and test files stay as they were.
  const std::string e = (dir / "e").string();
  auto extra = test::run_grpo("data shapes --out " + e + " --train 6 --test 2 --rl 3 --val 4 --seed 3 --difficulty 2 --listing-fraction 1");
  ASSERT_EQ(extra.status, 0) << extra.output;
  EXPECT_NE(extra.output.find(e + "/val.jsonl (4 problems)"), std::string::npos) << extra.output;
  EXPECT_EQ(read_file(a + "/train.jsonl"), read_file(e + "/train.jsonl"));
  EXPECT_EQ(read_file(a + "/test.jsonl"), read_file(e + "/test.jsonl"));
  EXPECT_TRUE(fs::exists(e + "/images/val-3.png"));
  EXPECT_TRUE(fs::exists(e + "/images/rl-2.png"));

  auto r = test::run_grpo("data shapes --out " + (dir / "c").string() + " --difficulty impossible");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("unknown difficulty \"impossible\""), std::string::npos) << r.output;
  r = test::run_grpo("data shapes --out " + (dir / "c").string() + " --listing-fraction 2");
  EXPECT_NE(r.status, 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace grpo
