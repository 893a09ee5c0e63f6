// Qwen3-VL through the built binary: `grpo init --arch qwen3-vl` (tiny and small with the byte tokenizer's
// vision tokens at config.json's ids, preprocessor_config.json, LayerNorm weights 1 and biases 0, the real
// tensor names), `grpo inspect` showing the vision tower, a tokenizer whose vision ids disagree with the
// config refused, and `grpo debug forward-backward` on the reference vl_case / grpo_case writing the case's
// keys (intermediates included) within the reference tolerances.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "cli_run.h"
#include "core/files.h"
#include "model/checkpoint.h"
#include "tokenizer/tokenizer.h"
#include "train/case_eval.h"
#include "test_util.h"

using namespace grpo;
namespace fs = std::filesystem;
using test::run_grpo;

namespace {

using grpo::test::rel_err;

using grpo::test::fresh_temp_dir;

const std::string kVl = std::string(GRPO_SHARED_DIR) + "/reference/models/qwen3-vl/";

}  // namespace

TEST(CliVl, InitTinyAndSmallThenInspect) {
  for (const char* preset : {"tiny", "small"}) {
    SCOPED_TRACE(preset);
    const std::string out = fresh_temp_dir("cli_vl", std::string("init_") + preset, /*create=*/false);
    const test::CommandResult r = run_grpo(std::string("init --arch qwen3-vl --preset ") + preset + " --out " + out);
    ASSERT_EQ(r.status, 0) << r.output;
    Checkpoint ck = Checkpoint::open(out);
    const ModelConfig& c = ck.config();
    ASSERT_TRUE(c.has_vision());
    EXPECT_NE(ck.find("model.visual.blocks.0.attn.qkv.weight"), nullptr);
    EXPECT_NE(ck.find("model.language_model.layers.0.self_attn.q_proj.weight"), nullptr);
    const StTensor* ln = ck.find("model.visual.blocks.0.norm1.weight");
    ASSERT_NE(ln, nullptr);
    std::vector<float> v(static_cast<size_t>(st_numel(ln->shape)));
    tensor_to_f32(*ln, v.data(), static_cast<int64_t>(v.size()), out);
    for (float x : v) ASSERT_EQ(x, 1.0f);
    // The tokenizer's vision tokens have config.json's ids; the chat template renders image items.
    const Tokenizer tok = Tokenizer::load(out);
    EXPECT_EQ(tok.token_to_id("<|image_pad|>"), c.image_token_id);
    EXPECT_EQ(tok.token_to_id("<|video_pad|>"), c.video_token_id);
    EXPECT_EQ(tok.token_to_id("<|vision_start|>"), c.vision_start_token_id);
    EXPECT_EQ(tok.token_to_id("<|vision_end|>"), c.vision_end_token_id);
    const nlohmann::ordered_json messages = nlohmann::ordered_json::parse(
        R"([{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "How many?"}]}])");
    const std::string text = tok.apply_chat_template(messages, nullptr, true, nlohmann::ordered_json::object());
    EXPECT_EQ(text, "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>How many?<|im_end|>\n"
                    "<|im_start|>assistant\n");
    const nlohmann::json pre = nlohmann::json::parse(read_file(out + "/preprocessor_config.json"));
    EXPECT_EQ(pre["patch_size"], 16);
    EXPECT_EQ(pre["merge_size"], 2);
    EXPECT_EQ(pre["image_mean"], nlohmann::json({0.5, 0.5, 0.5}));

    const test::CommandResult ins = run_grpo("inspect --no-tensors " + out);
    ASSERT_EQ(ins.status, 0) << ins.output;
    EXPECT_NE(ins.output.find("Qwen3VLForConditionalGeneration"), std::string::npos) << ins.output;
    EXPECT_NE(ins.output.find("vision:       depth " + std::to_string(c.vision.depth)), std::string::npos) << ins.output;
    EXPECT_NE(ins.output.find("m-rope:       interleaved"), std::string::npos) << ins.output;
    EXPECT_NE(ins.output.find("image_pad " + std::to_string(c.image_token_id)), std::string::npos) << ins.output;
    fs::remove_all(out);
  }
}

TEST(CliVl, RefusesMismatchedPresetsAndTokenizers) {
  const std::string out = fresh_temp_dir("cli_vl", "bad", /*create=*/false);
  test::CommandResult r = run_grpo("init --arch qwen3-vl --preset qwen3-0.6b --out " + out);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("qwen3-vl-2b"), std::string::npos) << r.output;
  // The 2B shape's ids are Qwen's (151655, ...): the byte tokenizer cannot serve it.
  r = run_grpo("init --arch qwen3-vl --preset qwen3-vl-2b --out " + out);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("<|vision_start|> has id"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out + "/config.json"));
  fs::remove_all(out);
}

// A text model's tokenizer with Qwen's vision ids (the Qwen3 tokenizer) on a Qwen3-VL config: its template
// renders content as strings only, so the checkpoint gets the vision-language template, which places pictures.
TEST(CliVl, InitWithATextTokenizerGetsTheVisionTemplate) {
  const std::string d = fresh_temp_dir("cli_vl", "qwen_tokenizer");
  nlohmann::json cfg = nlohmann::json::parse(read_file(kVl + "config.json"));
  cfg["image_token_id"] = 151655;
  cfg["video_token_id"] = 151656;
  cfg["vision_start_token_id"] = 151652;
  cfg["vision_end_token_id"] = 151653;
  cfg["text_config"]["vocab_size"] = 151936;
  cfg["text_config"]["bos_token_id"] = 151643;
  cfg["text_config"]["eos_token_id"] = 151645;
  write_file_atomic(d + "/config.json", cfg.dump(2));
  const std::string out = d + "/model";
  const test::CommandResult r = run_grpo("init --config " + d + "/config.json --tokenizer " +
                                         std::string(GRPO_SHARED_DIR) + "/models/qwen3-tokenizer --out " + out);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("does not place pictures"), std::string::npos) << r.output;
  const Tokenizer tok = Tokenizer::load(out);
  const nlohmann::ordered_json messages = nlohmann::ordered_json::parse(
      R"([{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "How many?"}]}])");
  EXPECT_EQ(tok.apply_chat_template(messages, nullptr, true, nlohmann::ordered_json::object()),
            "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>How many?<|im_end|>\n"
            "<|im_start|>assistant\n");
  // The rest of the copied tokenizer_config.json (its special tokens) is kept.
  const nlohmann::json copied = nlohmann::json::parse(read_file(out + "/tokenizer_config.json"));
  EXPECT_EQ(copied["eos_token"], "<|im_end|>");
  fs::remove_all(d);
}

TEST(CliVl, DebugForwardBackwardOnTheReferenceCases) {
  const std::string d = fresh_temp_dir("cli_vl", "debug", /*create=*/false);
  fs::create_directories(d);
  for (const char* kase : {"vl_case", "grpo_case"}) {
    const std::string out = d + "/" + kase + ".safetensors";
    std::string args = "debug forward-backward --model " + kVl + " --case " + kVl + kase + ".safetensors --out " + out +
                       " --checkpoint-activations";
    if (std::string(kase) == "grpo_case") args += " --grpo " + kVl + "grpo_case.json";
    const test::CommandResult r = run_grpo(args);
    ASSERT_EQ(r.status, 0) << r.output;
    SafetensorsFile ours = SafetensorsFile::open(out), ref = SafetensorsFile::open(kVl + kase + ".safetensors");
    int compared = 0;
    for (const StTensor& t : ref.tensors()) {
      const std::string& n = t.name;
      const bool grad = n.rfind("grad.", 0) == 0;
      const bool vision = n == "image_embeds" || n.rfind("deepstack_embeds.", 0) == 0 || n == "vision_pos_embeds" ||
                          n == "vision_block_input";
      if (!grad && !vision && n != "logits" && n != "token_logprobs" && n != "entropy" && n.rfind("loss", 0) != 0 &&
          n != "position_ids")
        continue;
      ASSERT_TRUE(ours.find(n)) << kase << ": missing " << n;
      std::vector<float> want;
      if (n == "position_ids")
        for (int64_t p : train::case_ints(ref, n)) want.push_back(static_cast<float>(p));
      else
        want = train::case_floats(ref, n);
      const double e = rel_err(train::case_floats(ours, n), want);
      EXPECT_LE(e, n == "position_ids" ? 0.0 : grad ? 1e-3 : vision ? 1e-5 : 1e-4) << kase << ": " << n;
      ++compared;
    }
    EXPECT_GE(compared, 93) << kase;
  }
  fs::remove_all(d);
}
