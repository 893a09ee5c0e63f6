// Runs whose data has pictures: on a tiny Qwen3-VL model, SFT and GRPO (with validation) run end to end,
// the pictures reach the vision tower (its weights move) and the saved models keep preprocessor_config.json;
// on a model that cannot see pictures the run stops at start-up naming the row (without
// preprocessor_config.json the dataset itself refuses the row).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "core/files.h"
#include "core/threads.h"
#include "data/byte_model.h"
#include "config/config.h"
#include "config/part_options.h"
#include "report/metrics.h"
#include "loop/session.h"
#include "loop/sft.h"
#include "data/shapes.h"
#include "temp_dir.h"
#include "error_of.h"
#include "loop/trainer.h"
#include "image/image.h"
#include "model/weights.h"
#include "tokenizer/byte_tokenizer.h"

using namespace grpo;

namespace {

std::string open_error(const std::string& model, const std::string& data) {
  return test::error_of([&] {
    Session::open(load_config("", {"data.train_files=" + data, "actor_rollout_ref.model.path=" + model}), false);
  });
}

TEST(VisionRows, RefusedWhenTheModelCannotSeeThem) {
  test::TempDir dir;
  const std::string model = dir.path() + "/model";
  write_byte_model(model, "qwen3", "tiny", 0);
  write_png(dir.path() + "/a.png", Image{64, 64, std::vector<uint8_t>(64 * 64 * 3, 128)});
  const std::string data = dir.write("d.jsonl", R"({"prompt": "<image>How many?", "answer": "1", "images": ["a.png"]})" "\n");
  std::string e = open_error(model, data);
  EXPECT_NE(e.find(data + ":1: the row has pictures but the model has no preprocessor_config.json"), std::string::npos) << e;

  std::filesystem::copy_file(std::string(GRPO_SHARED_DIR) + "/reference/models/qwen3-vl/preprocessor_config.json",
                             model + "/preprocessor_config.json");
  write_byte_tokenizer(model, /*vision=*/true);
  e = open_error(model, data);
  EXPECT_NE(e.find("[data] " + data + ":1: the row has pictures but " + model + " is a text model"), std::string::npos)
      << e;
}

// The largest absolute difference between the vision tower's weights in two model folders.
double tower_change(const std::string& a, const std::string& b) {
  const auto wa = ModelWeights::load(a), wb = ModelWeights::load(b);
  const std::vector<NamedF32> ta = wa->named_tensors(), tb = wb->named_tensors();
  double most = 0;
  for (size_t i = 0; i < ta.size(); ++i) {
    if (ta[i].name.rfind("model.visual.", 0) != 0) continue;
    int64_t n = 1;
    for (int64_t d : ta[i].shape) n *= d;
    for (int64_t k = 0; k < n; ++k) most = std::max(most, std::fabs(double(ta[i].data[k]) - tb[i].data[k]));
  }
  return most;
}

TEST(VisionRows, SftAndGrpoRunWithPictures) {
  set_num_threads(1);
  test::TempDir dir;
  const std::string model = dir.path() + "/model", data = dir.path() + "/shapes";
  write_byte_model(model, "qwen3-vl", "tiny", 3);
  const ShapesSplit split = write_shapes_dataset(data, 8, 4, /*seed=*/5, "easy", /*listing_fraction=*/0.5);
  const std::vector<std::string> common = {
      "data.train_files=" + split.train_path, "data.val_files=" + split.test_path,
      "data.max_prompt_length=64",            "data.max_response_length=6",
      "data.train_batch_size=2",              "actor_rollout_ref.rollout.n=2",
      "actor_rollout_ref.actor.ppo_mini_batch_size=2", "trainer.seed=0"};

  std::vector<std::string> sft = common;
  sft.insert(sft.end(), {"actor_rollout_ref.model.path=" + model, "sft.batch_size=4", "sft.max_length=256",
                         "sft.lr=1e-3", "trainer.default_local_dir=" + dir.path() + "/sft"});
  const SftSummary s = run_sft(load_config("", sft), /*quiet=*/true);
  EXPECT_EQ(s.steps, 2);
  EXPECT_TRUE(std::isfinite(s.final_loss));
  EXPECT_TRUE(file_exists(s.model_dir + "/preprocessor_config.json"));
  EXPECT_GT(tower_change(model, s.model_dir), 0.0) << "SFT's gradient never reached the vision tower";

  std::vector<std::string> grpo = common;
  grpo.insert(grpo.end(), {"actor_rollout_ref.model.path=" + s.model_dir, "actor_rollout_ref.actor.optim.lr=1e-3",
                           "trainer.total_training_steps=2", "trainer.test_freq=2", "trainer.save_freq=2",
                           "trainer.default_local_dir=" + dir.path() + "/grpo"});
  TrainOptions opt;
  opt.quiet = true;
  GrpoTrainer(load_config("", grpo), opt).run();
  const std::vector<nlohmann::json> m = read_metrics(dir.path() + "/grpo/metrics.jsonl");
  bool validated = false;
  for (const nlohmann::json& line : m) {
    if (line.contains("actor/pg_loss")) {
      EXPECT_TRUE(std::isfinite(line["actor/pg_loss"].get<double>())) << line;
      // The tower's share: once per prompt in the rollout (2 prompts of one 64x64 picture: 16 patch rows
      // each), forward and backward in the update.
      EXPECT_EQ(line["perf/vision_gen_patches"].get<double>(), 2 * 16) << line;
      EXPECT_GT(line["perf/vision_train_patches"].get<double>(), 0) << line;
      EXPECT_GT(line["perf/vision_train_flops"].get<double>(), 0) << line;
      EXPECT_GE(line["timing_s/vision_gen"].get<double>(), 0) << line;
      EXPECT_LE(line["timing_s/vision_train"].get<double>(), line["timing_s/step"].get<double>()) << line;
    }
    validated = validated || line.contains("val/accuracy");
  }
  EXPECT_TRUE(validated);
  const std::string ckpt = dir.path() + "/grpo/checkpoints/global_step_2";
  EXPECT_TRUE(file_exists(ckpt + "/preprocessor_config.json"));
  EXPECT_GT(tower_change(s.model_dir, ckpt), 0.0) << "GRPO's update never reached the vision tower";
}

}  // namespace
