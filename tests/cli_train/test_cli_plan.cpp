// `grpo plan` and the memory check of `grpo train` through the built binary (GRPO_BINARY) on a `tiny`
// model: a run fits a machine of 64 GiB; on one of 100 MiB it does not, `grpo plan` names the cheapest
// change that fits (or that none does) and exits non-zero, and `grpo train` refuses it before loading the
// weights unless --ignore-memory-plan, and `train --check` prints the plan and fails such a run as
// well; `init --config-only` writes the 8B shape's config.json alone.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli_run.h"
#include "temp_dir.h"

using grpo::test::run_grpo;
namespace fs = std::filesystem;

namespace {

std::string plan_config_yaml(const std::string& dir) {
  return "data:\n"
         "  train_files: " + dir + "/train.jsonl\n"
         "  train_batch_size: 4\n"
         "  max_prompt_length: 32\n"
         "  max_response_length: 32\n"
         "  apply_chat_template: false\n"
         "actor_rollout_ref:\n"
         "  model:\n"
         "    path: " + dir + "/model\n"
         "  rollout:\n"
         "    n: 2\n"
         "  actor:\n"
         "    ppo_mini_batch_size: 4\n"
         "    use_dynamic_bsz: true\n"
         "    ppo_max_token_len_per_gpu: 4096\n"
         "trainer:\n"
         "  total_training_steps: 1\n"
         "  val_before_train: false\n"
         "  logger: [console]\n"
         "  default_local_dir: " + dir + "/run\n";
}

// The peak `grpo plan` printed ("  peak 152.3 MiB per rank"), in GiB.
double printed_peak_gib(const std::string& out) {
  const size_t at = out.find("  peak ");
  if (at == std::string::npos) return -1;
  size_t used = 0;
  const double value = std::stod(out.substr(at + 7), &used);
  const std::string unit = out.substr(at + 7 + used + 1, 3);
  return unit == "GiB" ? value : unit == "MiB" ? value / 1024 : value / (1024 * 1024);
}

class CliPlan : public ::testing::Test {
 protected:
  void SetUp() override {
    const grpo::test::CommandResult init = run_grpo("init --arch qwen3 --preset tiny --out " + tmp_.path() + "/model");
    ASSERT_EQ(init.status, 0) << init.output;
    std::string rows;
    for (int i = 0; i < 8; ++i)
      rows += "{\"prompt\": \"" + std::to_string(i) + "+" + std::to_string(i) + "=\", \"answer\": \"" +
              std::to_string(2 * i) + "\"}\n";
    tmp_.write("train.jsonl", rows);
    config_ = tmp_.write("config.yaml", plan_config_yaml(tmp_.path()));
  }
  grpo::test::TempDir tmp_;
  std::string config_;
};

TEST_F(CliPlan, FitsABigMachine) {
  const grpo::test::CommandResult r = run_grpo("plan " + config_ + " --machine-memory 64", "2>/dev/null");
  EXPECT_EQ(r.status, 0) << r.output;
  for (const char* part : {"weights", "gradients", "optimizer", "activations", "KV cache", "rollout workspaces"})
    EXPECT_NE(r.output.find(part), std::string::npos) << part << "\n" << r.output;
  EXPECT_NE(r.output.find(": fits"), std::string::npos) << r.output;
}

TEST_F(CliPlan, DoesNotFitASmallMachineAndSaysWhatWould) {
  // The tiny model's activations for a 4096-token micro-batch are most of its peak: checkpointing or a
  // smaller micro-batch brings it under a machine a little smaller than the plan.
  const grpo::test::CommandResult big = run_grpo("plan " + config_ + " --machine-memory 64", "2>/dev/null");
  const double peak = printed_peak_gib(big.output);
  ASSERT_GT(peak, 0) << big.output;
  const std::string machine = std::to_string(peak * 0.9);
  const grpo::test::CommandResult r = run_grpo("plan " + config_ + " --machine-memory " + machine, "2>&1");
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("does NOT fit"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("cheapest change that fits: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--set actor_rollout_ref.model.enable_gradient_checkpointing=true"), std::string::npos)
      << r.output;
  // A machine smaller than the process itself: nothing fits.
  const grpo::test::CommandResult none = run_grpo("plan " + config_ + " --machine-memory 0.001", "2>&1");
  EXPECT_NE(none.status, 0);
  EXPECT_NE(none.output.find("no change tried makes it fit"), std::string::npos) << none.output;
}

TEST_F(CliPlan, TrainRefusesARunThatCannotFitBeforeLoadingTheWeights) {
  // A micro-batch of ten million tokens (20000 samples of 8 prompts): hundreds of GB of activations.
  const std::string sets = " --set actor_rollout_ref.actor.ppo_max_token_len_per_gpu=100000000"
                           " --set data.train_batch_size=8 --set actor_rollout_ref.actor.ppo_mini_batch_size=8"
                           " --set actor_rollout_ref.rollout.n=20000";
  const grpo::test::CommandResult r = run_grpo("train " + config_ + " --threads 1" + sets, "2>&1");
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("[memory]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("does not fit this machine's memory"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("[rollout] KV cache"), std::string::npos) << r.output;  // stopped before the engine
}

TEST_F(CliPlan, TrainCheckPrintsThePlanAndFailsARunThatCannotFit) {
  const grpo::test::CommandResult ok = run_grpo("train --check " + config_ + " --threads 1", "2>&1");
  EXPECT_EQ(ok.status, 0) << ok.output;
  EXPECT_NE(ok.output.find("[check] memory plan per rank: "), std::string::npos) << ok.output;
  EXPECT_NE(ok.output.find("[check] ok: the run would start"), std::string::npos) << ok.output;
  // The run of TrainRefusesARunThatCannotFitBeforeLoadingTheWeights: a problem naming the plan.
  const std::string sets =
      " --set actor_rollout_ref.actor.ppo_max_token_len_per_gpu=100000000"
      " --set data.train_batch_size=8 --set actor_rollout_ref.actor.ppo_mini_batch_size=8"
      " --set actor_rollout_ref.rollout.n=20000";
  const grpo::test::CommandResult r = run_grpo("train --check " + config_ + " --threads 1" + sets, "2>&1");
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("does NOT fit"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[memory] the run does not fit this machine's memory: the memory plan above needs"),
            std::string::npos)
      << r.output;
  const grpo::test::CommandResult ignored =
      run_grpo("train --check --ignore-memory-plan " + config_ + " --threads 1" + sets, "2>&1");
  EXPECT_EQ(ignored.status, 0) << ignored.output;
  EXPECT_NE(ignored.output.find("--ignore-memory-plan runs it anyway"), std::string::npos) << ignored.output;
}

TEST(CliPlanInit, ConfigOnlyWritesTheEightBillionShape) {
  grpo::test::TempDir tmp;
  const std::string out = tmp.path() + "/vl8b";
  const grpo::test::CommandResult r = run_grpo("init --arch qwen3-vl --preset qwen3-vl-8b --config-only --out " + out);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(fs::exists(out + "/config.json"));
  EXPECT_TRUE(fs::exists(out + "/preprocessor_config.json"));
  EXPECT_FALSE(fs::exists(out + "/model.safetensors"));
  EXPECT_NE(r.output.find("8,7"), std::string::npos) << r.output;  // ~8.77B parameters
}

}  // namespace
