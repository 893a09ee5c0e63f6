// Run checkpoints (loop/trainer_state.h): optimizer and trainer state land inside the checkpoint folder and
// load back; trainer.max_actor_ckpt_to_keep keeps the newest N (latest always valid); a failed save leaves
// no partial or scratch folder behind and the previous checkpoints intact. A frozen vision tower has no
// moments in the file, and they load back into the text prefix.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/error.h"
#include "core/files.h"
#include "temp_dir.h"
#include "loop/trainer_state.h"
#include "model/presets.h"
#include "model/safetensors.h"
#include "model/weights.h"
#include "train/optimizer.h"

using namespace grpo;
namespace fs = std::filesystem;

namespace {

// Names in <run>/checkpoints other than global_step_* folders and `latest` (scratch, partial folders).
std::vector<std::string> leftovers(const std::string& run) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(run + "/checkpoints")) {
    const std::string name = e.path().filename().string();
    const bool step_dir = name.rfind("global_step_", 0) == 0 && name.find('.') == std::string::npos;
    if (!step_dir && name != "latest") out.push_back(name);
  }
  return out;
}

std::vector<std::string> names(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& p : paths) out.push_back(fs::path(p).filename().string());
  return out;
}

}  // namespace

TEST(RunCheckpoints, StateInsideTheFolderAndTheNewestKept) {
  test::TempDir tmp;
  const std::string run = tmp.path() + "/run";
  ModelWeights w(preset_config("qwen3", "tiny"));
  train::AdamW adam(w.config());
  adam.m()[3] = 0.25f;
  adam.v()[5] = 0.5f;
  TrainerState st;
  for (int64_t step = 1; step <= 5; ++step) {
    st.global_step = step;
    st.epoch_position = 10 * step;
    adam.set_steps(step);
    const std::string dir = save_run_checkpoint(run, w, adam, st, DType::F32, tmp.path(), /*max_to_keep=*/2);
    EXPECT_TRUE(file_exists(dir + "/optimizer.safetensors"));
    EXPECT_TRUE(file_exists(dir + "/trainer_state.json"));
    EXPECT_EQ(latest_run_checkpoint(run), dir);
    EXPECT_TRUE(leftovers(run).empty()) << leftovers(run)[0];
  }
  EXPECT_EQ(names(run_checkpoints(run)), (std::vector<std::string>{"global_step_4", "global_step_5"}));

  ModelWeights w2(w.config());
  train::AdamW adam2(w.config());
  const TrainerState back = load_run_checkpoint(latest_run_checkpoint(run), w2, adam2);
  EXPECT_EQ(back.global_step, 5);
  EXPECT_EQ(back.epoch_position, 50);
  EXPECT_EQ(adam2.steps(), 5);
  EXPECT_EQ(adam2.m()[3], 0.25f);
  EXPECT_EQ(adam2.v()[5], 0.5f);

  // 0 keeps every checkpoint.
  st.global_step = 6;
  save_run_checkpoint(run, w, adam, st, DType::F32, tmp.path(), 0);
  EXPECT_EQ(run_checkpoints(run).size(), 3u);
}

TEST(RunCheckpoints, AFailedSaveLeavesNothingBehind) {
  test::TempDir tmp;
  const std::string run = tmp.path() + "/run";
  ModelWeights w(preset_config("qwen3", "tiny"));
  train::AdamW adam(w.config());
  TrainerState st;
  st.global_step = 1;
  const std::string first = save_run_checkpoint(run, w, adam, st, DType::F32, tmp.path(), 1);
  // A folder in the way that is not a checkpoint: the save of step 2 must fail.
  fs::create_directories(run + "/checkpoints/global_step_2");
  write_file_atomic(run + "/checkpoints/global_step_2/notes.txt", "not a checkpoint\n");
  st.global_step = 2;
  EXPECT_THROW(save_run_checkpoint(run, w, adam, st, DType::F32, tmp.path(), 1), Error);
  EXPECT_TRUE(leftovers(run).empty()) << leftovers(run)[0];
  EXPECT_EQ(latest_run_checkpoint(run), first);
  EXPECT_TRUE(file_exists(first + "/optimizer.safetensors"));
  EXPECT_THROW(save_run_checkpoint(run, w, adam, st, DType::F32, tmp.path(), -1), Error);
}

TEST(RunCheckpoints, FrozenVisionTowerSavesAndLoadsTheTextMomentsOnly) {
  test::TempDir tmp;
  const std::string run = tmp.path() + "/run";
  ModelWeights w(preset_config("qwen3-vl", "tiny"));
  train::AdamW adam(w.config(), 0, -1, /*with_vision=*/false);  // the text prefix of the layout
  ASSERT_LT(adam.end(), w.params().numel());
  adam.m()[3] = 0.25f;
  adam.v()[adam.end() - 1] = 0.5f;
  TrainerState st;
  st.global_step = 1;
  const std::string dir = save_run_checkpoint(
      run, w, OptimizerMoments{adam.m(), adam.v(), adam.end(), 7}, st, DType::F32, tmp.path());
  SafetensorsFile f = SafetensorsFile::open(dir + "/optimizer.safetensors");
  EXPECT_TRUE(f.find("m.model.language_model.norm.weight"));
  EXPECT_FALSE(f.find("m.model.visual.patch_embed.proj.weight"));
  EXPECT_FALSE(f.find("v.model.visual.merger.linear_fc2.bias"));

  ModelWeights w2(w.config());
  std::vector<float> m(adam.end()), v(adam.end());
  int64_t steps = 0;
  load_run_checkpoint(dir, w2, m.data(), v.data(), adam.end(), &steps);
  EXPECT_EQ(steps, 7);
  EXPECT_EQ(m[3], 0.25f);
  EXPECT_EQ(v[adam.end() - 1], 0.5f);
  // Loading them as if the tower had moments is an error naming the missing tensor.
  std::vector<float> mw(w.params().numel()), vw(mw.size());
  EXPECT_THROW(load_run_checkpoint(dir, w2, mw.data(), vw.data(), w.params().numel(), &steps), Error);
}
