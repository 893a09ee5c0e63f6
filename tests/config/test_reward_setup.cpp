// The run's reward functions chosen as verl chooses: reward.functions when listed, else the custom
// Python function, else verl's rules when the rows carry data_source (an unknown one is an error at
// start naming it and the known ones), else math.
#include <gtest/gtest.h>

#include "core/error.h"
#include "error_of.h"
#include "config/reward_setup.h"

using namespace grpo;

TEST(RewardSetup, ChosenAsVerlChooses) {
  RewardConfig r;
  auto f = run_reward_functions(r, {"", ""}, "train.jsonl");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].name, RewardKind::Math) << "rows without data_source keep the math reward";
  f = run_reward_functions(r, {"shapes"}, "train.jsonl");
  EXPECT_EQ(f[0].name, RewardKind::Math) << "the project's own visual task";
  f = run_reward_functions(r, {"openai/gsm8k", "aime24"}, "train.jsonl");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].name, RewardKind::Verl);
  const std::string e = test::error_of([&] { run_reward_functions(r, {"openai/gsm8k", "my/set"}, "train.jsonl"); });
  EXPECT_NE(e.find("\"my/set\""), std::string::npos) << e;
  EXPECT_NE(e.find("lighteval/MATH"), std::string::npos) << e;
  EXPECT_NE(e.find("train.jsonl"), std::string::npos) << e;
  const std::string missing = test::error_of([&] { run_reward_functions(r, {"openai/gsm8k", ""}, "train.jsonl"); });
  EXPECT_NE(missing.find("no data_source"), std::string::npos) << missing;

  r.custom_reward_function.path = "r.py";
  r.custom_reward_function.name = "score";
  r.custom_reward_function.reward_kwargs = {{"bonus", 1}};
  r.reward_manager = RewardManager::Batch;
  f = run_reward_functions(r, {"my/set"}, "train.jsonl");  // the custom function scores any data_source
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].name, RewardKind::Python);
  EXPECT_EQ(f[0].path, "r.py");
  EXPECT_EQ(f[0].function, "score");
  EXPECT_EQ(f[0].kwargs_json, R"({"bonus":1})");
  EXPECT_TRUE(f[0].batch);

  RewardConfig listed;
  listed.functions = {RewardFunctionConfig{}, RewardFunctionConfig{}};
  listed.functions[1].name = RewardKind::Format;
  EXPECT_EQ(run_reward_functions(listed, {"my/set"}, "x").size(), 2u) << "reward.functions as listed";
}
