// Qwen3-VL against the reference of ../shared/reference/models/qwen3-vl: the packed vl_case (pictures, M-RoPE
// positions and rope deltas exact; the tower's intermediates at 1e-5 of their scale; logits, log-probs,
// entropy, loss and all 93 parameter gradients at the text cases' tolerances), in f32, with activation
// checkpointing, and in bf16; the GRPO case with a picture; the M-RoPE and vision tables at the real 8B sizes
// (rope_8b_case); a batch without pictures equals the text decoder bit for bit; a picture in a prompt changes
// nothing for the tokens before it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/files.h"
#include "kernels/vision_ops.h"
#include "model/mrope.h"
#include "model/rope_tables.h"
#include "model/vision_layout.h"
#include "train/case_eval.h"
#include "test_util.h"

using namespace grpo;
using namespace grpo::train;

namespace {

using grpo::test::rel_err;

using grpo::test::kReferenceVl;

struct Bounds {
  double values, grads, vision;  // logits/log-probs/losses; gradients; tower intermediates (all relative)
};
// f32: the reference README's bounds. bf16: the text cases' (tests/train_ref/test_reference_cases.cpp: GEMM
// inputs rounded to 8 bits, 2% of the values' scale and 6% of a gradient's); the tower's outputs go through
// five bf16 GEMMs per block and the merger's two: bounded like the values.
constexpr Bounds kVlF32{1e-4, 1e-3, 1e-5};
constexpr Bounds kVlBF16{2e-2, 6e-2, 2e-2};

void compare(const CaseOutputs& out, const SafetensorsFile& ref, const Bounds& b, const std::string& what) {
  int grads = 0, vision = 0;
  for (const StTensor& t : ref.tensors()) {
    const std::string& n = t.name;
    const bool is_grad = n.rfind("grad.", 0) == 0;
    const bool is_exact = n == "position_ids" || n == "rope_deltas";
    const bool is_vision = n == "vision_pos_embeds" || n == "vision_block_input" || n == "image_embeds" ||
                           n.rfind("deepstack_embeds.", 0) == 0;
    const bool is_value = n == "logits" || n == "token_logprobs" || n == "entropy" || n == "pg_clipfrac" ||
                          n.rfind("loss", 0) == 0;
    if (!is_grad && !is_exact && !is_vision && !is_value) continue;
    auto it = out.find(n);
    ASSERT_NE(it, out.end()) << what << ": the engine did not produce " << n;
    std::vector<float> r;
    if (is_exact) {
      for (int64_t v : case_ints(ref, n)) r.push_back(static_cast<float>(v));
      EXPECT_EQ(it->second.data, r) << what << ": " << n;
      continue;
    }
    r = case_floats(ref, n);
    ASSERT_EQ(it->second.data.size(), r.size()) << what << ": " << n;
    const double e = rel_err(it->second.data, r);
    double bound = is_grad ? b.grads : is_vision ? b.vision : b.values;
    if (n == "pg_clipfrac") bound = b.values == kVlF32.values ? 1e-6 : 0.1;
    if (std::getenv("GRPO_PRINT_ERRORS")) std::printf("%s %s %.3g\n", what.c_str(), n.c_str(), e);
    EXPECT_LE(e, bound) << what << ": " << n << " relative error " << e;
    grads += is_grad;
    vision += is_vision;
  }
  EXPECT_EQ(grads, 93) << what << ": every parameter's gradient";
  (void)vision;
}

struct VlVariant {
  ComputeMode mode;
  bool ckpt;
};

class VlReference : public ::testing::TestWithParam<VlVariant> {};

TEST_P(VlReference, PackedCaseWithPictures) {
  const VlVariant v = GetParam();
  auto w = ModelWeights::load(kReferenceVl);
  SafetensorsFile ref = SafetensorsFile::open(kReferenceVl + "vl_case.safetensors");
  CaseOptions opt;
  opt.mode = v.mode;
  opt.checkpoint_activations = v.ckpt;
  opt.lm_head_chunk = 7;
  const CaseOutputs out = evaluate_case(*w, ref, nullptr, opt);
  for (const char* n : {"vision_pos_embeds", "vision_block_input", "image_embeds", "deepstack_embeds.0",
                        "deepstack_embeds.1", "position_ids", "rope_deltas"})
    EXPECT_TRUE(out.count(n)) << n;
  compare(out, ref, v.mode == ComputeMode::F32 ? kVlF32 : kVlBF16, "vl_case");
}

TEST_P(VlReference, GrpoCaseWithAPicture) {
  const VlVariant v = GetParam();
  auto w = ModelWeights::load(kReferenceVl);
  SafetensorsFile ref = SafetensorsFile::open(kReferenceVl + "grpo_case.safetensors");
  const nlohmann::json j = nlohmann::json::parse(read_file(kReferenceVl + "grpo_case.json"));
  CaseOptions opt;
  opt.mode = v.mode;
  opt.checkpoint_activations = v.ckpt;
  compare(evaluate_case(*w, ref, &j, opt), ref, v.mode == ComputeMode::F32 ? kVlF32 : kVlBF16, "grpo_case");
}

INSTANTIATE_TEST_SUITE_P(Modes, VlReference,
                         ::testing::Values(VlVariant{ComputeMode::F32, false}, VlVariant{ComputeMode::F32, true},
                                           VlVariant{ComputeMode::BF16, false}),
                         [](const ::testing::TestParamInfo<VlVariant>& i) {
                           return std::string(i.param.mode == ComputeMode::F32 ? "f32" : "bf16") +
                                  (i.param.ckpt ? "_ckpt" : "");
                         });

// Qwen3-VL-8B's config (the fields the tables read).
ModelConfig config_8b() {
  nlohmann::json j = nlohmann::json::parse(read_file(kReferenceVl + "config.json"));
  nlohmann::json& t = j["text_config"];
  t["vocab_size"] = 151936;
  t["hidden_size"] = 4096;
  t["head_dim"] = 128;
  t["num_attention_heads"] = 32;
  t["num_key_value_heads"] = 8;
  t["rope_theta"] = 5000000.0;
  t["rope_scaling"]["mrope_section"] = {24, 20, 20};
  t["max_position_embeddings"] = 262144;
  t.erase("bos_token_id");
  t.erase("eos_token_id");
  j["image_token_id"] = 151655;
  j["video_token_id"] = 151656;
  j["vision_start_token_id"] = 151652;
  j["vision_end_token_id"] = 151653;
  nlohmann::json& v = j["vision_config"];
  v["depth"] = 27;
  v["hidden_size"] = 1152;
  v["num_heads"] = 16;
  v["intermediate_size"] = 4304;
  v["num_position_embeddings"] = 2304;
  v["out_hidden_size"] = 4096;
  v["deepstack_visual_indexes"] = {8, 16, 24};
  return parse_model_config(j, "8b");
}

TEST(VlTables, MropeAndVisionTablesAtThe8bSizes) {
  const ModelConfig c = config_8b();
  SafetensorsFile ref = SafetensorsFile::open(kReferenceVl + "rope_8b_case.safetensors");
  // Positions and frequency axes.
  const std::vector<int64_t> ids64 = case_ints(ref, "text.input_ids");
  const std::vector<int32_t> ids(ids64.begin(), ids64.end());
  const int64_t T = static_cast<int64_t>(ids.size());
  const std::vector<int64_t> thw = case_ints(ref, "vision.image_grid_thw");
  const std::vector<ImageGrid> grids{{thw[0], thw[1], thw[2]}};
  std::vector<int32_t> pos3(3 * T);
  const int64_t delta = mrope_positions(c, ids.data(), T, {grids.data(), 1, false}, pos3.data(), T, nullptr, "rope_8b_case");
  EXPECT_EQ(std::vector<int64_t>(pos3.begin(), pos3.end()), case_ints(ref, "text.position_ids"));
  EXPECT_EQ(delta, -3);  // the worked example of the guide
  const std::vector<uint8_t> axes = mrope_axes(c);
  EXPECT_EQ(std::vector<int64_t>(axes.begin(), axes.end()), case_ints(ref, "text.freq_axis"));
  // Text cos/sin [T, 128] (the 64 frequencies twice).
  const RopeTables plain = make_rope_tables(c, 64);
  std::vector<float> cs(T * 64), sn(T * 64);
  ops::mrope_tables(cs.data(), sn.data(), pos3.data(), axes.data(), plain.cos.data(), plain.sin.data(), T, 64, 64);
  const std::vector<float> rc = case_floats(ref, "text.cos"), rs = case_floats(ref, "text.sin");
  double worst = 0;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < 128; ++j) {
      worst = std::max(worst, std::fabs(double{cs[t * 64 + j % 64]} - rc[t * 128 + j]));
      worst = std::max(worst, std::fabs(double{sn[t * 64 + j % 64]} - rs[t * 128 + j]));
    }
  EXPECT_LT(worst, 1e-5);
  // Vision rotary [24, 72] and bilinear corners in pixel_values order.
  VisionLayout L;
  make_vision_layout(c.vision, grids, &L);
  ASSERT_EQ(L.N, 24);
  const std::vector<float> vc = case_floats(ref, "vision.cos"), vs = case_floats(ref, "vision.sin");
  worst = 0;
  for (int64_t n = 0; n < 24; ++n)
    for (int64_t j = 0; j < 72; ++j) {
      worst = std::max(worst, std::fabs(double{L.rope_cos[n * 36 + j % 36]} - vc[n * 72 + j]));
      worst = std::max(worst, std::fabs(double{L.rope_sin[n * 36 + j % 36]} - vs[n * 72 + j]));
    }
  EXPECT_LT(worst, 1e-5);
  EXPECT_EQ(std::vector<int64_t>(L.pos_index.begin(), L.pos_index.end()), case_ints(ref, "vision.pos_index"));
  const std::vector<float> pw = case_floats(ref, "vision.pos_weight");
  worst = 0;
  for (size_t i = 0; i < pw.size(); ++i) worst = std::max(worst, std::fabs(double{L.pos_weight[i]} - pw[i]));
  EXPECT_LT(worst, 1e-5);
  EXPECT_EQ(L.cu_seqlens, (std::vector<int32_t>{0, 24}));
}

// The text decoder of the reference model as a Qwen3ForCausalLM, with the same weights.
std::unique_ptr<ModelWeights> text_twin(const ModelWeights& vl) {
  nlohmann::json j = nlohmann::json::parse(read_file(kReferenceVl + "config.json"))["text_config"];
  j["architectures"] = {"Qwen3ForCausalLM"};
  j["model_type"] = "qwen3";
  j["rope_scaling"] = nullptr;
  j["tie_word_embeddings"] = false;
  auto w = std::make_unique<ModelWeights>(parse_model_config(j, "text twin"));
  const std::string vl_prefix = "model.language_model.";
  for (const auto& [name, view] : w->params().entries()) {
    const std::string src = name.rfind("model.", 0) == 0 ? vl_prefix + name.substr(6) : name;
    const TensorView s = vl.params().view(src);
    std::copy(s.f32(), s.f32() + s.numel(), view.f32());
  }
  return w;
}

class VlWithoutPictures : public ::testing::TestWithParam<ComputeMode> {};

TEST_P(VlWithoutPictures, ItIsExactlyTheTextDecoder) {
  auto vl = ModelWeights::load(kReferenceVl);
  auto text = text_twin(*vl);
  const PackedBatch b = PackedBatch::from_sequences({{301, 10, 12, 5, 6, 7, 302, 12, 301, 11, 12, 40, 41},
                                                     {301, 10, 12, 99, 302}});
  {
    const ComputeMode mode = GetParam();
    DecoderOptions opt;
    opt.mode = mode;
    Decoder dv(*vl, opt), dt(*text, opt);
    std::vector<float> lp_v(b.T()), ent_v(b.T()), lp_t(b.T()), ent_t(b.T());
    dv.forward(b, lp_v.data(), ent_v.data());
    dt.forward(b, lp_t.data(), ent_t.data());
    EXPECT_EQ(lp_v, lp_t);
    EXPECT_EQ(ent_v, ent_t);
    Arena gv(DType::F32), gt(DType::F32);
    declare_parameters(vl->config(), gv);
    declare_parameters(text->config(), gt);
    gv.allocate();
    gt.allocate();
    std::vector<float> dlp(b.T(), -0.1f);
    dv.backward(dlp.data(), nullptr, resolve_tensors(vl->config(), gv));
    dt.backward(dlp.data(), nullptr, resolve_tensors(text->config(), gt));
    for (const auto& [name, view] : gt.entries()) {
      const std::string src = name.rfind("model.", 0) == 0 ? "model.language_model." + name.substr(6) : name;
      const TensorView g = gv.view(src);
      ASSERT_EQ(std::vector<float>(g.f32(), g.f32() + g.numel()),
                std::vector<float>(view.f32(), view.f32() + view.numel()))
          << name;
    }
    // The tower gets nothing from a batch without pictures.
    const TensorView pg = gv.view("model.visual.patch_embed.proj.weight");
    for (int64_t i = 0; i < pg.numel(); ++i) ASSERT_EQ(pg.f32()[i], 0.0f);
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, VlWithoutPictures, ::testing::Values(ComputeMode::F32, ComputeMode::BF16),
                         [](const ::testing::TestParamInfo<ComputeMode>& i) {
                           return std::string(i.param == ComputeMode::F32 ? "f32" : "bf16");
                         });

// Prompt A: text, then a picture (image_b: 1 pad); prompt B: the same text, then text where the picture was.
// The log-probs of the tokens before the picture are the same.
TEST(VlDecoder, APictureChangesNothingBeforeIt) {
  auto w = ModelWeights::load(kReferenceVl);
  SafetensorsFile pre = SafetensorsFile::open(kReferenceVl + "vl_case.safetensors");
  const std::vector<float> pixels = case_floats(pre, "pixel_values");
  const float* image_b = pixels.data() + 24 * 1536;  // rows 24..27: a 2x2-patch picture, one pad
  const std::vector<int32_t> prefix{301, 10, 12, 7, 8, 9, 10, 11};
  std::vector<int32_t> with = prefix, without = prefix;
  for (int32_t id : {309, 312, 310, 5, 6, 302}) with.push_back(id);
  for (int32_t id : {20, 21, 22, 5, 6, 302}) without.push_back(id);
  PackedBatch a = PackedBatch::from_sequences({with});
  a.add_pictures(image_b, 4 * 1536, {{1, 2, 2}});
  const PackedBatch b = PackedBatch::from_sequences({without});
  Decoder dec(*w, DecoderOptions{});
  std::vector<float> lp_a(a.T()), ent_a(a.T()), lp_b(b.T()), ent_b(b.T());
  dec.forward(a, lp_a.data(), ent_a.data());
  dec.forward(b, lp_b.data(), ent_b.data());
  for (size_t t = 0; t + 1 < prefix.size(); ++t) {
    EXPECT_NEAR(lp_a[t], lp_b[t], 1e-6 * std::max(1.0f, std::fabs(lp_b[t]))) << "token " << t;
    EXPECT_NEAR(ent_a[t], ent_b[t], 1e-6 * std::max(1.0f, ent_b[t])) << "token " << t;
  }
  bool differs = false;
  for (size_t t = prefix.size(); t < with.size(); ++t) differs = differs || lp_a[t] != lp_b[t];
  EXPECT_TRUE(differs) << "the picture must matter after it";
}

TEST(VlDecoder, RejectsPicturesThatDoNotMatchThePads) {
  auto w = ModelWeights::load(kReferenceVl);
  Decoder dec(*w, DecoderOptions{});
  std::vector<float> pixels(8 * 1536, 0.1f), lp(16), ent(16);
  PackedBatch short_run = PackedBatch::from_sequences({{301, 309, 312, 310, 5}});
  short_run.add_pictures(pixels.data(), 8 * 1536, {{1, 2, 4}});  // two pads' worth, one pad
  EXPECT_THROW(dec.forward(short_run, lp.data(), ent.data()), Error);
  PackedBatch unused = PackedBatch::from_sequences({{301, 5, 6}});
  unused.add_pictures(pixels.data(), 4 * 1536, {{1, 2, 2}});  // no pad to show it
  EXPECT_THROW(dec.forward(unused, lp.data(), ent.data()), Error);
  PackedBatch odd_grid = PackedBatch::from_sequences({{301, 309, 312, 310}});
  odd_grid.add_pictures(pixels.data(), 4 * 1536, {{1, 1, 4}});  // not a multiple of the 2x2 merge
  EXPECT_THROW(dec.forward(odd_grid, lp.data(), ent.data()), Error);
  PackedBatch short_pixels = PackedBatch::from_sequences({{301, 309, 312, 310}});
  short_pixels.add_pictures(pixels.data(), 3 * 1536, {{1, 2, 2}});
  EXPECT_THROW(dec.forward(short_pixels, lp.data(), ent.data()), Error);
}

// Pad (and video pad) tokens past a sequence's pictures are text: a response may sample them, and training
// on it must neither fail nor treat them as pictures. They keep their embedding (and its gradient).
TEST(VlDecoder, PadTokensPastTheSequencesPicturesAreText) {
  auto w = ModelWeights::load(kReferenceVl);
  SafetensorsFile f = SafetensorsFile::open(kReferenceVl + "vl_case.safetensors");
  const std::vector<float> pixels = case_floats(f, "pixel_values");
  PackedBatch b;
  b.clear();
  b.add_sequence({301, 309, 312, 310, 5, 302, 301, 11, 312, 313, 312, 7});
  b.add_pictures(pixels.data() + 24 * 1536, 4 * 1536, {{1, 2, 2}});
  b.add_sequence({301, 10, 312, 9});  // a text-only prompt whose response holds a pad
  Decoder dec(*w, DecoderOptions{});
  std::vector<float> lp(b.T()), ent(b.T());
  dec.forward(b, lp.data(), ent.data());
  for (float v : lp) EXPECT_TRUE(std::isfinite(v));
  const std::vector<int32_t>& pos3 = dec.mrope_positions();
  EXPECT_EQ(pos3[8], 8);  // the stray pad at index 8: a text position on every axis
  EXPECT_EQ(pos3[b.T() + 8], 8);
  Arena g(DType::F32);
  declare_parameters(w->config(), g);
  g.allocate();
  std::vector<float> dlp(b.T(), -0.1f);
  dec.backward(dlp.data(), nullptr, resolve_tensors(w->config(), g));
  const float* pad_row = g.view("model.language_model.embed_tokens.weight").f32() + 312 * 32;
  double norm = 0;
  for (int i = 0; i < 32; ++i) norm += std::fabs(pad_row[i]);
  EXPECT_GT(norm, 0.0) << "the stray pads are text: their embedding row learns";
}

}  // namespace
