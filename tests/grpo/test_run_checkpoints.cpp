// Run checkpoints (grpo/trainer_state.h): optimizer and trainer state land inside the checkpoint folder and
// load back; trainer.max_actor_ckpt_to_keep keeps the newest N (latest always valid); a failed save leaves
// no partial or scratch folder behind and the previous checkpoints intact.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/error.h"
#include "core/files.h"
#include "grpo/temp_dir.h"
#include "grpo/trainer_state.h"
#include "model/presets.h"
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
  adam.m().flat().f32()[3] = 0.25f;
  adam.v().flat().f32()[5] = 0.5f;
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
  EXPECT_EQ(adam2.m().flat().f32()[3], 0.25f);
  EXPECT_EQ(adam2.v().flat().f32()[5], 0.5f);

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
