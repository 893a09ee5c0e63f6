// A run checkpoint as N ranks write it under mixed precision (loop/flat_shards.h, trainer_state.h): three
// ranks' model files (bf16, from the shadow), moment shards of uneven size (one empty) and f32 master shards,
// staged and placed by a save. The folder is a Hugging Face model (index and three files); the moments read
// back over ranges that start, end and cross inside shards (as another number of ranks reads them), and the
// same range from a checkpoint saved whole; a resume loads the exact f32 masters, whole or as one rank's
// shard. A shard that is missing, truncated, corrupt or a manifest with a gap or for another model is refused
// with a message naming the file.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/files.h"
#include "error_of.h"
#include "loop/flat_shards.h"
#include "loop/trainer_state.h"
#include "model/init.h"
#include "model/presets.h"
#include "model/weights.h"
#include "temp_dir.h"
#include "test_util.h"
#include "train/optimizer.h"

using namespace grpo;
namespace fs = std::filesystem;

namespace {

// A tiny model's checkpoint whose moments (m[i] = i, v[i] = -i) and masters were saved by three ranks.
class ShardedRunCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = tmp_.path() + "/run";
    init_parameters(w_, 11);
    w_.bf16();
    n_ = w_.params().numel();
    for (int64_t i = 0; i < n_; ++i) {
      m_.push_back(static_cast<float>(i));
      v_.push_back(static_cast<float>(-i));
    }
    st_.global_step = 3;
    ShardedCheckpoint ck;
    ck.stage_dir = checkpoint_stage_dir(run_, st_.global_step);
    make_dirs(ck.stage_dir + "/model");
    ck.parts = model_file_parts(w_.config(), 3);
    ck.model_dtype = DType::BF16;
    ck.trained_numel = ck.layout_numel = n_;
    ck.steps = 7;
    const int64_t cuts[4] = {0, n_ / 3, n_ / 3, n_};  // rank 1 holds nothing
    const float* masters = w_.params().flat().f32();
    for (int r = 0; r < 3; ++r) {
      if (!ck.parts[r].tensors.empty())
        w_.write_file_part(ck.stage_dir + "/model/" + ck.parts[r].file, ck.parts[r], DType::BF16);
      ck.moments.push_back(write_flat_shard(moment_shards(), ck.stage_dir, r,
                                            {cuts[r], cuts[r + 1], {m_.data() + cuts[r], v_.data() + cuts[r]}}, n_));
      ck.masters.push_back(
          write_flat_shard(master_shards(), ck.stage_dir, r, {cuts[r], cuts[r + 1], {masters + cuts[r]}}, n_));
    }
    dir_ = save_run_checkpoint(run_, w_.config(), ck, st_, tmp_.path());
  }
  // Moments [lo, hi) read back, or the error's message.
  std::string read(int64_t lo, int64_t hi, std::vector<float>* m = nullptr, std::vector<float>* v = nullptr) {
    std::vector<float> mm(hi - lo), vv(hi - lo);
    try {
      FlatShardReader(moment_shards(), dir_, n_).read(lo, hi, {mm.data(), vv.data()});
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

TEST_F(ShardedRunCheckpoint, ReadBackOverAnyRangeAsAnotherNumberOfRanks) {
  EXPECT_TRUE(has_flat_shards(moment_shards(), dir_));
  EXPECT_TRUE(has_flat_shards(master_shards(), dir_));
  EXPECT_FALSE(file_exists(dir_ + "/optimizer.safetensors"));
  EXPECT_FALSE(fs::exists(checkpoint_stage_dir(run_, 3)));  // the stage is gone
  for (const auto& [lo, hi] : std::vector<std::pair<int64_t, int64_t>>{
           {0, n_}, {n_ / 3 - 5, n_ / 3 + 5}, {n_ / 2, n_ / 2 + 1}, {n_ - 1, n_}, {7, 7}, {0, n_ / 4}}) {
    std::vector<float> m, v;
    ASSERT_EQ(read(lo, hi, &m, &v), "") << lo << " " << hi;
    EXPECT_EQ(m, std::vector<float>(m_.begin() + lo, m_.begin() + hi));
    EXPECT_EQ(v, std::vector<float>(v_.begin() + lo, v_.begin() + hi));
  }
  // The model folder: the ranks' bf16 files and their index, the bf16 shadow as it was.
  EXPECT_TRUE(file_exists(dir_ + "/model.safetensors.index.json"));
  const auto bf16 = ModelWeights::load(dir_);
  bf16->bf16();
  ASSERT_EQ(std::memcmp(bf16->bf16_arena()->flat().data, w_.bf16_arena()->flat().data, n_ * 2), 0);

  ModelWeights w2(w_.config());  // through the checkpoint loader: the exact f32 masters, moments and state
  std::vector<float> m(10), v(10);
  int64_t steps = 0;
  const TrainerState st = load_run_checkpoint_range(dir_, w2, 100, 110, n_, m.data(), v.data(), &steps);
  EXPECT_EQ(st.global_step, 3);
  EXPECT_EQ(steps, 7);
  EXPECT_EQ(m[0], 100.0f);
  EXPECT_EQ(v[9], -109.0f);
  EXPECT_EQ(std::memcmp(w2.params().flat().data, w_.params().flat().data, n_ * 4), 0);
  ModelWeights w3(w_.config());  // one rank of two under mixed precision: the shadow whole, its masters exact
  w3.shard_gemm_masters(n_ / 2, n_);
  load_run_checkpoint_range(dir_, w3, 100, 110, n_, m.data(), v.data(), &steps);
  EXPECT_EQ(std::memcmp(w3.bf16_arena()->flat().data, w_.bf16_arena()->flat().data, n_ * 2), 0);
  EXPECT_EQ(std::memcmp(w3.params().flat().f32() + n_ / 2, w_.params().flat().f32() + n_ / 2, (n_ - n_ / 2) * 4), 0);

  train::AdamW whole(w_.config());  // a checkpoint saved whole (one process) reads the same way
  std::copy(m_.begin(), m_.end(), whole.m());
  std::copy(v_.begin(), v_.end(), whole.v());
  st_.global_step = 4;
  const std::string one = save_run_checkpoint(run_, w_, whole, st_, DType::F32, tmp_.path());
  EXPECT_FALSE(has_flat_shards(moment_shards(), one));
  load_run_checkpoint_range(one, w2, 100, 110, n_, m.data(), v.data(), &steps);
  EXPECT_EQ(m[0], 100.0f);
  EXPECT_EQ(v[9], -109.0f);
}

// With blocks smaller than a shard, a reader checks the blocks it reads: a corrupt byte in a block no rank
// asks for goes unread, one in a block it reads is refused naming the file and the bytes; an entry's block
// list that does not match the file's size is refused naming the manifest.
TEST_F(ShardedRunCheckpoint, AReaderChecksTheBlocksItReads) {
  const std::string stage = checkpoint_stage_dir(run_, 9);
  const int64_t lo = 0, hi = n_;
  const std::vector<const float*> data = {m_.data(), v_.data()};
  nlohmann::json entry = write_flat_shard(moment_shards(), stage, 0, {lo, hi, data}, n_, 4096);
  ASSERT_GT(entry["block_sha256"].size(), 8u);
  place_flat_shards(moment_shards(), stage, tmp_.path() + "/blocks", {entry}, n_);
  const std::string dir = tmp_.path() + "/blocks", file = dir + "/optimizer/shard_0.safetensors";
  std::string bytes = read_file(file);
  bytes[bytes.size() - 3] ^= 0x40;  // the last block: the end of v
  write_file_atomic(file, bytes);
  std::vector<float> m(100), v(100);
  FlatShardReader reader(moment_shards(), dir, n_);
  reader.read(0, 100, {m.data(), v.data()});  // the header's block and the start of m and v
  EXPECT_EQ(m[99], 99.0f);
  EXPECT_EQ(v[99], -99.0f);
  const std::string error = test::error_of([&] { reader.read(n_ - 100, n_, {m.data(), v.data()}); });
  EXPECT_TRUE(test::contains(error, file + ": SHA-256")) << error;
  EXPECT_TRUE(test::contains(error, "of bytes [")) << error;
  nlohmann::json manifest = nlohmann::json::parse(read_file(dir + "/optimizer/manifest.json"));
  manifest["shards"][0]["block_sha256"].erase(0);
  write_file_atomic(dir + "/optimizer/manifest.json", manifest.dump());
  const std::string listed = test::error_of([&] {
    FlatShardReader(moment_shards(), dir, n_).read(0, 1, {m.data(), v.data()});
  });
  EXPECT_TRUE(test::contains(listed, "one block_sha256 per block")) << listed;
}

// The master shards read through a counter: how many elements of each tensor a load asks them for.
class CountingSource final : public ParameterSource {
 public:
  explicit CountingSource(ParameterSource& inner) : inner_(inner) {}
  void read(const std::string& name, int64_t numel, int64_t first, int64_t count, float* dst) override {
    read_[name] += count;
    inner_.read(name, numel, first, count, dst);
  }
  void done(const std::string& name) override { inner_.done(name); }
  int64_t elements(const std::string& name) const { return read_.count(name) ? read_.at(name) : 0; }

 private:
  ParameterSource& inner_;
  std::map<std::string, int64_t> read_;
};

// A rank resuming under mixed precision reads the masters of its own slice of the GEMM weights (and the
// other tensors whole, which it keeps in f32); their bf16 shadow comes from the model files, bit for bit the
// shadow that was saved.
TEST_F(ShardedRunCheckpoint, AResumingRankReadsOnlyItsOwnSliceOfTheMasters) {
  for (const auto& [lo, hi] :
       std::vector<std::pair<int64_t, int64_t>>{{0, n_ / 3}, {n_ / 3, n_}, {n_ / 2 + 1, n_ / 2 + 1000}}) {
    ModelWeights w(w_.config());
    w.shard_gemm_masters(lo, hi);
    MasterShardSource masters(dir_, w.params());
    CountingSource counted(masters);
    w.load_from(counted, Checkpoint::open(dir_));
    int64_t asked = 0, own = 0;
    for (const auto& [name, view] : w.params().entries()) {
      const int64_t off = w.params().offset(name), n = view.numel();
      const int64_t inside = std::max<int64_t>(0, std::min(off + n, hi) - std::max(off, lo));
      EXPECT_EQ(counted.elements(name), is_gemm_weight(name) ? inside : n) << name;
      asked += counted.elements(name);
      own += is_gemm_weight(name) ? inside : 0;
    }
    EXPECT_LT(asked - own, n_ / 4);  // the rest is the norms and the embedding, not every rank's masters
    EXPECT_EQ(std::memcmp(w.bf16_arena()->flat().data, w_.bf16_arena()->flat().data, n_ * 2), 0);
    EXPECT_EQ(std::memcmp(w.params().flat().f32() + lo, w_.params().flat().f32() + lo, (hi - lo) * 4), 0);
  }
}

TEST_F(ShardedRunCheckpoint, BadShardsAreRefusedNamingTheFile) {
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
  write_file_atomic(manifest, good.dump());

  // The masters are checked the same way when a resume loads them.
  const std::string master0 = dir_ + "/master/shard_0.safetensors";
  std::string bad = read_file(master0);
  bad[bad.size() - 5] ^= 0x10;
  write_file_atomic(master0, bad);
  ModelWeights w2(w_.config());
  std::vector<float> m(1), v(1);
  int64_t steps = 0;
  const std::string error =
      test::error_of([&] { load_run_checkpoint_range(dir_, w2, 0, 1, n_, m.data(), v.data(), &steps); });
  EXPECT_TRUE(test::contains(error, master0 + ": SHA-256")) << error;
  fs::remove(master0);
  const std::string missing =
      test::error_of([&] { load_run_checkpoint_range(dir_, w2, 0, 1, n_, m.data(), v.data(), &steps); });
  EXPECT_TRUE(test::contains(missing, master0 + ": missing")) << missing;
}

}  // namespace
