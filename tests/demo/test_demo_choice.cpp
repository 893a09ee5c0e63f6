// Tests of how the shapes demo chooses GRPO's model on its validation split (demo/demo.h): the best
// validation after training began whose checkpoint exists, the later one of equals; none is an error
// naming the run folder.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/files.h"
#include "error_of.h"
#include "demo/demo.h"
#include "temp_dir.h"

using namespace grpo;

namespace {

TrainSummary validations(std::vector<int64_t> steps, std::vector<double> accuracy) {
  TrainSummary g;
  g.val_steps = std::move(steps);
  g.val_accuracy = std::move(accuracy);
  g.steps = g.val_steps.back();
  return g;
}

void make_checkpoint(const std::string& run, int64_t step) {
  const std::string dir = run + "/checkpoints/global_step_" + std::to_string(step);
  make_dirs(dir);
  write_file_atomic(dir + "/config.json", "{}");
}

TEST(DemoChoice, TakesTheBestValidationAfterTrainingBeganAndTheLaterOfEquals) {
  test::TempDir tmp;
  const std::string run = tmp.path() + "/grpo";
  for (int64_t step : {25, 50, 75, 100}) make_checkpoint(run, step);
  // Step 0 (the SFT model) validates best, but is not GRPO's model; 50 and 75 tie above 25 and 100.
  const ChosenCheckpoint c = best_validated_checkpoint(validations({0, 25, 50, 75, 100}, {0.9, 0.6, 0.7, 0.7, 0.65}), run);
  EXPECT_EQ(c.step, 75);
  EXPECT_DOUBLE_EQ(c.val_accuracy, 0.7);
  EXPECT_EQ(c.dir, run + "/checkpoints/global_step_75");
}

TEST(DemoChoice, SkipsValidationsWhoseCheckpointIsGone) {
  test::TempDir tmp;
  const std::string run = tmp.path() + "/grpo";
  for (int64_t step : {25, 100}) make_checkpoint(run, step);  // 50 pruned (trainer.max_actor_ckpt_to_keep)
  const ChosenCheckpoint c = best_validated_checkpoint(validations({0, 25, 50, 100}, {0.5, 0.6, 0.8, 0.55}), run);
  EXPECT_EQ(c.step, 25);
  EXPECT_EQ(c.dir, run + "/checkpoints/global_step_25");
}

TEST(DemoChoice, NoCheckpointOfAValidationIsAnErrorNamingTheRun) {
  test::TempDir tmp;
  const std::string run = tmp.path() + "/grpo";
  make_checkpoint(run, 30);  // saved, but not at a validation
  const std::string e = test::error_of([&] { best_validated_checkpoint(validations({0, 25}, {0.5, 0.6}), run); });
  EXPECT_NE(e.find(run + "/checkpoints"), std::string::npos) << e;
  EXPECT_NE(e.find("trainer.test_freq"), std::string::npos) << e;
}

}  // namespace
