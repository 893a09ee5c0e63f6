// A Qwen3-VL model behind the server: a picture sent as an image_url data URL gives, greedily, the tokens that
// `grpo generate`'s path gives for the same picture read from a file (prompt_line's "images"): both decode,
// preprocess and expand the picture's pads the same way.
#include <gtest/gtest.h>

#include "generate/options.h"
#include "generate/prompt_line.h"
#include "image/image.h"
#include "serve_fixture.h"

namespace grpo::serve {
namespace {

using nlohmann::json;

std::string base64(const std::string& bytes) {
  static const char* digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 2]);
    for (size_t k = 0; k < 4; ++k) out += i + k <= bytes.size() ? digits[(v >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

Image gradient(int64_t h, int64_t w, int shift) {
  Image im{h, w, std::vector<uint8_t>(static_cast<size_t>(h * w * 3))};
  for (size_t i = 0; i < im.rgb.size(); ++i) im.rgb[i] = static_cast<uint8_t>((i * 7 + shift) % 251);
  return im;
}

TEST(ServeVision, DataUrlPictureGivesTheTokensOfGeneratesFilePath) {
  const grpo::test::TempDir d;
  const std::string model = d.path() + "/vl";
  ASSERT_EQ(grpo::test::run_grpo("init --arch qwen3-vl --preset tiny --seed 2 --out " + model).status, 0);
  const Image picture = gradient(56, 84, 0);
  write_png(d.path() + "/a.png", picture);
  const std::string url = "data:image/png;base64," + base64(encode_png(picture));

  const generate::LoadedModel m = generate::load_model(model, "", "f32", 16, "");
  rollout::EngineConfig ec;
  ec.kv_memory_bytes = 64 << 20;
  rollout::Engine engine(*m.model, ec, rollout::tokenizer_decode_fn(*m.tok));
  ServerOptions o;
  o.port = 0;
  o.model_name = "vl";
  Server server(o, m, engine);
  const int port = server.bind();
  std::thread run([&] { server.run(); });
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(120);
  const json content = {{{"type", "text"}, {"text", "What is this?"}},
                        {{"type", "image_url"}, {"image_url", {{"url", url}}}}};
  const json body = {{"messages", {{{"role", "user"}, {"content", content}}}},
                     {"max_tokens", 8},
                     {"temperature", 0},
                     {"logprobs", true}};
  const auto served = c.Post("/v1/chat/completions", body.dump(), "application/json");
  server.shutdown();
  run.join();
  ASSERT_TRUE(served);
  ASSERT_EQ(served->status, 200) << served->body;

  const rollout::Request defaults = generate::request_defaults(generate::GenerateOptions{});
  const generate::LineContext line{.defaults = defaults,
                                   .tok = m.tokenizer(),
                                   .no_tokenizer = m.no_tokenizer,
                                   .chat = true,
                                   .vocab = m.model->vocab_size(),
                                   .context = m.model->max_positions(),
                                   .images = m.image_config(),
                                   .prompts_path = d.path() + "/prompts.jsonl",
                                   .image_pad = m.image_pad};
  const json row = {
      {"messages",
       {{{"role", "user"}, {"content", {{{"type", "text"}, {"text", "What is this?"}}, {{"type", "image"}}}}}}},
      {"images", {"a.png"}},
      {"max_new_tokens", 8},
      {"temperature", 0}};
  rollout::Request want = generate::request_of(generate::parse_line(row.dump()), line, 1);
  want.stop_token_ids = m.stop_ids;
  const rollout::SampleResult direct = test::direct_on(model, want).samples[0];
  const json reply = json::parse(served->body);
  EXPECT_EQ(reply["usage"]["prompt_tokens"], want.prompt.size());
  EXPECT_GT(want.prompt.size(), 20u);  // the picture's pads expanded
  ASSERT_EQ(reply["choices"][0]["logprobs"]["content"].size(), direct.tokens.size());
  for (size_t t = 0; t < direct.tokens.size(); ++t)
    EXPECT_EQ(reply["choices"][0]["logprobs"]["content"][t]["logprob"].get<float>(), direct.logprobs[t]) << t;
}

}  // namespace
}  // namespace grpo::serve
