// GGUF export (src/export): the written file read back by the independent reader of gguf_reader.h and held
// against the specification (header, typed keys, tensor infos, alignment, offsets, data), llama.cpp's names
// and types per architecture, LLaMA's RoPE permutation, the f16 / bf16 / q8_0 encodings and their error
// bounds, the tokenizer metadata (byte tokenizer and Qwen3's), the Qwen3-VL refusal and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

#include "error_of.h"
#include "export/gguf_file.h"
#include "export/gguf_model.h"
#include "export/gguf_vocab.h"
#include "gguf_reader.h"
#include "model/init.h"
#include "model/presets.h"
#include "model/weights.h"
#include "test_util.h"
#include "tokenizer/byte_tokenizer.h"

namespace grpo {
namespace {

namespace fs = std::filesystem;
using test::GgufContents;
using test::read_gguf;

// A random-initialised `tiny` model of arch and the byte tokenizer in dir.
std::unique_ptr<ModelWeights> tiny_model(const std::string& arch, const std::string& dir, bool tied = true,
                                         int64_t ffn = 0) {
  ModelConfig c = preset_config(arch, "tiny");
  c.tie_word_embeddings = tied;
  if (ffn > 0) c.intermediate_size = ffn;
  auto w = std::make_unique<ModelWeights>(c);
  init_parameters(*w, 11);
  write_byte_tokenizer(dir);
  return w;
}

uint64_t align32(uint64_t n) { return (n + 31) / 32 * 32; }

// The layout rules of the specification: version, alignment of every tensor, infos in file order without
// overlap, the header padding zero, and the file ending with the last tensor's padded data.
void expect_valid_layout(const GgufContents& g) {
  EXPECT_EQ(g.version, 3u);
  EXPECT_EQ(g.alignment, 32u);
  EXPECT_EQ(g.kv.at("general.alignment").type, 4u);
  ASSERT_FALSE(g.tensors.empty());
  EXPECT_EQ(g.tensors.front().offset, 0u);
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    const auto& t = g.tensors[i];
    EXPECT_EQ(t.offset % g.alignment, 0u) << t.name;
    if (i + 1 < g.tensors.size()) {
      EXPECT_GE(g.tensors[i + 1].offset, t.offset + test::gguf_nbytes(t)) << t.name;
    }
  }
  const auto& last = g.tensors.back();
  EXPECT_EQ(g.bytes.size(), g.data_start + last.offset + align32(test::gguf_nbytes(last)));
  EXPECT_EQ(g.data_start % 32, 0u);
}

void expect_u32(const GgufContents& g, const std::string& key, int64_t v) {
  ASSERT_TRUE(g.kv.count(key)) << key;
  EXPECT_EQ(g.kv.at(key).type, 4u) << key << " must be u32";
  EXPECT_EQ(g.kv.at(key).value.get<int64_t>(), v) << key;
}

void expect_f32(const GgufContents& g, const std::string& key, double v) {
  ASSERT_TRUE(g.kv.count(key)) << key;
  EXPECT_EQ(g.kv.at(key).type, 6u) << key << " must be f32";
  EXPECT_FLOAT_EQ(g.kv.at(key).value.get<float>(), static_cast<float>(v)) << key;
}

// Every HF tensor of w is in g under llama.cpp's name with its dims reversed and, at f32, its exact values
// (LLaMA's q/k permuted).
void expect_tensors_match(const GgufContents& g, const ModelWeights& w) {
  const ModelConfig& c = w.config();
  size_t count = 0;
  for (const NamedF32& t : w.named_tensors()) {
    const std::string name = gguf::tensor_name(c, t.name);
    ASSERT_TRUE(g.has_tensor(name)) << name;
    const auto& info = g.tensor(name);
    std::vector<uint64_t> ne(t.shape.rbegin(), t.shape.rend());
    EXPECT_EQ(info.ne, ne) << name;
    EXPECT_EQ(info.type, 0u) << name;
    int64_t numel = 1;
    for (int64_t d : t.shape) numel *= d;
    std::vector<float> want(t.data, t.data + numel);
    const bool rope = c.model_type == "llama" && (name.ends_with("attn_q.weight") || name.ends_with("attn_k.weight"));
    if (rope) want = gguf::permute_rope_rows(t.data, t.shape[0] / c.head_dim, c.head_dim, t.shape[1]);
    EXPECT_EQ(test::gguf_values(g, info), want) << name;
    ++count;
  }
  EXPECT_EQ(g.tensors.size(), count);
}

class GgufArch : public ::testing::TestWithParam<std::string> {};

TEST_P(GgufArch, LayoutKeysAndTensorsAtF32) {
  const std::string arch = GetParam(), dir = test::fresh_temp_dir("gguf", "layout_" + arch);
  auto w = tiny_model(arch, dir, /*tied=*/false);
  const std::string path = dir + "/m.gguf";
  const auto s = gguf::write_gguf(*w, dir, path, gguf::GgmlType::F32, "m");
  const GgufContents g = read_gguf(path);
  expect_valid_layout(g);
  EXPECT_EQ(s.tensors, static_cast<int64_t>(g.tensors.size()));
  EXPECT_EQ(s.kv, static_cast<int64_t>(g.kv.size()));
  const ModelConfig& c = w->config();
  EXPECT_EQ(g.kv.at("general.architecture").type, 8u);
  EXPECT_EQ(g.kv.at("general.architecture").value, arch);
  EXPECT_EQ(g.key_order.front(), "general.architecture");  // llama.cpp reads it first
  expect_u32(g, "general.file_type", 0);
  expect_u32(g, arch + ".context_length", c.max_position_embeddings);
  expect_u32(g, arch + ".embedding_length", c.hidden_size);
  expect_u32(g, arch + ".block_count", c.num_hidden_layers);
  expect_u32(g, arch + ".feed_forward_length", c.intermediate_size);
  expect_u32(g, arch + ".attention.head_count", c.num_attention_heads);
  expect_u32(g, arch + ".attention.head_count_kv", c.num_key_value_heads);
  expect_u32(g, arch + ".attention.key_length", c.head_dim);
  expect_u32(g, arch + ".attention.value_length", c.head_dim);
  expect_f32(g, arch + ".rope.freq_base", c.rope_theta);
  expect_f32(g, arch + ".attention.layer_norm_rms_epsilon", c.rms_norm_eps);
  if (arch == "llama") expect_u32(g, "llama.rope.dimension_count", c.head_dim);
  expect_tensors_match(g, *w);
  EXPECT_TRUE(g.has_tensor("output.weight"));
  EXPECT_TRUE(g.has_tensor("blk.3.ffn_down.weight"));
  EXPECT_EQ(g.has_tensor("blk.0.attn_q_norm.weight"), arch == "qwen3");
  EXPECT_EQ(g.has_tensor("blk.0.attn_q.bias"), arch == "qwen2");
}

TEST_P(GgufArch, Q8TypesAndErrorBounds) {
  const std::string arch = GetParam(), dir = test::fresh_temp_dir("gguf", "q8_" + arch);
  auto w = tiny_model(arch, dir, /*tied=*/true, /*ffn=*/40);  // ffn_down rows of 40: not a multiple of 32
  const std::string path = dir + "/m.gguf";
  const auto s = gguf::write_gguf(*w, dir, path, gguf::GgmlType::Q8_0, "m");
  const GgufContents g = read_gguf(path);
  expect_valid_layout(g);
  expect_u32(g, "general.file_type", 7);
  expect_u32(g, "general.quantization_version", 2);
  EXPECT_FALSE(g.has_tensor("output.weight"));  // tied: llama.cpp reuses token_embd
  EXPECT_EQ(s.f16_fallback, w->config().num_hidden_layers);
  const ModelConfig& c = w->config();
  for (const NamedF32& t : w->named_tensors()) {
    const std::string name = gguf::tensor_name(c, t.name);
    const auto& info = g.tensor(name);
    const uint32_t want_type = t.shape.size() == 1 || name.ends_with("_norm.weight") ? 0u
                               : name.ends_with("ffn_down.weight")                   ? 1u
                                                                                     : 8u;
    EXPECT_EQ(info.type, want_type) << name;
    if (info.type != 8) continue;
    std::vector<float> x(t.data, t.data + test::gguf_numel(info));
    if (c.model_type == "llama" && (name.ends_with("attn_q.weight") || name.ends_with("attn_k.weight")))
      x = gguf::permute_rope_rows(t.data, t.shape[0] / c.head_dim, c.head_dim, t.shape[1]);
    const std::vector<float> y = test::gguf_values(g, info);
    for (size_t b = 0; b < x.size() / 32; ++b) {
      float amax = 0;
      for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
      // half a step of d = amax / 127, plus 127 steps of d's own f16 rounding (2^-11 relative)
      const float bound = amax / 127.0f * (0.5f + 127.0f * 0x1p-11f) + 1e-12f;
      for (size_t j = 0; j < 32; ++j) ASSERT_LE(std::fabs(x[b * 32 + j] - y[b * 32 + j]), bound) << name << " " << b;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, GgufArch, ::testing::Values("qwen3", "qwen2", "llama"));

// The permutation is what makes llama.cpp's RoPE on consecutive pairs equal HF's on split halves: rotating
// the permuted rows pairwise gives the permuted HF rotation, for every head and position.
TEST(GgufRope, PermutationMapsSplitHalfRopeToPairs) {
  const int64_t heads = 3, D = 8, half = D / 2;
  std::mt19937 rng(5);
  std::normal_distribution<float> nd;
  std::vector<float> q(heads * D);  // one column: [heads * D, 1]
  for (float& v : q) v = nd(rng);
  const std::vector<float> p = gguf::permute_rope_rows(q.data(), heads, D, 1);
  for (int pos : {0, 1, 7, 100}) {
    std::vector<float> hf = q, pairs = p;
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < half; ++i) {
        const double th = pos * std::pow(10000.0, -2.0 * i / D), co = std::cos(th), si = std::sin(th);
        float* a = &hf[h * D];
        const float x0 = a[i], x1 = a[i + half];
        a[i] = static_cast<float>(x0 * co - x1 * si);
        a[i + half] = static_cast<float>(x0 * si + x1 * co);
        float* b = &pairs[h * D];
        const float y0 = b[2 * i], y1 = b[2 * i + 1];
        b[2 * i] = static_cast<float>(y0 * co - y1 * si);
        b[2 * i + 1] = static_cast<float>(y0 * si + y1 * co);
      }
    EXPECT_EQ(gguf::permute_rope_rows(hf.data(), heads, D, 1), pairs) << "position " << pos;
  }
  // Rows move, not values: row (h, j * D/2 + i) lands at (h, 2i + j).
  EXPECT_EQ(p[1 * D + 2 * 3 + 1], q[1 * D + half + 3]);
  EXPECT_EQ(p[2 * D + 2 * 1 + 0], q[2 * D + 1]);
}

TEST(GgufEncode, F16MatchesTheCompilersRoundToNearestEven) {
  std::vector<float> xs = {0.0f,         -0.0f,    1.0f,      -2.5f,    65504.0f,   65519.99f,   65520.0f,   1e9f,
                           -1e9f,        0x1p-14f, 0x1p-24f,  0x1p-25f, 0x1.8p-25f, 0x1.8p-24f,  0x1.002p0f, 0x1.006p0f,
                           0x1.ffep-15f, INFINITY, -INFINITY, 1e-30f,   3.14159f,   0x1.fffp-15f};
  std::mt19937 rng(3);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 1000000; ++i) {
    uint32_t u = bits(rng);
    if (i % 2) u = (u & 0x807fffffu) | ((100u + u % 50u) << 23);  // half of them near f16's range
    float f;
    std::memcpy(&f, &u, 4);
    if (!std::isnan(f)) xs.push_back(f);
  }
  for (float f : xs) {
    const _Float16 h = static_cast<_Float16>(f);
    uint16_t want;
    std::memcpy(&want, &h, 2);
    ASSERT_EQ(gguf::f32_to_f16(f), want) << std::hexfloat << f;
  }
  EXPECT_EQ(gguf::f32_to_f16(NAN) & 0x7e00, 0x7e00);  // a quiet NaN
}

TEST(GgufEncode, Q8BlocksAsGgmlsReferenceQuantizer) {
  std::vector<float> x(64);
  for (int j = 0; j < 32; ++j) x[j] = (j - 16) * 0.25f;  // amax 4: d = 4/127
  // second block all zero: d = 0, q = 0
  std::vector<uint8_t> out(gguf::encoded_bytes(gguf::GgmlType::Q8_0, 64));
  ASSERT_EQ(out.size(), 68u);
  gguf::quantize_q8_0(x.data(), 64, out.data());
  uint16_t d0;
  std::memcpy(&d0, out.data(), 2);
  EXPECT_EQ(d0, gguf::f32_to_f16(4.0f / 127.0f));
  EXPECT_EQ(static_cast<int8_t>(out[2 + 0]), -127);                                               // -4 / d
  EXPECT_EQ(static_cast<int8_t>(out[2 + 17]), static_cast<int8_t>(std::lround(0.25 * 127 / 4)));  // 7.9375 -> 8
  for (int j = 0; j < 34; ++j) EXPECT_EQ(out[34 + j], 0) << j;
  std::vector<uint8_t> small(34);
  EXPECT_TRUE(
      test::contains(test::error_of([&] { gguf::quantize_q8_0(x.data(), 33, small.data()); }), "multiple of 32"));
}

}  // namespace
}  // namespace grpo
