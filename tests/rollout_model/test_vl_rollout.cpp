// The rollout engine over the reference Qwen3-VL model with pictures: greedy decoding through the paged KV
// cache (chunked prefills cutting through a picture) equals full recomputation by the training decoder, and
// the engine's log-probs match the training forward; samples are identical alone and among other requests;
// the vision tower runs once per request, not per sample; the prefix cache hits for the same picture in the
// same place and never serves one picture's k/v for another, nor a block whose memory was released; text-only
// prompts on the VL model are unaffected by pictures elsewhere in the batch; LoRA on the tower runs in the
// rollout's tower too.
#include <gtest/gtest.h>

#include <cmath>

#include "model/decoder.h"
#include "model/lora.h"
#include "rollout/decoder_model.h"
#include "rollout/engine.h"
#include "model/safetensors.h"

using namespace grpo;

namespace {

const std::string kVl = std::string(GRPO_SHARED_DIR) + "/reference/models/qwen3-vl/";
constexpr int64_t kPatchDim = 1536;

// The reference case's three pictures: a (grid 1x4x6, 6 pads), b (1x2x2, 1 pad), c (1x2x4, 2 pads).
struct Pictures {
  PicturePtr a, b, c;
  Pictures() {
    SafetensorsFile f = SafetensorsFile::open(kVl + "vl_case.safetensors");
    const StTensor* t = f.find("pixel_values");
    std::vector<float> px(static_cast<size_t>(st_numel(t->shape)));
    tensor_to_f32(*t, px.data(), static_cast<int64_t>(px.size()), f.path());
    auto rows = [&](int64_t r0, int64_t r1) {
      return std::vector<float>(px.begin() + r0 * kPatchDim, px.begin() + r1 * kPatchDim);
    };
    a = make_picture({1, 4, 6}, rows(0, 24), kPatchDim);
    b = make_picture({1, 2, 2}, rows(24, 28), kPatchDim);
    c = make_picture({1, 2, 4}, rows(28, 36), kPatchDim);
  }
};

// <|im_start|>user\n {text} <|vision_start|> pads <|vision_end|> {text} <|im_end|>\n<|im_start|>assistant\n
std::vector<int32_t> prompt_with(const std::vector<int64_t>& pads, int32_t salt) {
  std::vector<int32_t> p{301, 10, 12, 20 + salt, 21, 22};
  for (int64_t n : pads) {
    p.push_back(309);
    p.insert(p.end(), n, 312);
    p.push_back(310);
    p.push_back(30 + salt);
  }
  for (int32_t t : {40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 302, 12, 301, 11, 12}) p.push_back(t);
  return p;
}

// Greedy continuation by full recomputation with the training decoder (argmax of the last row).
std::vector<int32_t> greedy_by_recompute(ModelWeights& w, std::vector<int32_t> seq,
                                         const std::vector<PicturePtr>& pictures, int n) {
  Decoder dec(w, DecoderOptions{});
  const int64_t V = w.config().vocab_size;
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    PackedBatch b = PackedBatch::from_sequences({seq});
    add_pictures(b, pictures);
    std::vector<float> lp(b.T()), ent(b.T()), logits(b.T() * V);
    dec.forward(b, lp.data(), ent.data());
    dec.full_logits(logits.data());
    const float* last = logits.data() + (b.T() - 1) * V;
    const int32_t best = static_cast<int32_t>(std::max_element(last, last + V) - last);
    out.push_back(best);
    seq.push_back(best);
  }
  return out;
}

rollout::Request request(std::vector<int32_t> prompt, std::vector<PicturePtr> pictures, int n, float temperature,
                         uint64_t id) {
  rollout::Request r;
  r.prompt = std::move(prompt);
  r.pictures = std::move(pictures);
  r.n = n;
  r.sampling.temperature = temperature;
  r.max_new_tokens = 10;
  r.seed = 11;
  r.id = id;
  return r;
}

}  // namespace

TEST(VlRollout, GreedyWithCacheEqualsFullRecomputeAndTrainingLogprobs) {
  auto w = ModelWeights::load(kVl);
  const Pictures pics;
  rollout::EngineConfig ec;
  ec.kv_memory_bytes = 8 << 20;
  ec.token_budget = 5;  // chunked prefills that cut through the pictures' pad runs
  rollout::DecoderRolloutModel model(*w, ComputeMode::F32, ec.block_size);
  rollout::Engine engine(model, ec);
  const std::vector<std::vector<PicturePtr>> pictures = {{pics.a, pics.b}, {pics.c}, {}};
  const std::vector<std::vector<int32_t>> prompts = {prompt_with({6, 1}, 0), prompt_with({2}, 1), prompt_with({}, 2)};
  std::vector<rollout::Request> reqs;
  for (size_t i = 0; i < prompts.size(); ++i) reqs.push_back(request(prompts[i], pictures[i], 1, 0.0f, i));
  const auto res = engine.generate(reqs);
  for (size_t i = 0; i < prompts.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    const std::vector<int32_t> expect = greedy_by_recompute(*w, prompts[i], pictures[i], 10);
    EXPECT_EQ(res[i].samples[0].tokens, expect);
    std::vector<int32_t> full = prompts[i];
    full.insert(full.end(), expect.begin(), expect.end());
    PackedBatch b = PackedBatch::from_sequences({full});
    add_pictures(b, pictures[i]);
    Decoder dec(*w, DecoderOptions{});
    std::vector<float> lp(b.T()), ent(b.T());
    dec.forward(b, lp.data(), ent.data());
    for (size_t t = 0; t < expect.size(); ++t)
      EXPECT_NEAR(res[i].samples[0].logprobs[t], lp[prompts[i].size() - 1 + t], 1e-4) << "token " << t;
  }
  // The tower ran once per request with pictures: 24 + 4 + 8 patch rows.
  EXPECT_EQ(engine.stats().vision_patches, 36);
}

TEST(VlRollout, SamplesDoNotDependOnTheBatchAndTheTowerRunsOncePerRequest) {
  auto w = ModelWeights::load(kVl);
  const Pictures pics;
  const rollout::Request mine = request(prompt_with({6, 2}, 0), {pics.a, pics.c}, 4, 1.0f, 0);
  auto run = [&](const std::vector<rollout::Request>& reqs, int64_t budget, bool prefix_cache, int64_t* patches) {
    rollout::EngineConfig ec;
    ec.kv_memory_bytes = 16 << 20;
    ec.token_budget = budget;
    ec.prefix_cache = prefix_cache;
    rollout::DecoderRolloutModel model(*w, ComputeMode::F32, ec.block_size);
    rollout::Engine engine(model, ec);
    auto out = engine.generate(reqs)[0].samples;
    *patches = engine.stats().vision_patches;
    return out;
  };
  int64_t patches = 0;
  const auto alone = run({mine}, 512, true, &patches);
  EXPECT_EQ(patches, 24 + 8);  // once for the request, not once per sample (n = 4)
  std::vector<rollout::Request> crowd{mine};
  for (int i = 1; i < 6; ++i) {
    std::vector<PicturePtr> p = i % 3 == 0 ? std::vector<PicturePtr>{} : std::vector<PicturePtr>{i % 2 ? pics.b : pics.c};
    crowd.push_back(request(prompt_with(p.empty() ? std::vector<int64_t>{} : std::vector<int64_t>{p[0]->grid.patches() / 4}, i),
                            p, 2, 1.0f, i));
  }
  crowd.push_back(request(prompt_with({6, 2}, 0), {pics.a, pics.c}, 2, 1.0f, 9));  // the same prompt again
  const auto batched = run(crowd, 512, true, &patches);
  const auto chunked = run(crowd, 7, false, &patches);
  ASSERT_EQ(alone.size(), 4u);
  for (size_t k = 0; k < alone.size(); ++k) {
    EXPECT_EQ(alone[k].tokens, batched[k].tokens) << "sample " << k;
    EXPECT_EQ(alone[k].logprobs, batched[k].logprobs) << "sample " << k;
    EXPECT_EQ(alone[k].tokens, chunked[k].tokens) << "sample " << k;
    EXPECT_EQ(alone[k].logprobs, chunked[k].logprobs) << "sample " << k;
  }
}

TEST(VlRollout, PrefixCacheKeysPicturesByContent) {
  auto w = ModelWeights::load(kVl);
  const Pictures pics;
  rollout::EngineConfig ec;
  ec.kv_memory_bytes = 16 << 20;
  rollout::DecoderRolloutModel model(*w, ComputeMode::F32, ec.block_size);
  rollout::Engine engine(model, ec);
  // The picture sits in the prompt's first 16-token block: a (6 pads) and c (2 pads, padded with text to
  // the same token ids and length: prompts identical but for the picture) would share that block's tokens.
  std::vector<int32_t> prompt = prompt_with({2}, 0);
  const auto first = engine.generate({request(prompt, {pics.c}, 1, 0.0f, 0)})[0].samples[0];
  const auto again = engine.generate({request(prompt, {pics.c}, 1, 0.0f, 0)})[0].samples[0];
  EXPECT_GT(engine.stats().prefix_hits, 0) << "the same picture in the same place hits";
  EXPECT_EQ(first.tokens, again.tokens);
  EXPECT_EQ(first.logprobs, again.logprobs);
  // Another picture with the same grid (pixels flipped): same token ids, other content. No block holding its
  // pads may come from the cache, and the result equals a fresh engine's.
  std::vector<float> flipped(pics.c->pixel_values.rbegin(), pics.c->pixel_values.rend());
  const PicturePtr other = make_picture(pics.c->grid, flipped, kPatchDim);
  const auto cached = engine.generate({request(prompt, {other}, 1, 0.0f, 0)})[0].samples[0];
  EXPECT_EQ(engine.stats().prefix_hits, 0) << "the first block holds the picture: nothing may hit";
  rollout::Engine fresh(model, ec);
  const auto expect = fresh.generate({request(prompt, {other}, 1, 0.0f, 0)})[0].samples[0];
  EXPECT_EQ(cached.tokens, expect.tokens);
  EXPECT_EQ(cached.logprobs, expect.logprobs);
  EXPECT_NE(cached.logprobs, first.logprobs);
}

// A GRPO step releases the engine's memory after its rollout: the next rollout of the same picture gives the
// same result and finds nothing in the prefix cache (the released blocks' contents are gone).
TEST(VlRollout, ReleasedMemoryIsNotServedFromThePrefixCache) {
  auto w = ModelWeights::load(kVl);
  const Pictures pics;
  rollout::EngineConfig ec;
  ec.kv_memory_bytes = 16 << 20;
  rollout::DecoderRolloutModel model(*w, ComputeMode::F32, ec.block_size);
  rollout::Engine engine(model, ec);
  const std::vector<int32_t> prompt = prompt_with({2}, 0);
  const auto first = engine.generate({request(prompt, {pics.c}, 1, 0.8f, 0)})[0];
  engine.release_memory();
  const auto again = engine.generate({request(prompt, {pics.c}, 1, 0.8f, 0)})[0];
  EXPECT_EQ(engine.stats().prefix_hits, 0);
  for (size_t k = 0; k < first.samples.size(); ++k) {
    EXPECT_EQ(first.samples[k].tokens, again.samples[k].tokens);
    EXPECT_EQ(first.samples[k].logprobs, again.samples[k].logprobs);
  }
}

TEST(VlRollout, RejectsPicturesThatDoNotMatchThePrompt) {
  auto w = ModelWeights::load(kVl);
  const Pictures pics;
  rollout::EngineConfig ec;
  ec.kv_memory_bytes = 8 << 20;
  rollout::DecoderRolloutModel model(*w, ComputeMode::F32, ec.block_size);
  rollout::Engine engine(model, ec);
  EXPECT_THROW(engine.generate({request(prompt_with({6}, 0), {pics.c}, 1, 0.0f, 0)}), Error);    // 2 pads' worth
  EXPECT_THROW(engine.generate({request(prompt_with({2}, 0), {}, 1, 0.0f, 0)}), Error);          // no picture
  EXPECT_THROW(engine.generate({request(prompt_with({}, 0), {pics.b}, 1, 0.0f, 0)}), Error);     // no pads
  auto text = ModelWeights::load(std::string(GRPO_SHARED_DIR) + "/reference/models/qwen3");
  rollout::DecoderRolloutModel text_model(*text, ComputeMode::F32, ec.block_size);
  rollout::Engine text_engine(text_model, ec);
  EXPECT_THROW(text_engine.generate({request({1, 2, 3}, {pics.b}, 1, 0.0f, 0)}), Error);
  // The engine is still usable after refusing.
  EXPECT_EQ(engine.generate({request(prompt_with({1}, 0), {pics.b}, 1, 0.0f, 0)})[0].samples[0].tokens.size(), 10u);
}

// LoRA on the tower and the language model (all-linear, B random): the engine encodes the pictures through the
// adapted tower, so its log-probs are the training decoder's with the same adapters (the policy being trained).
TEST(VlRollout, TowerLoraSamplesTheTrainedPolicy) {
  auto w = ModelWeights::load(kVl);
  const Pictures pics;
  LoraConfig cfg;
  cfg.rank = 4;
  cfg.alpha = 8;
  cfg.target = ModuleSelector::from_json("all-linear", "test");
  LoraAdapters lora(w->config(), cfg, "test");
  ASSERT_TRUE(lora.has_tower());
  lora.init_default(2);
  for (const auto& [name, view] : lora.params().entries())
    if (name.find("lora_B") != std::string::npos)
      for (int64_t i = 0; i < view.numel(); ++i) view.f32()[i] = 0.2f * std::sin(0.37f * static_cast<float>(i + 1));
  rollout::EngineConfig ec;
  ec.kv_memory_bytes = 8 << 20;
  rollout::DecoderRolloutModel model(*w, ComputeMode::F32, ec.block_size);
  model.set_lora(&lora);
  rollout::Engine engine(model, ec);
  const std::vector<int32_t> prompt = prompt_with({6, 1}, 0);
  const std::vector<PicturePtr> pictures = {pics.a, pics.b};
  const auto res = engine.generate({request(prompt, pictures, 2, 1.0f, 0)});
  // The same adapters with the tower's B zero: what a rollout that skipped the tower's adapters would sample.
  LoraAdapters text_only(w->config(), cfg, "test");
  std::copy_n(lora.params().flat().f32(), lora.params().numel(), text_only.params().flat().f32());
  for (const auto& [name, view] : text_only.params().entries())
    if (name.find("model.visual.") != std::string::npos && name.find("lora_B") != std::string::npos)
      std::fill_n(view.f32(), view.numel(), 0.0f);
  Decoder dec(*w, DecoderOptions{}), base(*w, DecoderOptions{});
  dec.set_lora(&lora);
  base.set_lora(&text_only);
  double moved = 0;
  for (const rollout::SampleResult& s : res[0].samples) {
    std::vector<int32_t> full = prompt;
    full.insert(full.end(), s.tokens.begin(), s.tokens.end());
    PackedBatch b = PackedBatch::from_sequences({full});
    add_pictures(b, pictures);
    std::vector<float> lp(b.T()), lp0(b.T()), ent(b.T());
    dec.forward(b, lp.data(), ent.data());
    base.forward(b, lp0.data(), ent.data());
    for (size_t t = 0; t < s.tokens.size(); ++t) {
      EXPECT_NEAR(s.logprobs[t], lp[prompt.size() - 1 + t], 1e-4) << "token " << t;
      moved = std::max(moved, std::fabs(double(lp[prompt.size() - 1 + t]) - lp0[prompt.size() - 1 + t]));
    }
  }
  EXPECT_GT(moved, 1e-3) << "the tower's adapters should change the policy";
}
