// The run check (plan/run_check.h) on a `tiny` byte-level model: a GRPO run's check prints its memory plan,
// a run that cannot fit the machine is a problem naming the plan (none with --ignore-memory-plan), and an
// SFT run's check makes no plan.
#include <gtest/gtest.h>

#include <string>

#include "data/byte_model.h"
#include "plan/run_check.h"
#include "temp_dir.h"

using namespace grpo;

namespace {

class RunCheckPlan : public ::testing::Test {
 protected:
  void SetUp() override {
    write_byte_model(tmp_.path() + "/model", "qwen3", "tiny", 1);
    std::string rows;
    for (int i = 0; i < 8; ++i)
      rows += "{\"prompt\": \"" + std::to_string(i) + "+" + std::to_string(i) + "=\", \"answer\": \"" +
              std::to_string(2 * i) + "\", \"response\": \"" + std::to_string(2 * i) + "\"}\n";
    tmp_.write("train.jsonl", rows);
    std::string yaml = R"(data:
  train_files: DIR/train.jsonl
  train_batch_size: 4
  max_prompt_length: 32
  max_response_length: 32
  apply_chat_template: false
actor_rollout_ref:
  model:
    path: DIR/model
  rollout:
    n: 2
  actor:
    ppo_mini_batch_size: 4
    use_dynamic_bsz: true
    ppo_max_token_len_per_gpu: 4096
trainer:
  total_training_steps: 1
  logger: [console]
  default_local_dir: DIR/run
)";
    for (size_t at = 0; (at = yaml.find("DIR", at)) != std::string::npos; at += tmp_.path().size())
      yaml.replace(at, 3, tmp_.path());
    tmp_.write("config.yaml", yaml);
    config_ = load_config(tmp_.path() + "/config.yaml", {}, &notes_);
  }
  RunCheck check(int64_t machine_bytes, bool ignore = false, RunKind kind = RunKind::Grpo) const {
    RunCheckOptions opt;
    opt.available_bytes = machine_bytes;
    opt.ignore_memory_plan = ignore;
    return check_run(config_, notes_, kind, opt);
  }
  test::TempDir tmp_;
  Config config_;
  ConfigNotes notes_;
};

bool has_line_starting(const std::vector<std::string>& lines, const std::string& start) {
  for (const std::string& l : lines)
    if (l.starts_with(start)) return true;
  return false;
}

TEST_F(RunCheckPlan, ARunThatFitsPrintsItsPlan) {
  const RunCheck r = check(int64_t{64} << 30);
  EXPECT_TRUE(r.ok()) << describe(r);
  EXPECT_TRUE(has_line_starting(r.summary, "memory plan per rank: ")) << describe(r);
  EXPECT_TRUE(has_line_starting(r.summary, "  KV cache ")) << describe(r);
  EXPECT_NE(describe(r).find("available: fits"), std::string::npos) << describe(r);
}

TEST_F(RunCheckPlan, ARunThatCannotFitIsAProblemNamingThePlan) {
  // A machine of 1 MiB holds not even the process.
  const RunCheck r = check(int64_t{1} << 20);
  ASSERT_EQ(r.problems.size(), 1u) << describe(r);
  EXPECT_NE(r.problems[0].find("[memory] the run does not fit this machine's memory: the memory plan above needs"),
            std::string::npos)
      << r.problems[0];
  EXPECT_NE(r.problems[0].find("--ignore-memory-plan"), std::string::npos) << r.problems[0];
  EXPECT_NE(describe(r).find("does NOT fit"), std::string::npos) << describe(r);
  EXPECT_NE(describe(r).find("no change tried makes it fit"), std::string::npos) << describe(r);

  const RunCheck ignored = check(int64_t{1} << 20, /*ignore=*/true);
  EXPECT_TRUE(ignored.ok()) << describe(ignored);
  EXPECT_TRUE(has_line_starting(ignored.summary, "memory plan: the run does not fit; --ignore-memory-plan"))
      << describe(ignored);
}

TEST_F(RunCheckPlan, SftMakesNoPlan) {
  const RunCheck r = check(int64_t{1} << 20, false, RunKind::Sft);
  EXPECT_FALSE(has_line_starting(r.summary, "memory plan")) << describe(r);
  EXPECT_EQ(describe(r).find("[memory]"), std::string::npos) << describe(r);
}

}  // namespace
