// `grpo demo --sft-model DIR`: GRPO from an earlier SFT model, without the init and the SFT (how the
// README's table of estimators and losses is reproduced): the run starts from that model, its accuracy
// after SFT is GRPO's validation before training, and a folder without a model is a clear error.
// `grpo demo --task shapes` validates GRPO on its own validation split with a checkpoint at every
// validation, and reports the checkpoint that validated best as GRPO measures it on the test set.
// `grpo demo --task tools` end to end at a tiny size (a few steps; learning is the demo's own business).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_run.h"
#include "core/files.h"
#include "report/metrics.h"
#include "temp_dir.h"

namespace {

using grpo::test::run_grpo;
using Json = nlohmann::json;
namespace fs = std::filesystem;

// GRPO at its smallest: 2 prompts x 2 samples, one optimizer step per training step, no DAPO filtering.
constexpr const char* kTinyGrpo =
    " --grpo-set data.train_batch_size=2 --grpo-set actor_rollout_ref.actor.ppo_mini_batch_size=2"
    " --grpo-set actor_rollout_ref.rollout.n=2 --grpo-set algorithm.filter_groups.enable=false";

// A random-initialised `tiny` model of `arch` (seed 1) in <dir>.
void init_tiny_model(const std::string& arch, const std::string& dir) {
  const grpo::test::CommandResult init = run_grpo("init --arch " + arch + " --preset tiny --seed 1 --out " + dir);
  ASSERT_EQ(init.status, 0) << init.output;
}

TEST(CliDemo, GrpoStartsFromAnEarlierSftModel) {
  grpo::test::TempDir tmp;
  const std::string model = tmp.path() + "/model", out = tmp.path() + "/demo";
  ASSERT_NO_FATAL_FAILURE(init_tiny_model("qwen3", model));
  const std::string sets =
      std::string(kTinyGrpo) + " --grpo-set trainer.total_training_steps=1 --grpo-set data.max_response_length=8";
  const grpo::test::CommandResult r = run_grpo("demo --sft-model " + model + " --out " + out +
                                                   " --train 16 --test 4 --threads 1" + sets,
                                               "2>/dev/null");
  ASSERT_EQ(r.status, 0) << r.output;
  const Json summary = Json::parse(r.output.substr(r.output.rfind('{')));
  EXPECT_FALSE(fs::exists(out + "/sft")) << "no SFT run";
  EXPECT_FALSE(fs::exists(out + "/init")) << "no initialised model";
  const std::string config = grpo::read_file(out + "/grpo/config.yaml");
  EXPECT_NE(config.find(model), std::string::npos) << "GRPO's model.path is the given model:\n" << config;
  const std::vector<Json> metrics = grpo::read_metrics(out + "/grpo/metrics.jsonl");
  ASSERT_FALSE(metrics.empty());
  ASSERT_TRUE(metrics.front().contains("val/accuracy")) << metrics.front().dump();
  EXPECT_EQ(summary.at("sft_accuracy").get<double>(), metrics.front().at("val/accuracy").get<double>());
  EXPECT_EQ(summary.at("grpo_accuracy").get<double>(), metrics.back().at("val/accuracy").get<double>());
}

TEST(CliDemo, ShapesDemoChoosesGrpoModelOnItsValidationSplitAndMeasuresItOnTheTestSet) {
  grpo::test::TempDir tmp;
  const std::string model = tmp.path() + "/model", out = tmp.path() + "/demo";
  ASSERT_NO_FATAL_FAILURE(init_tiny_model("qwen3-vl", model));
  const std::string sets = std::string(" --train 16 --test 8 --rl 16 --threads 1") + kTinyGrpo +
                           " --grpo-set data.max_response_length=8 --grpo-set reward.overlong_buffer.len=4";
  const grpo::test::CommandResult r =
      run_grpo("demo --task shapes --sft-model " + model + " --out " + out + " --val 8" + sets +
                   " --grpo-set trainer.total_training_steps=4 --grpo-set trainer.test_freq=2",
               "2>/dev/null");
  ASSERT_EQ(r.status, 0) << r.output;
  const Json summary = Json::parse(r.output.substr(r.output.rfind('{')));
  const std::string config = grpo::read_file(out + "/grpo/config.yaml");
  EXPECT_NE(config.find(out + "/data/val.jsonl"), std::string::npos) << "GRPO validates on val.jsonl:\n" << config;
  EXPECT_EQ(config.find(out + "/data/test.jsonl"), std::string::npos) << config;
  // Validations at steps 0, 2 and 4, a checkpoint at each after training began; the choice is the best
  // of those (the later of equals).
  int64_t best_step = -1;
  double best = -1;
  std::vector<int64_t> val_steps;
  for (const Json& m : grpo::read_metrics(out + "/grpo/metrics.jsonl")) {
    if (!m.contains("val/accuracy")) continue;
    const int64_t step = m.at("step").get<int64_t>();
    val_steps.push_back(step);
    if (step > 0 && m.at("val/accuracy").get<double>() >= best) {
      best = m.at("val/accuracy").get<double>();
      best_step = step;
    }
  }
  EXPECT_EQ(val_steps, (std::vector<int64_t>{0, 2, 4}));
  for (int64_t step : {2, 4})
    EXPECT_TRUE(fs::exists(out + "/grpo/checkpoints/global_step_" + std::to_string(step) + "/model.safetensors")) << step;
  ASSERT_EQ(summary.at("grpo_step").get<int64_t>(), best_step) << r.output;
  // The accuracies are on the test set: GRPO's own validation of the same models there, before training
  // (--val 0: the demo validates on the test set, which is the same with or without val.jsonl).
  const std::string chosen = out + "/grpo/checkpoints/global_step_" + std::to_string(best_step);
  for (const auto& [start, reported] : {std::pair{model, "sft_accuracy"}, std::pair{chosen, "grpo_accuracy"}}) {
    const grpo::test::CommandResult t = run_grpo("demo --task shapes --val 0 --sft-model " + start + " --out " +
                                                     tmp.path() + "/test-run" + sets +
                                                     " --grpo-set trainer.total_training_steps=1",
                                                 "2>/dev/null");
    ASSERT_EQ(t.status, 0) << t.output;
    const Json ts = Json::parse(t.output.substr(t.output.rfind('{')));
    EXPECT_EQ(summary.at(reported).get<double>(), ts.at("sft_accuracy").get<double>()) << reported;
  }
}

TEST(CliDemo, ShapesDemoWithoutGrpoValidationsStopsBeforeTheSft) {
  grpo::test::TempDir tmp;
  const std::string out = tmp.path() + "/demo";
  const grpo::test::CommandResult r = run_grpo("demo --task shapes --out " + out +
                                               " --train 16 --test 4 --rl 4 --val 4 --grpo-set trainer.test_freq=-1");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("[demo] trainer.test_freq = -1"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out + "/init")) << "stopped before the model was made";
  EXPECT_FALSE(fs::exists(out + "/sft")) << "stopped before the SFT";
}

TEST(CliDemo, ToolsDemoRunsMultiTurnWithTheCalculatorAndReportsToolCallShares) {
  grpo::test::TempDir tmp;
  const std::string out = tmp.path() + "/demo";
  const std::string sets =
      std::string(kTinyGrpo) + " --sft-set sft.batch_size=8 --sft-set sft.epochs=1"
      " --grpo-set trainer.total_training_steps=1"
      " --grpo-set data.max_response_length=48 --sft-set data.max_response_length=48";
  const grpo::test::CommandResult r =
      run_grpo("demo --task tools --out " + out + " --train 16 --test 4 --tool-fraction 0.5 --threads 1" + sets,
               "2>/dev/null");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("tool-call share after SFT: "), std::string::npos) << r.output;
  const Json summary = Json::parse(r.output.substr(r.output.rfind('{')));
  // The SFT data: calculator problems, half of the training rows conversations that call the calculator.
  int64_t conversations = 0;
  std::istringstream rows(grpo::read_file(out + "/data/train.jsonl"));
  for (std::string line; std::getline(rows, line);) conversations += Json::parse(line).contains("messages");
  EXPECT_GT(conversations, 0);
  EXPECT_LT(conversations, 16);
  // Both runs use the tool config the demo wrote (the built-in calculator), with multi-turn rollouts.
  EXPECT_NE(grpo::read_file(out + "/data/tools.yaml").find("grpo.tools.Calculator"), std::string::npos);
  for (const char* run : {"sft", "grpo"}) {
    const std::string config = grpo::read_file(out + "/" + run + "/config.yaml");
    EXPECT_NE(config.find(out + "/data/tools.yaml"), std::string::npos) << run << ":\n" << config;
  }
  // The shares are the held-out validations' (with the calculator) after SFT and after GRPO.
  const std::vector<Json> sft_metrics = grpo::read_metrics(out + "/sft/metrics.jsonl");
  const std::vector<Json> grpo_metrics = grpo::read_metrics(out + "/grpo/metrics.jsonl");
  ASSERT_FALSE(sft_metrics.empty());
  ASSERT_FALSE(grpo_metrics.empty());
  ASSERT_TRUE(sft_metrics.back().contains("val/tools/call_share")) << sft_metrics.back().dump();
  ASSERT_TRUE(grpo_metrics.back().contains("val/tools/call_share")) << grpo_metrics.back().dump();
  EXPECT_EQ(summary.at("sft_tool_call_share").get<double>(), sft_metrics.back().at("val/tools/call_share").get<double>());
  EXPECT_EQ(summary.at("grpo_tool_call_share").get<double>(), grpo_metrics.back().at("val/tools/call_share").get<double>());
  EXPECT_EQ(summary.at("grpo_accuracy").get<double>(), grpo_metrics.back().at("val/accuracy").get<double>());
  // The training step ran multi-turn rollouts (their metrics), whether or not a sample called the tool.
  bool turn_metrics = false;
  for (const Json& m : grpo_metrics) turn_metrics |= m.contains("tools/call_share");
  EXPECT_TRUE(turn_metrics);
}

TEST(CliDemo, AnSftModelFolderWithoutAModelIsNamed) {
  grpo::test::TempDir tmp;
  const grpo::test::CommandResult r =
      run_grpo("demo --sft-model " + tmp.path() + "/nothing --out " + tmp.path() + "/demo --train 16 --test 4");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("[demo] --sft-model " + tmp.path() + "/nothing"), std::string::npos) << r.output;
}

}  // namespace
