// The data-parallel actor (ZeRO-2 over comm::world()) against a single-process actor on the same
// mini-batches. Run alone (N = 1: the data-parallel code path must then be the single-process one, bit
// for bit) and, registered in CTest, under `mpirun -np 2` and `-np 3`: every rank also keeps a
// single-process actor as the reference. Buckets are smaller than most tensors (a tensor spans several),
// sequence counts do not divide by N, and some configurations leave a rank with empty micro-batches.
//
// Tolerances (N > 1). With fp32 on the wire the gradient differs from the single process only by the
// order of its fp32 additions (per-rank partial sums added in rank order instead of one running sum),
// ~1e-7 relative per element: losses, entropies and clip fractions agree to 1e-6 of their scale (1e-5 after
// the first update, from weights that differ in the last bits) and the gradient norm to 1e-5. AdamW moves a
// weight by lr * m / (sqrt(v) + eps): scale-free, so most weights agree to the last bits, but where a
// gradient element cancels to ~1e-10 (sum of terms of ~1e-3 and opposite signs) its few ulps of difference
// are a sizeable fraction of it and of eps, and the move differs by up to a few percent of lr. Hence max
// |dw| <= 0.1 lr per step, and the mean |dw| (a handful of such elements among ~1M) <= 1e-4 lr: a bucket
// missing from the reduction (1% of the elements off by ~lr) fails it a hundred times over, a wrong scale
// fails the norm. With bf16 on the wire each contribution is rounded to 7 stored mantissa bits (relative
// 2^-8): the norm agrees to 2^-8, a cancelling element can flip sign (|dw| up to 2 lr per step), and the
// mean stays below 1e-2 lr.
// bf16 compute is bounded the same way: activations and gradients are rounded to bf16 between operations,
// and a rank's micro-batches have other shapes than the single process's (other GEMM accumulation orders),
// so a last-bit difference ahead of a rounding becomes 2^-8. In bf16 mode a rank's f32 masters of other
// ranks' GEMM weights are stale by design (they travel as bf16): masters are compared on the own shard,
// the bf16 shadow on the whole model.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "core/error.h"
#include "core/rng.h"
#include "core/threads.h"
#include "model/init.h"
#include "model/lora.h"
#include "model/picture.h"
#include "model/presets.h"
#include "train/actor.h"

using namespace grpo;
using namespace grpo::train;

namespace {

std::unique_ptr<ModelWeights> tiny_model() {
  auto w = std::make_unique<ModelWeights>(preset_config("qwen3", "tiny"));
  init_parameters(*w, /*seed=*/7);
  return w;
}

// `count` sequences of 6 to 45 tokens, responses of 1 to 20 tokens, advantages in [-1, 1).
std::vector<TrainSample> samples(int count, uint64_t seed, int64_t vocab) {
  Rng rng(seed);
  std::vector<TrainSample> out(count);
  for (TrainSample& s : out) {
    s.prompt_len = 5 + static_cast<int64_t>(rng.below(20));
    s.tokens.resize(s.prompt_len + 1 + rng.below(20));
    for (int32_t& t : s.tokens) t = static_cast<int32_t>(rng.below(vocab));
    s.advantage = static_cast<float>(2 * rng.uniform() - 1);
  }
  return out;
}

struct WeightDiff {
  double max = 0, mean = 0, fraction_over_1e7 = 0;  // of |a - b| over all elements
};

// The f32 master weights of layout elements [lo, hi).
WeightDiff weight_diff(const ModelWeights& a, const ModelWeights& b, int64_t lo, int64_t hi) {
  const float* x = a.params().flat().f32();
  const float* y = b.params().flat().f32();
  WeightDiff d;
  const double n = static_cast<double>(std::max<int64_t>(1, hi - lo));
  for (int64_t i = lo; i < hi; ++i) {
    const double e = std::fabs(static_cast<double>(x[i]) - y[i]);
    d.max = std::max(d.max, e);
    d.mean += e / n;
    d.fraction_over_1e7 += e > 1e-7 ? 1.0 / n : 0.0;
  }
  return d;
}

// Calls f(layout element, value the decoder reads) for every element of the parameters: in bf16 mode a
// GEMM weight is read from the bf16 shadow (with several ranks its f32 master is up to date only on the
// shard's owner), everything else from the f32 masters.
template <typename F>
void for_each_read_value(ModelWeights& w, F&& f) {
  const Arena& p = w.params();
  Arena* shadow = w.bf16_arena();
  for (const auto& [name, view] : p.entries()) {
    const int64_t at = p.offset(name);
    const bool bf16 = shadow && is_gemm_weight(name);
    const bf16_t* h = bf16 ? shadow->flat().as<bf16_t>() + shadow->offset(name) : nullptr;
    for (int64_t i = 0; i < view.numel(); ++i) f(at + i, bf16 ? bf16_to_f32(h[i]) : view.f32()[i]);
  }
}

// The fraction of elements whose read value (above) differs between two models.
double read_values_differing(ModelWeights& a, ModelWeights& b) {
  std::vector<float> va, vb;
  for_each_read_value(a, [&](int64_t, float v) { va.push_back(v); });
  for_each_read_value(b, [&](int64_t, float v) { vb.push_back(v); });
  int64_t differ = 0;
  for (size_t i = 0; i < va.size(); ++i) differ += va[i] != vb[i];
  return va.empty() ? 0.0 : static_cast<double>(differ) / static_cast<double>(va.size());
}

struct Case {
  const char* name;
  MicroBatching mb;
  DataParallel dp;
  ComputeMode mode = ComputeMode::F32;
  int sequences = 13;
  bool checkpoint_activations = false;
};

// The fraction of zeros among the parameters of layers 1 .. L-1 outside this rank's shard: ZeRO-3 drops them
// between uses (whole pages only; layer 0, used last by the backward, stays).
double dropped_fraction(ModelWeights& w, const comm::Partition& part, int rank) {
  const int64_t lo = w.params().offset(first_layer_tensor(w.config(), 1)), hi = w.params().offset("model.norm.weight");
  int64_t zeros = 0, count = 0;
  for_each_read_value(w, [&](int64_t i, float v) {
    if (i < lo || i >= hi || (i >= part.begin(rank) && i < part.end(rank))) return;
    ++count;
    zeros += v == 0.0f;
  });
  return count ? static_cast<double>(zeros) / count : 1.0;
}

class ActorDist : public ::testing::TestWithParam<Case> {
 protected:
  static void SetUpTestSuite() { set_num_threads(1); }
  comm::Communicator& c = comm::world();
};

TEST_P(ActorDist, UpdatesLikeOneProcess) {
  const Case& k = GetParam();
  SCOPED_TRACE(testing::Message() << k.name << ", rank " << c.rank() << "/" << c.size());
  auto wd = tiny_model(), w1 = tiny_model();
  DecoderOptions dopt;
  dopt.mode = k.mode;
  dopt.checkpoint_activations = k.checkpoint_activations;
  AdamWConfig adam;
  adam.lr = 1e-3f;
  Actor dist(*wd, dopt, k.mb, adam, &c, k.dp);
  Actor one(*w1, dopt, k.mb, adam);
  const bool bf16_wire = c.size() > 1 && k.dp.reduce_wire == comm::Wire::BF16;
  // bf16 compute (N > 1): see the header; bounded like bf16 on the wire.
  const bool loose = bf16_wire || (c.size() > 1 && k.mode == ComputeMode::BF16);
  const comm::Partition part = comm::Partition::even(wd->params().numel(), c.size(), 16);
  const PolicyObjectiveConfig loss;
  for (int step = 0; step < 3; ++step) {
    std::vector<TrainSample> batch = samples(k.sequences, 100 + step, wd->config().vocab_size);
    // Old log-probs as the trainer computes them with several mini-batches: each rank for its share (with
    // bf16 on the wire, from weights that moved by bf16-rounded gradients: 1e-2).
    std::vector<std::vector<float>> lp_dist, lp_one;
    dist.share_logprobs(dist.decoder(), batch, &lp_dist);
    one.share_logprobs(one.decoder(), batch, &lp_one);
    for (size_t i = 0; i < batch.size(); ++i) {
      if (lp_dist[i].empty()) continue;  // another rank's
      ASSERT_EQ(lp_dist[i].size(), lp_one[i].size());
      for (size_t t = 0; t < lp_one[i].size(); ++t)
        ASSERT_NEAR(lp_dist[i][t], lp_one[i][t], (loose ? 1e-2 : 1e-5) * (1 + std::fabs(lp_one[i][t])))
            << "step " << step << " sample " << i << " token " << t;
    }
    std::vector<TrainSample> batch_one = batch;
    for (size_t i = 0; i < batch.size(); ++i) {
      batch[i].old_logprobs = lp_dist[i];
      batch_one[i].old_logprobs = lp_one[i];
    }
    const UpdateStats a = dist.update_policy(batch, loss, LossAggMode::TokenMean, 1.0f, RolloutCorrection{}, adam.lr);
    const UpdateStats b = one.update_policy(batch_one, loss, LossAggMode::TokenMean, 1.0f, RolloutCorrection{}, adam.lr);
    SCOPED_TRACE(testing::Message() << "step " << step);
    // ZeRO-3: two updates in a row (as with two mini-batches a step) before the model is made whole again.
    if (k.dp.zero3 && c.size() > 1 && step % 2 == 1) {
      EXPECT_GT(dropped_fraction(*wd, part, c.rank()), 0.5) << "ZeRO-3 keeps other ranks' layers while training";
      dist.gather_for_rollout();
      EXPECT_LT(dropped_fraction(*wd, part, c.rank()), 0.01) << "gather_for_rollout makes the model whole";
    }
    const bool whole = !k.dp.zero3 || c.size() == 1 || step % 2 == 1;  // weights comparable
    EXPECT_FALSE(a.skipped);
    EXPECT_EQ(a.response_tokens, b.response_tokens);
    if (c.size() == 1) {  // the same code path: bitwise
      EXPECT_EQ(a.loss, b.loss);
      EXPECT_EQ(a.grad_norm, b.grad_norm);
      EXPECT_EQ(weight_diff(*wd, *w1, 0, wd->params().numel()).max, 0.0);
      continue;
    }
    // Step 0 sees identical weights; later steps weights that differ in the last bits.
    const double tol = step == 0 ? 1e-6 : 1e-5;
    EXPECT_NEAR(a.pg_loss, b.pg_loss, tol * (1 + std::fabs(b.pg_loss)));
    EXPECT_NEAR(a.entropy, b.entropy, tol * (1 + std::fabs(b.entropy)));
    EXPECT_NEAR(a.ppo_kl, b.ppo_kl, 1e-6);
    EXPECT_NEAR(a.grad_norm, b.grad_norm, (loose ? 0x1.0p-8 : 1e-5) * b.grad_norm);
    if (!whole) continue;
    // The f32 masters: every one in f32 mode; in bf16 mode this rank's shard (the others' GEMM weights
    // reach it as bf16 only), and after the first update (from equal weights) the values the decoder reads,
    // which differ only where a master's change crossed a bf16 rounding boundary (a piece missing from the
    // all-gather would leave a whole stale range: tens of percent). Later, bf16 compute has amplified the
    // first update's sign flips into ~1% gradient differences, which move 10-20% of the bf16 values.
    const bool shard_only = c.size() > 1 && k.mode == ComputeMode::BF16;
    const WeightDiff d = shard_only ? weight_diff(*wd, *w1, part.begin(c.rank()), part.end(c.rank()))
                                    : weight_diff(*wd, *w1, 0, wd->params().numel());
    // Adam moves a weight by at most ~lr a step, whatever its gradient; one whose gradient is rounding noise
    // (|g| near eps) may move by a different amount, or the other way, after a reduction in another order.
    // So the largest difference is bounded by 2 lr a step, and the f32 modes are held by how few differ.
    EXPECT_LE(d.max, 2.0 * adam.lr * (step + 1)) << "fraction over 1e-7: " << d.fraction_over_1e7;
    if (!loose && step == 0) {  // from equal weights: only the few with noise-sized gradients differ
      EXPECT_LE(d.fraction_over_1e7, 1e-3) << "max " << d.max;
    }
    EXPECT_LE(d.mean, (loose ? 1e-2 : 1e-4) * adam.lr);
    if (shard_only && step == 0) {
      EXPECT_LE(read_values_differing(*wd, *w1), 0.01);  // from equal weights
    }
  }
  // Checkpoint state: rank 0 gets the whole layout's moments, equal to the single process's.
  const Actor::FullMoments fm = dist.gather_for_checkpoint();
  if (c.rank() == 0) {
    ASSERT_NE(fm.m, nullptr);
    double dm = 0;
    for (int64_t i = 0; i < wd->params().numel(); ++i) dm = std::max(dm, std::fabs(double(fm.m[i]) - one.optimizer().m()[i]));
    EXPECT_LE(dm, (loose ? 0x1.0p-8 : 1e-5) * one.optimizer().steps());
  } else {
    EXPECT_EQ(fm.m, nullptr);
  }
}

MicroBatching budget(int64_t tokens) {
  MicroBatching mb;
  mb.dynamic = true;
  mb.max_tokens = tokens;
  return mb;
}

MicroBatching fixed(int64_t size, bool padded) {
  MicroBatching mb;
  mb.dynamic = false;
  mb.micro_batch_size = size;
  mb.pad = padded;
  return mb;
}

DataParallel dp(comm::Wire wire, int64_t bucket, bool overlap, bool per_micro, bool zero3 = false) {
  DataParallel d;
  d.zero3 = zero3;
  d.reduce_wire = wire;
  d.bucket_elems = bucket;
  d.overlap = overlap;
  d.reduce_per_micro_batch = per_micro;
  return d;
}

INSTANTIATE_TEST_SUITE_P(
    Modes, ActorDist,
    ::testing::Values(Case{"fp32 overlap", budget(128), dp(comm::Wire::F32, 10007, true, false)},
                      Case{"fp32 no overlap one bucket", budget(128), dp(comm::Wire::F32, 1 << 24, false, false)},
                      Case{"fp32 per micro-batch", budget(96), dp(comm::Wire::F32, 4099, true, true)},
                      Case{"bf16 wire", budget(128), dp(comm::Wire::BF16, 10007, true, false)},
                      Case{"fixed padded micro-batches", fixed(3, true), dp(comm::Wire::F32, 10007, true, true)},
                      Case{"bf16 compute", budget(128), dp(comm::Wire::F32, 10007, true, false), ComputeMode::BF16},
                      Case{"fewer sequences than ranks x micro-batches", budget(64), dp(comm::Wire::F32, 777, true, true),
                           ComputeMode::F32, 2},
                      Case{"zero3", budget(128), dp(comm::Wire::F32, 10007, true, false, true)},
                      Case{"zero3 per micro-batch, recomputed activations", budget(96),
                           dp(comm::Wire::F32, 4099, true, true, true), ComputeMode::F32, 13, true},
                      Case{"zero3 bf16 compute", budget(128), dp(comm::Wire::BF16, 10007, true, false, true),
                           ComputeMode::BF16}),
    [](const ::testing::TestParamInfo<Case>& i) { return std::string("case") + std::to_string(i.index); });

}  // namespace

namespace {

// Qwen3-VL on several ranks: the tower's parameters (blocks, DeepStack merger, merger, patch and position
// embeddings) sharded like the language model's. Samples with a picture have a home rank (the rank that
// generated them, the only one holding their pictures: other ranks' copies have none here, so a sample
// trained on the wrong rank would lose its picture and fail the comparison); text-only samples go to any
// rank. Every rank keeps a single-process actor over all pictures as the reference; one update must agree
// with it as the text cases do (fp32 on the wire: losses to 1e-6, the gradient norm to 1e-5, weights, the
// tower's included, by at most 2 lr and in the mean by 1e-4 lr; bf16 compute as the text cases' bf16
// compute), and the tower must have moved.
struct VlCase {
  const char* name;
  DataParallel dp;
  bool checkpoint_activations = false;
  bool freeze_vision_tower = false;
  bool lora = false;  // adapters on the language model (the tower frozen): they train, the base stays
  ComputeMode mode = ComputeMode::F32;  // bf16: bounded as the text cases' bf16 compute (see the header)
  bool lora_tower = false;  // with `lora`: adapters on the tower's linears too (all-linear, the tower not frozen)
  // > 0: fixed micro-batches of that many sequences (one each: the ranks' counts differ, 11 sequences being
  // split by home rank, so some rank has empty micro-batches), else a token budget of 48.
  int64_t micro_batch_size = 0;
};

class ActorDistVision : public ::testing::TestWithParam<VlCase> {
 protected:
  static void SetUpTestSuite() { set_num_threads(1); }
  comm::Communicator& c = comm::world();
};

// `count` sequences: text, then (for two in three) one picture of 4 or 8 patch rows' merged pads between the
// vision start and end ids, then more text and a response of 1 to 8 tokens.
std::vector<TrainSample> vl_samples(const ModelConfig& mc, int count, uint64_t seed, int ranks) {
  Rng rng(seed);
  std::vector<TrainSample> out(count);
  const int64_t Pd = mc.vision.patch_dim();
  int with_picture = 0;
  for (int i = 0; i < count; ++i) {
    TrainSample& s = out[i];
    auto text = [&](int64_t n) {
      for (int64_t k = 0; k < n; ++k) s.tokens.push_back(static_cast<int32_t>(rng.below(256)));
    };
    text(2 + rng.below(6));
    if (i % 3 != 2) {
      const ImageGrid g{1, 4, 2 + 2 * static_cast<int64_t>(rng.below(2))};
      std::vector<float> px(static_cast<size_t>(g.patches() * Pd));
      for (float& x : px) x = static_cast<float>(2 * rng.uniform() - 1);
      s.pictures = {make_picture(g, std::move(px), Pd)};
      s.tokens.push_back(static_cast<int32_t>(mc.vision_start_token_id));
      s.tokens.insert(s.tokens.end(), g.patches() / mc.vision.merge_factor(), static_cast<int32_t>(mc.image_token_id));
      s.tokens.push_back(static_cast<int32_t>(mc.vision_end_token_id));
      s.home_rank = ranks > 1 ? with_picture++ % ranks : -1;
    }
    text(1 + rng.below(4));
    s.prompt_len = static_cast<int64_t>(s.tokens.size());
    text(1 + rng.below(8));
    s.advantage = static_cast<float>(2 * rng.uniform() - 1);
  }
  return out;
}

TEST_P(ActorDistVision, UpdatesLikeOneProcessWithEachRanksOwnPictures) {
  const VlCase& k = GetParam();
  SCOPED_TRACE(testing::Message() << k.name << ", rank " << c.rank() << "/" << c.size());
  auto vl_model = [] {
    auto w = std::make_unique<ModelWeights>(preset_config("qwen3-vl", "tiny"));
    init_parameters(*w, /*seed=*/7);
    return w;
  };
  auto wd = vl_model(), w1 = vl_model();
  DecoderOptions dopt;
  dopt.checkpoint_activations = k.checkpoint_activations;
  dopt.mode = k.mode;
  const bool loose = c.size() > 1 && k.mode == ComputeMode::BF16;
  AdamWConfig adam;
  adam.lr = 1e-3f;
  MicroBatching mb;
  mb.max_tokens = 48;  // several micro-batches a rank, some ranks' with and some without pictures
  if (k.micro_batch_size > 0) {
    mb.dynamic = false;
    mb.micro_batch_size = k.micro_batch_size;
  }
  auto adapters = [&](const ModelWeights& w) -> std::unique_ptr<LoraAdapters> {
    if (!k.lora) return nullptr;
    LoraConfig cfg;
    cfg.rank = 4;
    cfg.alpha = 8;
    cfg.target = ModuleSelector::from_json("all-linear", "test");
    auto a = std::make_unique<LoraAdapters>(w.config(), cfg, "test", /*vision_frozen=*/!k.lora_tower);
    a->init_default(11);
    return a;
  };
  auto ld = adapters(*wd), l1 = adapters(*w1);
  const bool frozen = k.freeze_vision_tower || k.lora;
  Actor dist(*wd, dopt, mb, adam, &c, k.dp, frozen, ld.get());
  Actor one(*w1, dopt, mb, adam, nullptr, DataParallel{}, frozen, l1.get());
  const std::string tower_tensor = "model.visual.blocks.1.mlp.linear_fc1.weight";
  const TensorView tv = wd->params().view(tower_tensor);
  const std::vector<float> tower_before(tv.f32(), tv.f32() + tv.numel());
  const PolicyObjectiveConfig loss;
  for (int step = 0; step < 2; ++step) {
    SCOPED_TRACE(testing::Message() << "step " << step);
    std::vector<TrainSample> all = vl_samples(wd->config(), 11, 300 + step, c.size());
    std::vector<TrainSample> mine = all;  // other ranks' pictures are not here
    for (TrainSample& s : mine)
      if (s.home_rank >= 0 && s.home_rank != c.rank()) s.pictures.clear();
    for (TrainSample& s : all) s.home_rank = -1;  // the single process holds every picture
    const std::vector<int64_t> share = dist.share(mine);
    for (int64_t i : share)
      EXPECT_TRUE(mine[i].home_rank < 0 || mine[i].home_rank == c.rank()) << "sample " << i << " trained off its home";
    std::vector<std::vector<float>> lp_dist, lp_one;
    dist.share_logprobs(dist.decoder(), mine, &lp_dist);
    one.share_logprobs(one.decoder(), all, &lp_one);
    for (int64_t i : share) {
      ASSERT_EQ(lp_dist[i].size(), lp_one[i].size());
      for (size_t t = 0; t < lp_one[i].size(); ++t)
        ASSERT_NEAR(lp_dist[i][t], lp_one[i][t], (loose ? 1e-2 : 1e-5) * (1 + std::fabs(lp_one[i][t])))
            << "sample " << i << " token " << t;
    }
    const UpdateStats a = dist.update_policy(mine, loss, LossAggMode::TokenMean, 1.0f, RolloutCorrection{}, adam.lr);
    const UpdateStats b = one.update_policy(all, loss, LossAggMode::TokenMean, 1.0f, RolloutCorrection{}, adam.lr);
    ASSERT_FALSE(a.skipped);
    EXPECT_EQ(a.response_tokens, b.response_tokens);
    const double tol = loose ? 0x1.0p-8 : step == 0 ? 1e-6 : 1e-5;
    EXPECT_NEAR(a.pg_loss, b.pg_loss, tol * (1 + std::fabs(b.pg_loss)));
    EXPECT_NEAR(a.entropy, b.entropy, tol * (1 + std::fabs(b.entropy)));
    EXPECT_NEAR(a.grad_norm, b.grad_norm, (loose ? 0x1.0p-8 : 1e-5) * b.grad_norm);
    dist.gather_for_rollout();  // ZeRO-3: whole again, comparable
    // bf16 compute: other ranks' GEMM weights reach this rank as bf16 only: the f32 masters of the own shard
    // (the tower's tensors are not GEMM weights of the text decoder: they travel as f32, all comparable).
    const int64_t tower_lo = wd->params().offset("model.visual.patch_embed.proj.weight");
    const comm::Partition part = comm::Partition::even(wd->params().numel(), c.size(), 16);
    const WeightDiff d = loose ? weight_diff(*wd, *w1, part.begin(c.rank()), part.end(c.rank()))
                               : weight_diff(*wd, *w1, 0, wd->params().numel());
    EXPECT_LE(d.max, 2.0 * adam.lr * (step + 1)) << "fraction over 1e-7: " << d.fraction_over_1e7;
    EXPECT_LE(d.mean, (loose ? 1e-2 : 1e-4) * adam.lr);
    const WeightDiff dt = weight_diff(*wd, *w1, tower_lo, wd->params().numel());
    EXPECT_LE(dt.mean, (loose ? 1e-2 : 1e-4) * adam.lr) << "the tower's part";
    if (k.lora) {  // the adapters trained alike on every rank; the base did not move
      EXPECT_EQ(d.max, 0.0) << "the frozen base changed";
      const float* x = ld->params().flat().f32();
      const float* y = l1->params().flat().f32();
      double dmax = 0, dmean = 0, moved = 0;
      const int64_t n = ld->params().numel();
      for (int64_t i = 0; i < n; ++i) {
        dmax = std::max(dmax, std::fabs(double(x[i]) - y[i]));
        dmean += std::fabs(double(x[i]) - y[i]) / n;
      }
      for (const auto& [name, view] : ld->params().entries())
        if (name.find("lora_B") != std::string::npos)
          for (int64_t i = 0; i < view.numel(); ++i) moved += view.f32()[i] != 0.0f;
      EXPECT_GT(moved, 0) << "the adapters did not train";
      if (k.lora_tower) {
        const TensorView b = ld->params().view("base_model.model.model.visual.blocks.0.attn.qkv.lora_B.weight");
        EXPECT_NE(std::vector<float>(b.f32(), b.f32() + b.numel()), std::vector<float>(b.numel(), 0.0f))
            << "the tower's adapters did not train";
      }
      EXPECT_LE(dmax, 2.0 * adam.lr * (step + 1));
      EXPECT_LE(dmean, 1e-4 * adam.lr);
    }
  }
  const std::vector<float> tower_after(tv.f32(), tv.f32() + tv.numel());
  if (frozen)
    EXPECT_EQ(tower_after, tower_before) << "a frozen tower keeps its weights";
  else
    EXPECT_NE(tower_after, tower_before) << "the tower learns";
  // Checkpoint state: rank 0 gets the trained layout's moments, equal to the single process's.
  const Actor::FullMoments fm = dist.gather_for_checkpoint();
  if (c.rank() == 0) {
    ASSERT_EQ(fm.numel, one.trained_numel());
    double dm = 0;
    for (int64_t i = 0; i < fm.numel; ++i) dm = std::max(dm, std::fabs(double(fm.m[i]) - one.optimizer().m()[i]));
    EXPECT_LE(dm, (loose ? 0x1.0p-8 : 1e-5) * one.optimizer().steps());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Vision, ActorDistVision,
    ::testing::Values(VlCase{"zero2 overlap, buckets smaller than tensors", dp(comm::Wire::F32, 3001, true, false)},
                      VlCase{"zero3 per micro-batch, recomputed activations", dp(comm::Wire::F32, 4099, true, true, true),
                             true},
                      VlCase{"zero2 frozen tower", dp(comm::Wire::F32, 3001, true, false), false, true},
                      VlCase{"zero3 frozen tower", dp(comm::Wire::F32, 1 << 24, false, false, true), false, true},
                      VlCase{"LoRA, zero3 (the base stays whole)", dp(comm::Wire::F32, 3001, true, false, true), false,
                             false, true},
                      VlCase{"zero3 bf16 compute", dp(comm::Wire::F32, 3001, true, false, true), false, false, false,
                             ComputeMode::BF16},
                      VlCase{"LoRA on the tower and the language model, recomputed activations",
                             dp(comm::Wire::F32, 3001, true, false), true, false, true, ComputeMode::F32, true},
                      VlCase{"zero2 per micro-batch, ranks with empty micro-batches", dp(comm::Wire::F32, 3001, true, true),
                             false, false, false, ComputeMode::F32, false, 1}),
    [](const ::testing::TestParamInfo<VlCase>& i) { return std::string("vl") + std::to_string(i.index); });

// ParamSync in bf16 mode (runs on any CPU: no GEMM involved). Each rank writes new values into its own
// shard of the f32 masters; after run() every rank's bf16 shadow holds all of them rounded, its f32 copy
// holds all values of the tensors read in f32 and its own shard of the GEMM weights, and gather_masters
// brings every f32 master to rank 0.
TEST(ParamSyncBf16, GathersGemmWeightsAsBf16AndTheRestAsF32) {
  comm::Communicator& c = comm::world();
  auto w = tiny_model();
  w->bf16();  // the shadow exists: bf16 mode
  const comm::Partition part = comm::Partition::even(w->params().numel(), c.size(), 16);
  ParamSync sync(*w, c, part);
  const Arena& p32 = w->params();
  float* p = p32.flat().f32();
  auto value = [](int64_t i) { return 0.001f * static_cast<float>(i % 1000) + 1.0f / 3.0f; };
  for (const auto& [name, view] : p32.entries())  // tensor elements only: padding stays zero
    for (int64_t i = p32.offset(name); i < p32.offset(name) + view.numel(); ++i)
      if (i >= part.begin(c.rank()) && i < part.end(c.rank())) p[i] = value(i);
  sync.run();
  const Arena& p16 = *w->bf16_arena();
  int64_t f32_checked = 0, stale = 0;
  for (const auto& [name, view] : p32.entries()) {
    const int64_t lo = p32.offset(name), lo16 = p16.offset(name);
    const bf16_t* s = p16.flat().as<bf16_t>() + lo16;
    for (int64_t j = 0; j < view.numel(); ++j) {
      const int64_t i = lo + j;
      ASSERT_EQ(s[j], f32_to_bf16(value(i))) << name << "[" << j << "]";
      const bool own = i >= part.begin(c.rank()) && i < part.end(c.rank());
      if (!is_gemm_weight(name) || own) {
        ASSERT_EQ(p[i], value(i)) << name << "[" << j << "]";
        ++f32_checked;
      } else {
        stale += p[i] != value(i);
      }
    }
  }
  EXPECT_GT(f32_checked, 0);
  if (c.size() > 1) {
    EXPECT_GT(stale, 0) << "GEMM weights of other shards travel as bf16 only";
  }
  EXPECT_LT(sync.bytes_per_rank(c.rank()), 4 * part.size(c.rank()) + 1);

  // The same gather in chunks of 10,007 elements (two in flight, boundaries inside tensors and shards) gives
  // the same bits.
  const std::vector<bf16_t> whole16(p16.flat().as<bf16_t>(), p16.flat().as<bf16_t>() + p16.numel());
  const std::vector<float> whole32(p, p + p32.numel());
  std::fill(p16.flat().as<bf16_t>(), p16.flat().as<bf16_t>() + p16.numel(), bf16_t{});  // rebuilt from nothing
  ParamSync chunked(*w, c, part, 10007);
  chunked.run();
  EXPECT_TRUE(std::equal(whole16.begin(), whole16.end(), p16.flat().as<bf16_t>()));
  for (int64_t i = 0; i < p32.numel(); ++i) ASSERT_EQ(p[i], whole32[i]) << i;

  // ZeRO-3's layer windows: a released range (here all layers) reads zero outside this rank's shard (whole
  // pages), and a gather in two steps brings the same bits back.
  const int64_t lo = p32.offset(first_layer_tensor(w->config(), 0)), hi = p32.offset("model.norm.weight");
  const std::vector<bf16_t> before(p16.flat().as<bf16_t>() + p16.offset(first_layer_tensor(w->config(), 0)),
                                   p16.flat().as<bf16_t>() + p16.offset("model.norm.weight"));
  sync.release(lo, hi);
  if (c.size() > 1) {
    int64_t zeros = 0, others = 0;
    for (int64_t i = lo; i < hi; ++i)
      if (i < part.begin(c.rank()) || i >= part.end(c.rank())) ++others, zeros += p[i] == 0.0f;
    EXPECT_GT(zeros, others / 2) << "released pages read zero";
  }
  comm::Request req = sync.start(lo, hi, 1);
  sync.finish(lo, hi, 1, req);
  const std::vector<bf16_t> after(p16.flat().as<bf16_t>() + p16.offset(first_layer_tensor(w->config(), 0)),
                                  p16.flat().as<bf16_t>() + p16.offset("model.norm.weight"));
  EXPECT_EQ(before, after);

  sync.gather_masters(0);
  if (c.rank() != 0) return;
  for (const auto& [name, view] : p32.entries())
    for (int64_t i = p32.offset(name); i < p32.offset(name) + view.numel(); ++i) ASSERT_EQ(p[i], value(i)) << name;
}

}  // namespace
