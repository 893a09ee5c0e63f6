// `grpo export --format gguf` end to end through the built binary: a model exported without an adapter
// (magic and version at the start of the file), an adapter merged in on the way, the Qwen3-VL refusal
// before any weight loads, and bad input (a missing model folder, hf without --adapter) named in the error.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "cli_run.h"
#include "core/files.h"
#include "export/gguf_reader.h"
#include "model/weights.h"
#include "tokenizer/byte_tokenizer.h"
#include "test_util.h"

namespace grpo {
namespace {

using test::contains;
using test::run_grpo;

TEST(CliGguf, ExportsAModelAndMergesAnAdapter) {
  const std::string d = test::fresh_temp_dir("cli_gguf", "export");
  ASSERT_EQ(run_grpo("init --arch qwen2 --preset tiny --out " + d + "/m").status, 0);
  auto r = run_grpo("export --format gguf --model " + d + "/m --out " + d + "/m.gguf --type q8_0");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "GGUF v3, q8_0")) << r.output;
  const std::string bytes = read_file(d + "/m.gguf");
  ASSERT_GT(bytes.size(), 8u);
  uint32_t version;
  std::memcpy(&version, bytes.data() + 4, 4);
  EXPECT_EQ(bytes.substr(0, 4), "GGUF");
  EXPECT_EQ(version, 3u);

  // An adapter merged on the way: the GGUF's tensors equal the merged Hugging Face export's.
  const std::string ref = test::kReferenceModels + "qwen3", base = d + "/base";
  std::filesystem::create_directories(base);
  for (const char* f : {"config.json", "model.safetensors"}) std::filesystem::copy_file(ref + "/" + f, base + "/" + f);
  write_byte_tokenizer(base);  // the reference model has no tokenizer; its vocab_size 512 holds the byte one
  const std::string adapter = ref + "/lora_adapter";
  r = run_grpo("export --format gguf --adapter " + adapter + " --model " + base + " --out " + d + "/a.gguf");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "adapted linears merged")) << r.output;
  ASSERT_EQ(run_grpo("export --adapter " + adapter + " --model " + base + " --out " + d + "/hf").status, 0);
  const test::GgufContents g = test::read_gguf(d + "/a.gguf");
  const auto hf = ModelWeights::load(d + "/hf");
  const auto values_of = [&](const std::string& name) {
    for (const NamedF32& t : hf->named_tensors()) {
      int64_t n = 1;
      for (int64_t dim : t.shape) n *= dim;
      if (t.name == name) return std::vector<float>(t.data, t.data + n);
    }
    return std::vector<float>();
  };
  for (const auto& [hf_name, gguf_name] : std::vector<std::pair<std::string, std::string>>{
           {"model.layers.1.self_attn.v_proj.weight", "blk.1.attn_v.weight"},
           {"model.layers.0.mlp.down_proj.weight", "blk.0.ffn_down.weight"},
           {"lm_head.weight", "output.weight"}})
    EXPECT_EQ(test::gguf_values(g, g.tensor(gguf_name)), values_of(hf_name)) << hf_name;
}

TEST(CliGguf, RefusesQwen3VlAndBadInput) {
  const std::string d = test::fresh_temp_dir("cli_gguf", "refuse");
  ASSERT_EQ(run_grpo("init --arch qwen3-vl --preset tiny --config-only --out " + d + "/vl").status, 0);
  auto r = run_grpo("export --format gguf --model " + d + "/vl --out " + d + "/vl.gguf");
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(contains(r.output, "mmproj")) << r.output;
  EXPECT_FALSE(std::filesystem::exists(d + "/vl.gguf"));

  r = run_grpo("export --format gguf --model " + d + "/none --out " + d + "/x.gguf");
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(contains(r.output, d + "/none/config.json")) << r.output;

  r = run_grpo("export --out " + d + "/hf");
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(contains(r.output, "--format hf needs --adapter DIR")) << r.output;
  r = run_grpo("export --model " + d + "/vl --out " + d + "/hf");  // a folder with a config and no weights
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(contains(r.output, d + "/vl: no model.safetensors")) << r.output;
}

}  // namespace
}  // namespace grpo
