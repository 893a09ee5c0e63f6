// Tests of `grpo init` and `grpo inspect` through the built binary (GRPO_BINARY): every architecture x
// the tiny preset initialises a loadable checkpoint with the documented init statistics, inspect
// describes it, and inspect exits non-zero naming the problem for corrupted checkpoints. Also checks that
// the byte tokenizer files load with the project's tokenizer and encode bytes and ChatML specials.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli_run.h"
#include "core/files.h"
#include "model/checkpoint.h"
#include "tokenizer/byte_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "test_util.h"

using namespace grpo;
namespace fs = std::filesystem;
using test::run_grpo;

namespace {

using grpo::test::fresh_temp_dir;

std::vector<float> load(const Checkpoint& ck, const std::string& name) {
  const StTensor* t = ck.find(name);
  std::vector<float> v(static_cast<size_t>(st_numel(t->shape)));
  tensor_to_f32(*t, v.data(), static_cast<int64_t>(v.size()), ck.file_of(name));
  return v;
}

}  // namespace

TEST(CliInit, EveryArchitectureTinyInitialisesAndInspects) {
  for (const char* arch : {"qwen3", "qwen2", "llama"}) {
    SCOPED_TRACE(arch);
    const std::string out = fresh_temp_dir("cli_ckpt", std::string("init_") + arch, /*create=*/false);
    test::CommandResult r = run_grpo(std::string("init --arch ") + arch + " --preset tiny --seed 3 --out " + out);
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("parameters:"), std::string::npos) << r.output;
    Checkpoint ck = Checkpoint::open(out);
    const ModelConfig& c = ck.config();
    EXPECT_EQ(c.hidden_size, 128);
    EXPECT_EQ(c.num_hidden_layers, 4);
    EXPECT_EQ(c.qk_norm, std::string(arch) == "qwen3");
    EXPECT_EQ(c.qkv_bias, std::string(arch) == "qwen2");
    EXPECT_TRUE(fs::exists(out + "/tokenizer.json"));
    EXPECT_TRUE(fs::exists(out + "/tokenizer_config.json"));
    // Init statistics: embeddings ~ N(0, 0.02), norms 1, biases 0.
    std::vector<float> e = load(ck, "model.embed_tokens.weight");
    double sum = 0, sq = 0;
    for (float v : e) sum += v, sq += double(v) * v;
    const double mean = sum / e.size(), sd = std::sqrt(sq / e.size() - mean * mean);
    EXPECT_NEAR(mean, 0.0, 0.001);
    EXPECT_NEAR(sd, 0.02, 0.001);
    for (float v : load(ck, "model.layers.0.input_layernorm.weight")) ASSERT_EQ(v, 1.0f);
    if (c.qkv_bias) {
      for (float v : load(ck, "model.layers.0.self_attn.q_proj.bias")) ASSERT_EQ(v, 0.0f);
    }

    test::CommandResult ins = run_grpo("inspect " + out);
    ASSERT_EQ(ins.status, 0) << ins.output;
    EXPECT_NE(ins.output.find(c.architecture), std::string::npos) << ins.output;
    EXPECT_NE(ins.output.find("model.layers.3.mlp.down_proj.weight"), std::string::npos) << ins.output;
    EXPECT_NE(ins.output.find(std::to_string(parameter_count(c))), std::string::npos) << ins.output;
    fs::remove_all(out);
  }
}

TEST(CliInit, SeedIsDeterministicAndBf16AndRefusesToOverwrite) {
  const std::string a = fresh_temp_dir("cli_ckpt", "seed_a", /*create=*/false), b = fresh_temp_dir("cli_ckpt", "seed_b", /*create=*/false), c = fresh_temp_dir("cli_ckpt", "seed_c", /*create=*/false);
  ASSERT_EQ(run_grpo("init --arch qwen3 --preset tiny --seed 5 --out " + a).status, 0);
  ASSERT_EQ(run_grpo("init --arch qwen3 --preset tiny --seed 5 --out " + b).status, 0);
  ASSERT_EQ(run_grpo("init --arch qwen3 --preset tiny --seed 6 --dtype bf16 --out " + c).status, 0);
  EXPECT_EQ(read_file(a + "/model.safetensors"), read_file(b + "/model.safetensors"));
  Checkpoint cc = Checkpoint::open(c);
  EXPECT_EQ(cc.find("model.embed_tokens.weight")->dtype, StDType::BF16);
  EXPECT_EQ(cc.config().dtype, DType::BF16);
  EXPECT_NE(load(cc, "model.embed_tokens.weight")[0],
            bf16_to_f32(f32_to_bf16(load(Checkpoint::open(a), "model.embed_tokens.weight")[0])));
  test::CommandResult again = run_grpo("init --arch qwen3 --preset tiny --out " + a);
  EXPECT_NE(again.status, 0);
  EXPECT_NE(again.output.find("already exists"), std::string::npos) << again.output;
  EXPECT_EQ(run_grpo("init --arch qwen3 --preset tiny --seed 9 --force --out " + a).status, 0);
  EXPECT_NE(read_file(a + "/model.safetensors"), read_file(b + "/model.safetensors"));
  fs::remove_all(a);
  fs::remove_all(b);
  fs::remove_all(c);
}

TEST(CliInit, FromConfigFileAndCopiedTokenizer) {
  const std::string out = fresh_temp_dir("cli_ckpt", "from_config", /*create=*/false);
  const std::string ref = std::string(GRPO_SHARED_DIR) + "/reference/models/qwen3/config.json";
  const std::string tok = std::string(GRPO_SHARED_DIR) + "/models/qwen3-tokenizer";
  // The Qwen3 tokenizer has 151669 ids, more than this config's 512: refused.
  test::CommandResult small = run_grpo("init --config " + ref + " --tokenizer " + tok + " --out " + out);
  EXPECT_NE(small.status, 0);
  EXPECT_NE(small.output.find("vocab_size"), std::string::npos) << small.output;
  EXPECT_FALSE(fs::exists(out));
  test::CommandResult r = run_grpo("init --config " + ref + " --out " + out);
  ASSERT_EQ(r.status, 0) << r.output;
  Checkpoint ck = Checkpoint::open(out);
  EXPECT_EQ(ck.config().head_dim, 32);
  EXPECT_NE(ck.find("lm_head.weight"), nullptr);
  fs::remove_all(out);
  EXPECT_NE(run_grpo("init --config " + ref + " --arch qwen3 --out " + out).status, 0);
  EXPECT_NE(run_grpo("init --arch qwen3 --out " + out).status, 0);  // no preset
  EXPECT_NE(run_grpo("init --arch mistral --preset tiny --out " + out).status, 0);
}

TEST(CliInspect, CorruptedCheckpointsExitNonZeroWithTheError) {
  const std::string out = fresh_temp_dir("cli_ckpt", "corrupt", /*create=*/false);
  ASSERT_EQ(run_grpo("init --arch qwen2 --preset tiny --out " + out).status, 0);
  // Truncate the weights file.
  const std::string weights = out + "/model.safetensors";
  std::string bytes = read_file(weights);
  write_file_atomic(weights, bytes.substr(0, bytes.size() - 100));
  test::CommandResult r = run_grpo("inspect " + out);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("model.safetensors"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("data size"), std::string::npos) << r.output;
  // Corrupt the header length.
  bytes[7] = '\x7f';
  write_file_atomic(weights, bytes);
  r = run_grpo("inspect " + out);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("header length"), std::string::npos) << r.output;
  // Break config.json.
  write_file_atomic(out + "/config.json", "{\"architectures\": [\"GPT2LMHeadModel\"]}");
  r = run_grpo("inspect " + out);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("GPT2LMHeadModel"), std::string::npos) << r.output;
  EXPECT_NE(run_grpo("inspect " + out + "/nonexistent").status, 0);
  fs::remove_all(out);
}

TEST(ByteTokenizer, LoadsAndEncodesBytesAndSpecials) {
  const std::string dir = fresh_temp_dir("cli_ckpt", "bytetok", /*create=*/false);
  write_byte_tokenizer(dir);
  nlohmann::json j = nlohmann::json::parse(read_file(dir + "/tokenizer.json"));
  EXPECT_EQ(j["model"]["vocab"].size(), 256u);
  EXPECT_EQ(j["model"]["vocab"]["\xC4\xA0"], 32);  // space is U+0120 'Ġ'
  EXPECT_EQ(j["model"]["vocab"]["\xC4\x8A"], 10);  // newline is U+010A 'Ċ'
  EXPECT_EQ(j["model"]["vocab"]["a"], 97);
  EXPECT_EQ(j["added_tokens"].size(), 5u);
  Tokenizer t = Tokenizer::load(dir);
  EXPECT_EQ(t.vocab_size(), kByteTokenizerVocab);
  const std::string text = "h\xC3\xA9 ok\n";  // "hé ok\n"
  std::vector<int32_t> ids = t.encode(text);
  EXPECT_EQ(ids, (std::vector<int32_t>{'h', 0xC3, 0xA9, ' ', 'o', 'k', '\n'}));
  EXPECT_EQ(t.decode(ids), text);
  EXPECT_EQ(t.encode("<|im_start|>user"), (std::vector<int32_t>{257, 'u', 's', 'e', 'r'}));
  EXPECT_EQ(t.token_to_id("<|im_end|>"), 258);
  EXPECT_EQ(t.token_to_id("</think>"), 260);
  EXPECT_EQ(t.eos_id(), 258);
  EXPECT_EQ(t.pad_id(), 256);
  ChatTemplateInput in;
  in.messages = nlohmann::json::array({{{"role", "user"}, {"content", "hi"}}});
  in.add_generation_prompt = true;
  in.extra = {{"enable_thinking", false}};
  EXPECT_EQ(t.apply_chat_template(in), "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  fs::remove_all(dir);
}
