// The gradient buckets of ZeRO (train/zero_layout.h, train/grad_reducer.h) on Qwen3-VL, in one process:
// - every bucket starts only once the backward is done writing its gradients. The local communicator copies
//   a bucket into the shard the moment it starts, so after a real forward and backward (tower, DeepStack and
//   merger included) the shard equals the gradients bit for bit only if no gradient changed after its
//   bucket started; under MPI such a bucket would be read by the communication thread while the backward
//   still adds to it (a timing-dependent result);
// - the buckets start in the same order whether the events come one by one (an overlapped backward) or all
//   at once (launch_rest: a rank with an empty micro-batch), as every rank must post the same collectives
//   in the same order.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "core/rng.h"
#include "core/threads.h"
#include "model/decoder.h"
#include "model/init.h"
#include "model/picture.h"
#include "model/presets.h"
#include "model/weights.h"
#include "train/grad_reducer.h"
#include "train/zero_layout.h"
#include "test_util.h"

using namespace grpo;
using namespace grpo::train;

namespace {

// A local communicator that records the ranges of the reduce-scatters it is asked for, in order.
class RecordingCommunicator final : public comm::Communicator {
 public:
  std::vector<std::pair<int64_t, int64_t>> reductions;

  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "recording"; }
  std::string host() const override { return inner_.host(); }
  comm::Request reduce_scatter(const float* full, int64_t lo, int64_t hi, const comm::Partition& part, float* shard,
                               comm::Wire wire, bool accumulate) override {
    reductions.emplace_back(lo, hi);
    return inner_.reduce_scatter(full, lo, hi, part, shard, wire, accumulate);
  }
  comm::Request all_gather(void* data, std::vector<int64_t> off) override { return inner_.all_gather(data, off); }
  comm::Request gather(const void* mine, void* out, std::vector<int64_t> off, int root) override {
    return inner_.gather(mine, out, off, root);
  }
  std::vector<std::string> all_gather_bytes(std::string_view mine) override { return inner_.all_gather_bytes(mine); }
  void broadcast(void* data, int64_t bytes, int root) override { inner_.broadcast(data, bytes, root); }
  void barrier() override {}

 private:
  comm::LocalCommunicator inner_;
};

// Three sequences: two with a picture (4 x 2 and 4 x 4 patches), one text only.
PackedBatch batch_with_pictures(const ModelConfig& mc, uint64_t seed) {
  Rng rng(seed);
  PackedBatch b;
  b.clear();
  const int64_t Pd = mc.vision.patch_dim();
  for (int64_t width : {2, 4, 0}) {
    std::vector<int32_t> tok;
    auto text = [&](int64_t n) {
      for (int64_t k = 0; k < n; ++k) tok.push_back(static_cast<int32_t>(rng.below(256)));
    };
    text(3);
    std::vector<PicturePtr> pictures;
    if (width > 0) {
      const ImageGrid g{1, 4, width};
      std::vector<float> px(static_cast<size_t>(g.patches() * Pd));
      for (float& x : px) x = static_cast<float>(2 * rng.uniform() - 1);
      pictures.push_back(make_picture(g, std::move(px), Pd));
      tok.push_back(static_cast<int32_t>(mc.vision_start_token_id));
      tok.insert(tok.end(), g.patches() / mc.vision.merge_factor(), static_cast<int32_t>(mc.image_token_id));
      tok.push_back(static_cast<int32_t>(mc.vision_end_token_id));
    }
    text(6);
    b.add_sequence(tok);
    add_pictures(b, pictures);
  }
  return b;
}

struct BucketCase {
  const char* preset;  // qwen3-vl tiny: 2 tower blocks, DeepStack after block 0; small: 4, after blocks 1 and 2
  bool checkpoint_activations;
  ComputeMode mode = ComputeMode::F32;
};

void PrintTo(const BucketCase& k, std::ostream* os) {
  *os << k.preset << (k.checkpoint_activations ? ", recomputed" : "") << (k.mode == ComputeMode::BF16 ? ", bf16" : "");
}

class GradBuckets : public ::testing::TestWithParam<BucketCase> {
 protected:
  static void SetUpTestSuite() { set_num_threads(1); }
};

TEST_P(GradBuckets, TowerBlocksAreFinalAtTheirOwnEvents) {
  const ModelConfig c = preset_config("qwen3-vl", GetParam().preset);
  Arena a(DType::F32);
  declare_parameters(c, a);
  const ZeroLayout z = zero_layout(c, a);
  const int64_t L = c.num_hidden_layers, depth = c.vision.depth;
  ASSERT_EQ(static_cast<int64_t>(z.vision_blocks.size()), depth);
  for (int64_t b = 0; b < depth; ++b) {  // the backward finishes block depth-1 first, block 0 last
    EXPECT_EQ(z.vision_block_event(b), L + depth - b);
    EXPECT_EQ(z.ready_event(z.vision_blocks[b].first, z.vision_blocks[b].second), L + depth - b) << "block " << b;
  }
  auto event_of = [&](const std::string& name) {
    const int64_t lo = a.offset(name);
    return z.ready_event(lo, lo + 1);
  };
  EXPECT_EQ(event_of("model.visual.merger.linear_fc1.weight"), z.vision_block_event(depth - 1));
  const auto& ds = c.vision.deepstack_visual_indexes;
  for (size_t k = 0; k < ds.size(); ++k)
    EXPECT_EQ(event_of(cat("model.visual.deepstack_merger_list.", k, ".linear_fc1.weight")), z.vision_block_event(ds[k]));
  EXPECT_EQ(event_of("model.visual.patch_embed.proj.weight"), z.end_event);
  EXPECT_EQ(event_of("model.visual.pos_embed.weight"), z.end_event);
}

TEST_P(GradBuckets, EveryBucketStartsWithItsGradientsFinal) {
  const BucketCase& k = GetParam();
  ModelWeights w(preset_config("qwen3-vl", k.preset));
  init_parameters(w, /*seed=*/7);
  const ModelConfig& c = w.config();
  Arena grads(DType::F32);
  declare_parameters(c, grads);
  grads.allocate();
  grads.zero();
  const ModelTensors g = resolve_tensors(c, grads);
  const int64_t n = grads.numel();
  comm::LocalCommunicator local;
  const comm::Partition part = comm::Partition::even(n, 1);
  GradReducer reducer(local, part, c, grads, comm::Wire::F32, /*bucket_elems=*/1001, /*overlap=*/true);
  DecoderOptions dopt;
  dopt.checkpoint_activations = k.checkpoint_activations;
  dopt.mode = k.mode;
  Decoder dec(w, dopt);
  dec.set_hooks(&reducer);
  std::vector<float> shard(static_cast<size_t>(n), 0.0f);
  // Two micro-batches, reduced after the second (the first one's gradients are already there).
  for (int micro = 0; micro < 2; ++micro) {
    const PackedBatch b = batch_with_pictures(c, 40 + micro);
    std::vector<float> lp(b.T()), ent(b.T()), dlp(b.T()), dent(b.T(), 0.0f);
    dec.forward(b, lp.data(), ent.data());
    Rng rng(90 + micro);
    for (float& x : dlp) x = static_cast<float>(2 * rng.uniform() - 1);
    if (micro == 1) reducer.arm(grads.flat().f32(), shard.data(), /*accumulate=*/false);
    dec.backward(dlp.data(), dent.data(), g);
  }
  reducer.launch_rest();
  reducer.wait();
  const float* full = grads.flat().f32();
  for (const auto& [name, view] : grads.entries()) {
    const int64_t at = grads.offset(name);
    int64_t changed = 0;
    for (int64_t i = 0; i < view.numel(); ++i) changed += std::memcmp(&full[at + i], &shard[at + i], 4) != 0;
    EXPECT_EQ(changed, 0) << name << ": gradients written after their bucket started";
  }
  double moved = 0;
  const TensorView t = grads.view("model.visual.blocks.0.mlp.linear_fc1.weight");
  for (int64_t i = 0; i < t.numel(); ++i) moved += t.f32()[i] != 0.0f;
  EXPECT_GT(moved, 0) << "the tower's first block got no gradient";
}

// The reducer's hooks, and after each event the gradient arena's resident bytes (mincore), the largest kept.
class ResidentProbe final : public DecoderHooks {
 public:
  ResidentProbe(GradReducer& r, const Arena& grads) : r_(r), grads_(grads) {}
  void head_done() override { r_.head_done(), probe(); }
  void layer_done(int64_t l) override { r_.layer_done(l), probe(); }
  void vision_block_done(int64_t b) override { r_.vision_block_done(b), probe(); }
  void embedding_done() override { r_.embedding_done(), probe(); }
  int64_t resident() const {
    return test::resident_bytes(grads_.flat().f32(), static_cast<size_t>(grads_.numel()) * 4);
  }
  int64_t peak = 0;

 private:
  void probe() { peak = std::max(peak, resident()); }
  GradReducer& r_;
  const Arena& grads_;
};

// Releasing: each bucket's gradients are zeroed and their pages returned once it is reduced, at most
// kReleaseLag buckets behind the backward, so the arena never holds the whole model's gradients; the shard
// is the same as without releasing.
TEST_P(GradBuckets, ReleasedBucketsLeaveNoWholeGradientResident) {
  const BucketCase& k = GetParam();
  ModelWeights w(preset_config("qwen3-vl", k.preset));
  init_parameters(w, /*seed=*/7);
  const ModelConfig& c = w.config();
  DecoderOptions dopt;
  dopt.checkpoint_activations = k.checkpoint_activations;
  dopt.mode = k.mode;
  std::vector<float> shards[2];
  int64_t peak = 0, bytes = 0;
  for (const bool release : {false, true}) {
    Arena grads(DType::F32);
    declare_parameters(c, grads);
    grads.allocate();
    grads.zero_and_release(0, grads.numel());
    bytes = grads.numel() * 4;
    const ModelTensors g = resolve_tensors(c, grads);
    comm::LocalCommunicator local;
    const comm::Partition part = comm::Partition::even(grads.numel(), 1);
    GradReducer reducer(local, part, c, grads, comm::Wire::F32, /*bucket_elems=*/1 << 14, /*overlap=*/true);
    if (release) reducer.release_into(&grads);
    ResidentProbe probe(reducer, grads);
    Decoder dec(w, dopt);
    dec.set_hooks(&probe);
    std::vector<float>& shard = shards[release];
    shard.assign(static_cast<size_t>(grads.numel()), 0.0f);
    const PackedBatch b = batch_with_pictures(c, 40);
    std::vector<float> lp(b.T()), ent(b.T()), dlp(b.T()), dent(b.T(), 0.0f);
    dec.forward(b, lp.data(), ent.data());
    Rng rng(90);
    for (float& x : dlp) x = static_cast<float>(2 * rng.uniform() - 1);
    reducer.arm(grads.flat().f32(), shard.data(), /*accumulate=*/false);
    dec.backward(dlp.data(), dent.data(), g);
    reducer.launch_rest();
    reducer.wait();
    if (!release) continue;
    peak = probe.peak;
    EXPECT_LE(probe.resident(), 2 * sysconf(_SC_PAGESIZE) * 4) << "after the reduction only partial pages stay";
    const float* full = grads.flat().f32();  // (reading maps the zero page: after the resident count)
    int64_t nonzero = 0;
    for (int64_t i = 0; i < grads.numel(); ++i) nonzero += full[i] != 0.0f;
    EXPECT_EQ(nonzero, 0) << "released gradients read zero";
  }
  EXPECT_EQ(shards[0], shards[1]);
  EXPECT_LT(peak, bytes / 2) << "resident gradients at most " << peak << " of " << bytes << " bytes";
  std::printf("[release] %s: resident gradients peaked at %.1f%% of the arena (%lld of %lld bytes)\n", k.preset,
              100.0 * static_cast<double>(peak) / static_cast<double>(bytes), static_cast<long long>(peak),
              static_cast<long long>(bytes));
}

TEST_P(GradBuckets, StartInTheSameOrderEventByEventOrAllAtOnce) {
  const ModelConfig c = preset_config("qwen3-vl", GetParam().preset);
  Arena grads(DType::F32);
  declare_parameters(c, grads);
  grads.allocate();
  grads.zero();
  const int64_t n = grads.numel();
  std::vector<float> shard(static_cast<size_t>(n));
  const comm::Partition part = comm::Partition::even(n, 1);
  auto order = [&](bool overlap) {
    RecordingCommunicator rec;
    GradReducer r(rec, part, c, grads, comm::Wire::F32, /*bucket_elems=*/997, overlap);
    r.arm(grads.flat().f32(), shard.data(), false);
    r.head_done();
    for (int64_t l = c.num_hidden_layers - 1; l >= 0; --l) r.layer_done(l);
    vision_hook_pass(r, c.vision.depth, /*backward=*/true, GetParam().checkpoint_activations);
    r.embedding_done();
    r.launch_rest();
    r.wait();
    return rec.reductions;
  };
  const auto by_event = order(true), at_once = order(false);
  EXPECT_EQ(by_event, at_once);
  std::vector<uint8_t> covered(static_cast<size_t>(n), 0);
  for (const auto& [lo, hi] : at_once)
    for (int64_t i = lo; i < hi; ++i) ++covered[i];
  int64_t once = 0;
  for (uint8_t x : covered) once += x == 1;
  EXPECT_EQ(once, n) << "elements reduced once each";
}

INSTANTIATE_TEST_SUITE_P(VisionTower, GradBuckets,
                         ::testing::Values(BucketCase{"tiny", false}, BucketCase{"tiny", true},
                                           BucketCase{"tiny", false, ComputeMode::BF16}, BucketCase{"small", false}),
                         [](const ::testing::TestParamInfo<BucketCase>& i) {
                           return std::string(i.param.preset) + (i.param.checkpoint_activations ? "_recomputed" : "") +
                                  (i.param.mode == ComputeMode::BF16 ? "_bf16" : "");
                         });

}  // namespace
