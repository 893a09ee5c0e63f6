// `grpo generate` with pictures on a `grpo init --arch qwen3-vl --preset tiny` model: a line's "images"
// (paths relative to the prompts file) fill its "<image>" placeholders or image items; the same prompt
// given as "prompt", as "messages" with an image item, or as "input_ids" with one pad or the pads already
// expanded greedily generates the same completion; a picture count that differs from the placeholders, a
// missing picture file and pictures on a text model are reported naming file:line and skipped.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_run.h"
#include "core/files.h"
#include "temp_dir.h"
#include "image/image.h"
#include "test_util.h"

namespace grpo {
namespace {

using grpo::test::read_jsonl;

using nlohmann::json;

// A 64x64 picture (4 merged tokens with the tiny preset's processor): left half red, right half blue.
void write_picture(const std::string& path) {
  Image im{64, 64, std::vector<uint8_t>(64 * 64 * 3, 0)};
  for (int y = 0; y < 64; ++y)
    for (int x = 0; x < 64; ++x) im.rgb[(y * 64 + x) * 3 + (x < 32 ? 0 : 2)] = 220;
  write_png(path, im);
}

TEST(CliGenerateVl, PicturesByPathSameCompletionInEveryForm) {
  test::TempDir dir;
  const std::string model = dir.path() + "/vl", text_model = dir.path() + "/text";
  ASSERT_EQ(test::run_grpo("init --arch qwen3-vl --preset tiny --seed 2 --out " + model).status, 0);
  write_picture(dir.path() + "/pic.png");
  // <|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Hi<|im_end|>\n<|im_start|>assistant\n
  std::vector<int> ids = {257, 'u', 's', 'e', 'r', '\n', 261, 263, 262, 'H', 'i', 258, '\n', 257};
  for (char c : std::string("assistant\n")) ids.push_back(c);
  std::vector<int> expanded = ids;
  expanded.insert(expanded.begin() + 7, 3, 263);  // 4 pads
  const json common = {{"images", {"pic.png"}}, {"max_new_tokens", 6}, {"temperature", 0}};
  std::vector<json> in = {
      {{"prompt", "<image>Hi"}},
      {{"messages", {{{"role", "user"}, {"content", {{{"type", "image"}}, {{"type", "text"}, {"text", "Hi"}}}}}}}},
      {{"prompt", {{{"role", "user"}, {"content", "<image>Hi"}}}}},  // a verl dataset row
      {{"input_ids", ids}},
      {{"input_ids", expanded}},
      {{"prompt", "<image><image>Hi"}},                              // 2 placeholders, 1 picture
      {{"prompt", "<image>Hi"}, {"images", {"missing.png"}}},       // no such file
  };
  std::string text;
  for (json& j : in) {
    for (auto it = common.begin(); it != common.end(); ++it)
      if (!j.contains(it.key())) j[it.key()] = it.value();
    text += j.dump() + "\n";
  }
  const std::string prompts = dir.write("p.jsonl", text), out = dir.path() + "/out.jsonl";
  const test::CommandResult r =
      test::run_grpo("generate --model " + model + " --prompts " + prompts + " --out " + out + " --chat --dtype f32",
                     "2>&1 >/dev/null");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find(prompts + ":6: 2 image placeholders (\"<image>\" or image items) but 1 pictures"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find(prompts + ":7: field \"images\": images[0]: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("missing.png"), std::string::npos) << r.output;
  const std::vector<json> got = read_jsonl(out);
  ASSERT_EQ(got.size(), 5u) << r.output;
  const json first = got[0]["completions"][0]["token_ids"];
  EXPECT_EQ(first.size(), 6u);
  for (size_t i = 1; i < got.size(); ++i) EXPECT_EQ(got[i]["completions"][0]["token_ids"], first) << i;

  ASSERT_EQ(test::run_grpo("init --arch qwen3 --preset tiny --out " + text_model).status, 0);
  const test::CommandResult t = test::run_grpo(
      "generate --model " + text_model + " --prompts " + prompts + " --out " + out + " --chat", "2>&1 >/dev/null");
  EXPECT_NE(t.output.find(prompts + ":1: field \"images\": the model has no preprocessor_config.json"),
            std::string::npos)
      << t.output;
}

}  // namespace
}  // namespace grpo
