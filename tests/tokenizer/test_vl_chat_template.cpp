// The vision byte tokenizer and its vision-language chat template: image items become
// <|vision_start|><|image_pad|><|vision_end|> at their place among the text items (Qwen3-VL's rendering),
// string contents and text-only turns render as in ChatML, add_vision_id numbers the pictures, and the
// vision markers are single special tokens.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "tokenizer/byte_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace grpo {
namespace {

using nlohmann::ordered_json;

const Tokenizer& vision_tokenizer() {
  static const Tokenizer tok = [] {
    const std::string dir =
        (std::filesystem::temp_directory_path() / ("grpo_test_vl_tokenizer_" + std::to_string(::getpid()))).string();
    write_byte_tokenizer(dir, /*vision=*/true);
    Tokenizer t = Tokenizer::load(dir);
    std::filesystem::remove_all(dir);
    return t;
  }();
  return tok;
}

std::string render(const std::string& messages, bool generation_prompt = true, const std::string& extra = "{}") {
  return vision_tokenizer().apply_chat_template(ordered_json::parse(messages), nullptr, generation_prompt,
                                                ordered_json::parse(extra));
}

TEST(VisionChatTemplate, ImageItemsAtTheirPlace) {
  EXPECT_EQ(render(R"([{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Describe this image."}]}])"),
            "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Describe this image.<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(render(R"([{"role": "user", "content": [{"type": "text", "text": "A"}, {"type": "image", "image": "a.png"},
                       {"type": "text", "text": "B"}, {"image_url": "b.png"}, {"type": "text", "text": "C"}]}])",
                   false),
            "<|im_start|>user\nA<|vision_start|><|image_pad|><|vision_end|>B<|vision_start|><|image_pad|><|vision_end|>C"
            "<|im_end|>\n");
}

TEST(VisionChatTemplate, StringContentsSystemAndAssistantTurns) {
  EXPECT_EQ(render(R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                       {"role": "assistant", "content": [{"type": "text", "text": "Hello"}, {"type": "text", "text": "!"}]}])",
                   false),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n");
}

TEST(VisionChatTemplate, VisionIdsAndVideos) {
  EXPECT_EQ(render(R"([{"role": "user", "content": [{"type": "image"}, {"type": "video"}, {"type": "image"}]}])", false,
                   R"({"add_vision_id": true})"),
            "<|im_start|>user\nPicture 1: <|vision_start|><|image_pad|><|vision_end|>"
            "Video 1: <|vision_start|><|video_pad|><|vision_end|>Picture 2: <|vision_start|><|image_pad|><|vision_end|>"
            "<|im_end|>\n");
}

TEST(VisionChatTemplate, VisionMarkersAreSingleTokens) {
  const Tokenizer& tok = vision_tokenizer();
  EXPECT_EQ(tok.vocab_size(), kByteTokenizerVisionVocab);
  EXPECT_EQ(tok.token_to_id("<|vision_start|>"), kByteVisionStartId);
  EXPECT_EQ(tok.token_to_id("<|vision_end|>"), kByteVisionEndId);
  EXPECT_EQ(tok.token_to_id("<|image_pad|>"), kByteImagePadId);
  EXPECT_EQ(tok.token_to_id("<|video_pad|>"), kByteVideoPadId);
  EXPECT_TRUE(tok.is_special(kByteImagePadId));
  EXPECT_EQ(tok.encode("a<|vision_start|><|image_pad|><|vision_end|>b"),
            (std::vector<int32_t>{'a', kByteVisionStartId, kByteImagePadId, kByteVisionEndId, 'b'}));
  // The text tokenizer is unchanged.
  EXPECT_EQ(byte_tokenizer_added_tokens().size(), 5u);
  EXPECT_EQ(byte_tokenizer_added_tokens(true).size(), 9u);
}

}  // namespace
}  // namespace grpo
