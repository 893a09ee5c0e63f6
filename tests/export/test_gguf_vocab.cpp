// GGUF export's tokenizer metadata and refusals: the byte tokenizer of tiny/small models and Qwen3's real
// tokenizer as llama.cpp's gpt2 BPE keys (tokens, types, merges, special ids, flags, chat template), bf16
// files, the Qwen3-VL refusal naming the projector file, and bad input (missing files, unknown
// pre-tokenizers, types) with errors that name the file or field.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/dtype.h"
#include "core/files.h"
#include "error_of.h"
#include "export/gguf_model.h"
#include "export/gguf_vocab.h"
#include "gguf_reader.h"
#include "model/init.h"
#include "model/presets.h"
#include "model/weights.h"
#include "test_util.h"
#include "tokenizer/byte_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace grpo {
namespace {

using test::contains;
using test::error_of;

const std::string kQwen3Tokenizer = std::string(GRPO_SHARED_DIR) + "/models/qwen3-tokenizer";

TEST(GgufVocab, ByteTokenizerAsGpt2Bpe) {
  const std::string dir = test::fresh_temp_dir("gguf_vocab", "bytes");
  write_byte_tokenizer(dir);
  const ModelConfig c = preset_config("qwen3", "tiny");  // vocab_size 384: ids 261.. unused
  const gguf::Vocab v = gguf::read_vocab(dir, c);
  ASSERT_EQ(v.tokens.size(), 384u);
  ASSERT_EQ(v.types.size(), 384u);
  EXPECT_EQ(v.tokens[65], "A");
  EXPECT_EQ(v.tokens[32], "\xC4\xA0");  // the space byte as GPT-2's byte-level character U+0120
  EXPECT_EQ(v.tokens[10], "\xC4\x8A");  // newline: U+010A
  EXPECT_EQ(v.types[65], gguf::kNormal);
  EXPECT_EQ(v.tokens[256], "<|endoftext|>");
  EXPECT_EQ(v.types[256], gguf::kControl);
  EXPECT_EQ(v.types[258], gguf::kControl);  // <|im_end|>
  EXPECT_EQ(v.tokens[259], "<think>");
  EXPECT_EQ(v.types[259], gguf::kUserDefined);
  EXPECT_EQ(v.tokens[261], "[PAD261]");
  EXPECT_EQ(v.types[383], gguf::kUnused);
  EXPECT_TRUE(v.merges.empty());
  EXPECT_EQ(v.pre, "qwen2");
  EXPECT_EQ(v.eos, 258);
  EXPECT_EQ(v.pad, 256);
  EXPECT_FALSE(v.add_bos);
  EXPECT_FALSE(v.add_eos);
  EXPECT_EQ(v.chat_template, Tokenizer::load(dir).chat_template());
  EXPECT_FALSE(v.chat_template.empty());
}

TEST(GgufVocab, Qwen3TokenizerKeepsMergesIdsAndTypes) {
  ModelConfig c = preset_config("qwen3", "qwen3-0.6b");  // vocab_size 151936, bos_token_id 151643
  const gguf::Vocab v = gguf::read_vocab(kQwen3Tokenizer, c);
  const auto tj = nlohmann::json::parse(read_file(kQwen3Tokenizer + "/tokenizer.json"));
  ASSERT_EQ(v.tokens.size(), 151936u);
  ASSERT_EQ(v.merges.size(), tj["model"]["merges"].size());
  EXPECT_EQ(v.merges[0], "\xC4\xA0 \xC4\xA0");  // ["Ġ", "Ġ"] -> "Ġ Ġ"
  EXPECT_EQ(v.pre, "qwen2");
  EXPECT_EQ(v.tokens[151644], "<|im_start|>");
  EXPECT_EQ(v.types[151644], gguf::kControl);
  EXPECT_EQ(v.types[151660], gguf::kControl);  // <|fim_middle|>: not special, but written <|...|>
  EXPECT_EQ(v.tokens[151667], "<think>");
  EXPECT_EQ(v.types[151667], gguf::kUserDefined);  // not special: matched in text as a word of its own
  EXPECT_EQ(v.tokens[151669], "[PAD151669]");
  EXPECT_EQ(v.types[151935], gguf::kUnused);
  EXPECT_EQ(v.eos, 151645);  // tokenizer_config's <|im_end|>
  EXPECT_EQ(v.pad, 151643);
  EXPECT_EQ(v.bos, 151643);  // tokenizer_config has none: config.json's bos_token_id
  EXPECT_FALSE(v.add_bos);
  // Token strings are tokenizer.json's own (byte-level), ids unchanged.
  const Tokenizer t = Tokenizer::load(kQwen3Tokenizer);
  for (int32_t id : t.encode("Hello world, 1234 ünïcode\n\tthe end"))
    EXPECT_EQ(v.tokens[static_cast<size_t>(id)], t.id_to_token(id)) << id;
}

TEST(GgufVocab, WrittenKeysAndTypes) {
  const std::string dir = test::fresh_temp_dir("gguf_vocab", "keys");
  ModelConfig c = preset_config("llama", "tiny");
  ModelWeights w(c);
  init_parameters(w, 3);
  write_byte_tokenizer(dir);
  gguf::write_gguf(w, dir, dir + "/m.gguf", gguf::GgmlType::BF16, "m");
  const auto g = test::read_gguf(dir + "/m.gguf");
  EXPECT_EQ(g.kv.at("tokenizer.ggml.model").value, "gpt2");
  EXPECT_EQ(g.kv.at("tokenizer.ggml.tokens").type, 9u);
  EXPECT_EQ(g.kv.at("tokenizer.ggml.tokens").elem_type, 8u);
  EXPECT_EQ(g.kv.at("tokenizer.ggml.tokens").value.size(), 384u);
  EXPECT_EQ(g.kv.at("tokenizer.ggml.token_type").elem_type, 5u);  // i32
  EXPECT_EQ(g.kv.at("tokenizer.ggml.merges").elem_type, 8u);
  EXPECT_EQ(g.kv.at("tokenizer.ggml.merges").value.size(), 0u);
  for (const char* k : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.padding_token_id"})
    EXPECT_EQ(g.kv.at(k).type, 4u) << k;
  EXPECT_EQ(g.kv.at("tokenizer.ggml.add_bos_token").type, 7u);
  EXPECT_EQ(g.kv.at("tokenizer.ggml.add_bos_token").value, false);
  EXPECT_EQ(g.kv.at("tokenizer.chat_template").type, 8u);
  EXPECT_EQ(g.kv.at("general.file_type").value, 32);
  // bf16: 2-D tensors rounded to nearest even, norms kept f32.
  const auto& emb = g.tensor("token_embd.weight");
  EXPECT_EQ(emb.type, 30u);
  const std::vector<float> got = test::gguf_values(g, emb);
  const float* src = ModelTensors::as<float>(w.f32().embed);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], bf16_to_f32(f32_to_bf16(src[i]))) << i;
  EXPECT_EQ(g.tensor("blk.0.attn_norm.weight").type, 0u);
  EXPECT_EQ(g.tensor("output_norm.weight").type, 0u);
}

TEST(GgufRefusal, Qwen3VlNamesTheProjectorFile) {
  const ModelConfig c = load_model_config(test::kReferenceVl + "config.json");
  const std::string e = error_of([&] { gguf::check_exportable(c, "qwen3-vl"); });
  EXPECT_TRUE(contains(e, "Qwen3-VL")) << e;
  EXPECT_TRUE(contains(e, "mmproj")) << e;
  EXPECT_TRUE(contains(e, "projector")) << e;
}

TEST(GgufRefusal, YarnRopeAndUnknownTypes) {
  ModelConfig c = preset_config("qwen3", "tiny");
  c.rope_scaling.type = "yarn";
  EXPECT_TRUE(contains(error_of([&] { gguf::check_exportable(c, "m"); }), "rope_scaling type \"yarn\""));
  EXPECT_TRUE(contains(error_of([] { gguf::parse_file_type("q4_0"); }), "expected f32, f16, bf16 or q8_0"));
}

TEST(GgufBadInput, MissingOrUnusableTokenizerNamesTheFile) {
  const std::string dir = test::fresh_temp_dir("gguf_vocab", "bad");
  const ModelConfig c = preset_config("qwen3", "tiny");
  std::string e = error_of([&] { gguf::read_vocab(dir, c); });
  EXPECT_TRUE(contains(e, dir + "/tokenizer.json: missing")) << e;

  // Qwen3's tokenizer with a split llama.cpp has no name for (its merges make the split matter).
  auto tj = nlohmann::json::parse(read_file(kQwen3Tokenizer + "/tokenizer.json"));
  std::filesystem::copy_file(kQwen3Tokenizer + "/tokenizer_config.json", dir + "/tokenizer_config.json");
  tj["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\d+";
  write_file_atomic(dir + "/tokenizer.json", tj.dump());
  e = error_of([&] { gguf::read_vocab(dir, preset_config("qwen3", "qwen3-0.6b")); });
  EXPECT_TRUE(contains(e, dir + "/tokenizer.json.pre_tokenizer")) << e;
  EXPECT_TRUE(contains(e, "is not a split llama.cpp implements")) << e;

  ModelConfig small_vocab = c;
  small_vocab.vocab_size = 100;
  std::filesystem::remove(dir + "/tokenizer_config.json");
  write_byte_tokenizer(dir);
  e = error_of([&] { gguf::read_vocab(dir, small_vocab); });
  EXPECT_TRUE(contains(e, "vocab_size 100")) << e;
}

TEST(GgufBadInput, UnwritableOutputNamesThePath) {
  const std::string dir = test::fresh_temp_dir("gguf_vocab", "out");
  ModelWeights w(preset_config("qwen2", "tiny"));
  write_byte_tokenizer(dir);
  const std::string out = dir + "/no/such/folder/m.gguf";
  const std::string e = error_of([&] { gguf::write_gguf(w, dir, out, gguf::GgmlType::F32, "m"); });
  EXPECT_TRUE(contains(e, out)) << e;
}

}  // namespace
}  // namespace grpo
