// Sharded moments (loop/optimizer_shards.h) in a run checkpoint, as N ranks write them: three shards of
// uneven size (one empty) staged and placed by a save, read back over ranges that start, end and cross
// inside shards (as another number of ranks reads them), and the same range from a checkpoint saved whole.
// A shard that is missing, truncated, corrupt or a manifest with a gap or for another model is refused with a
// message naming the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/files.h"
#include "loop/optimizer_shards.h"
#include "loop/trainer_state.h"
#include "model/presets.h"
#include "model/weights.h"
#include "temp_dir.h"
#include "test_util.h"
#include "train/optimizer.h"

using namespace grpo;
namespace fs = std::filesystem;

namespace {

// A tiny model's checkpoint whose moments (m[i] = i, v[i] = -i) were saved by three ranks.
class OptimizerShards : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = tmp_.path() + "/run";
    n_ = w_.params().numel();
    for (int64_t i = 0; i < n_; ++i) {
      m_.push_back(static_cast<float>(i));
      v_.push_back(static_cast<float>(-i));
    }
    st_.global_step = 3;
    const std::string stage = moment_stage_dir(run_, st_.global_step);
    make_dirs(stage);
    const int64_t cuts[4] = {0, n_ / 3, n_ / 3, n_};  // rank 1 holds nothing
    std::vector<nlohmann::json> shards;
    for (int r = 0; r < 3; ++r)
      shards.push_back(
          write_moment_shard(stage, r, {cuts[r], cuts[r + 1], m_.data() + cuts[r], v_.data() + cuts[r]}, n_));
    dir_ = save_run_checkpoint(run_, w_, ShardedMoments{stage, shards, n_, 7}, st_, DType::F32, tmp_.path());
  }
  // Moments [lo, hi) read back, or the error's message.
  std::string read(int64_t lo, int64_t hi, std::vector<float>* m = nullptr, std::vector<float>* v = nullptr) {
    std::vector<float> mm(hi - lo), vv(hi - lo);
    try {
      read_moment_range(dir_, lo, hi, n_, mm.data(), vv.data());
    } catch (const Error& e) {
      return e.what();
    }
    if (m) *m = mm;
    if (v) *v = vv;
    return "";
  }
  test::TempDir tmp_;
  ModelWeights w_{preset_config("qwen3", "tiny")};
  std::string run_, dir_;
  int64_t n_ = 0;
  std::vector<float> m_, v_;
  TrainerState st_;
};

TEST_F(OptimizerShards, ReadBackOverAnyRangeAsAnotherNumberOfRanks) {
  EXPECT_TRUE(has_moment_shards(dir_));
  EXPECT_FALSE(file_exists(dir_ + "/optimizer.safetensors"));
  EXPECT_FALSE(fs::exists(moment_stage_dir(run_, 3)));  // the stage is gone
  for (const auto& [lo, hi] : std::vector<std::pair<int64_t, int64_t>>{
           {0, n_}, {n_ / 3 - 5, n_ / 3 + 5}, {n_ / 2, n_ / 2 + 1}, {n_ - 1, n_}, {7, 7}, {0, n_ / 4}}) {
    std::vector<float> m, v;
    ASSERT_EQ(read(lo, hi, &m, &v), "") << lo << " " << hi;
    EXPECT_EQ(m, std::vector<float>(m_.begin() + lo, m_.begin() + hi));
    EXPECT_EQ(v, std::vector<float>(v_.begin() + lo, v_.begin() + hi));
  }
  ModelWeights w2(w_.config());  // through the checkpoint loader, weights and state included
  std::vector<float> m(10), v(10);
  int64_t steps = 0;
  const TrainerState st = load_run_checkpoint_range(dir_, w2, 100, 110, n_, m.data(), v.data(), &steps);
  EXPECT_EQ(st.global_step, 3);
  EXPECT_EQ(steps, 7);
  EXPECT_EQ(m[0], 100.0f);
  EXPECT_EQ(v[9], -109.0f);

  train::AdamW whole(w_.config());  // a checkpoint saved whole (one process) reads the same way
  std::copy(m_.begin(), m_.end(), whole.m());
  std::copy(v_.begin(), v_.end(), whole.v());
  st_.global_step = 4;
  const std::string one = save_run_checkpoint(run_, w_, whole, st_, DType::F32, tmp_.path());
  EXPECT_FALSE(has_moment_shards(one));
  load_run_checkpoint_range(one, w2, 100, 110, n_, m.data(), v.data(), &steps);
  EXPECT_EQ(m[0], 100.0f);
  EXPECT_EQ(v[9], -109.0f);
}

TEST_F(OptimizerShards, BadShardsAreRefusedNamingTheFile) {
  const std::string shard2 = dir_ + "/optimizer/shard_2.safetensors", manifest = dir_ + "/optimizer/manifest.json";
  const std::string bytes = read_file(shard2);
  {  // one byte flipped in the last shard's data
    std::string bad = bytes;
    bad[bad.size() - 3] ^= 0x40;
    write_file_atomic(shard2, bad);
  }
  EXPECT_TRUE(test::contains(read(0, n_), shard2 + ": SHA-256")) << read(0, n_);
  EXPECT_EQ(read(0, n_ / 3), "");  // a rank whose range is elsewhere reads only its own shards
  write_file_atomic(shard2, bytes.substr(0, bytes.size() - 8));
  EXPECT_TRUE(test::contains(read(0, n_), shard2 + ": " + std::to_string(bytes.size() - 8) + " bytes")) << read(0, n_);
  fs::remove(shard2);
  EXPECT_TRUE(test::contains(read(0, n_), shard2 + ": missing")) << read(0, n_);
  write_file_atomic(shard2, bytes);
  EXPECT_EQ(read(0, n_), "");

  const nlohmann::json good = nlohmann::json::parse(read_file(manifest));
  nlohmann::json gap = good;
  gap["shards"].erase(1);  // rank 1's empty shard: no gap
  write_file_atomic(manifest, gap.dump());
  EXPECT_EQ(read(0, n_), "");
  gap["shards"].erase(0);
  write_file_atomic(manifest, gap.dump());
  EXPECT_TRUE(test::contains(read(0, n_), manifest + ": shards[0] covers")) << read(0, n_);
  nlohmann::json other = good;
  other["numel"] = n_ + 16;
  write_file_atomic(manifest, other.dump());
  EXPECT_TRUE(test::contains(read(0, n_), manifest + ": \"numel\" is")) << read(0, n_);
  write_file_atomic(manifest, "{\"format\": ");
  EXPECT_TRUE(test::contains(read(0, n_), manifest + ": not valid JSON")) << read(0, n_);
}

}  // namespace
