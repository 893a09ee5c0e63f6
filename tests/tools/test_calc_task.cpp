// The calculator task (`grpo data calc`): problems of each level, answers the calculator agrees with,
// splits, rows that load as prompts and SFT targets, and tool-calling targets whose call the runner answers
// with the row's answer.
#include <gtest/gtest.h>

#include <set>

#include "data/calc.h"
#include "data/dataset.h"
#include "error_of.h"
#include "temp_dir.h"
#include "tools/calculator.h"
#include "tools/chat_turns.h"
#include "tools/tool_runner.h"

namespace grpo {
namespace {

TEST(CalcTask, LevelsAndAnswersTheCalculatorAgreesWith) {
  for (int level = 1; level <= kCalcMaxLevel; ++level) {
    const auto problems = generate_calc(200, 7, {level});
    std::set<std::string> seen;
    for (const auto& p : problems) {
      EXPECT_EQ(p.level, level);
      EXPECT_TRUE(seen.insert(p.expression).second) << p.expression;
      std::string result, error;
      ASSERT_TRUE(tools::calculate(p.expression, &result, &error)) << p.expression << ": " << error;
      EXPECT_EQ(result, std::to_string(p.answer)) << p.expression;
    }
    const std::string& e = problems[0].expression;
    if (level == 1) {
      EXPECT_EQ(e.size(), 4u + 1u + 2u) << e;
    }
    if (level == 2) {
      EXPECT_EQ(e.size(), 4u + 1u + 4u) << e;
    }
    if (level == 3) {
      EXPECT_EQ(e.size(), 5u + 1u + 4u) << e;
    }
  }
  EXPECT_EQ(generate_calc(50, 3, calc_levels("mixed"))[17].expression, generate_calc(50, 3, calc_levels("mixed"))[17].expression);
  EXPECT_NE(generate_calc(50, 3, calc_levels("mixed"))[17].expression, generate_calc(50, 4, calc_levels("mixed"))[17].expression);
  EXPECT_NE(test::error_of([] { calc_levels("easy"); }).find("expected mult, mixed, hard or a level 1..5"), std::string::npos);
}

TEST(CalcTask, WritesSplitsWhoseRowsLoadAsPromptsAndTargets) {
  test::TempDir dir;
  const auto tools = tools::ToolSet::builtin({"calculator"}).template_tools();
  const CalcSplit split = write_calc_dataset(dir.path(), 400, 100, 5, "mixed", 0.25, tools);
  DatasetOptions sft_rows;
  sft_rows.require_response = true;
  const Dataset train = load_dataset(split.train_path, sft_rows);
  const Dataset test = load_dataset(split.test_path);
  ASSERT_EQ(train.examples.size(), 400u);
  ASSERT_EQ(test.examples.size(), 100u);
  std::set<std::string> train_prompts;
  int64_t with_tool = 0;
  tools::ToolRunner runner(tools::ToolSet::builtin({"calculator"}), tools::ToolRunnerOptions{});
  for (const Example& ex : train.examples) {
    EXPECT_EQ(ex.tools, tools);  // every row shows the model its tool, keys in order
    if (ex.response_messages.is_null()) {
      EXPECT_EQ(ex.response, "\\boxed{" + ex.answer + "}");
      train_prompts.insert(ex.prompt);
      continue;
    }
    ++with_tool;
    ASSERT_EQ(ex.messages.size(), 1u);  // the prompt: the user turn
    EXPECT_EQ(ex.messages[0]["role"], "user");
    train_prompts.insert(ex.messages[0]["content"].get<std::string>());
    ASSERT_EQ(ex.response_messages.size(), 3u);
    // The call the target writes, run by the runner, answers with the tool turn of the target.
    const auto results = runner.run_turn(tools::assistant_turn_text(ex.response_messages[0])).get();
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].failure, tools::ToolFailure::None);
    EXPECT_EQ(results[0].text, ex.response_messages[1]["content"].get<std::string>());
    EXPECT_EQ(results[0].text, ex.answer);
    EXPECT_EQ(ex.response_messages[2]["content"], "\\boxed{" + ex.answer + "}");
  }
  EXPECT_EQ(with_tool, split.train_with_tool);
  EXPECT_GT(with_tool, 400 * 0.15);
  EXPECT_LT(with_tool, 400 * 0.35);
  for (const Example& ex : test.examples) {
    EXPECT_TRUE(ex.response.empty() && ex.response_messages.is_null());
    EXPECT_EQ(ex.tools, tools);
    EXPECT_EQ(train_prompts.count(ex.prompt), 0u) << ex.prompt;
  }
  EXPECT_NE(test::error_of([&] { write_calc_dataset(dir.path(), 1, 1, 0, "mixed", 1.5, tools); }).find("[0, 1]"),
            std::string::npos);
}

TEST(CalcTask, AllOrNoneCallTheTool) {
  test::TempDir dir;
  const auto tools = tools::ToolSet::builtin({"calculator"}).template_tools();
  EXPECT_EQ(write_calc_dataset(dir.path(), 50, 5, 1, "2", 1.0, tools).train_with_tool, 50);
  EXPECT_EQ(write_calc_dataset(dir.path(), 50, 5, 1, "2", 0.0, tools).train_with_tool, 0);
}

}  // namespace
}  // namespace grpo
