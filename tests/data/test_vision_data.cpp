// Dataset rows with pictures (verl's vision format): image lists resolved against the data file,
// placeholders counted ("<image>" and image items) and a mismatch refused with file:line, grids from the
// pictures' headers, prompts rendered with the vision chat template and their pads expanded, pixels
// loaded only on demand and equal to the reference preprocessing, bad pictures named with their row.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "error_of.h"
#include "core/files.h"
#include "data/dataset.h"
#include "data/prompting.h"
#include "data/vision_data.h"
#include "image/image.h"
#include "temp_dir.h"
#include "tokenizer/byte_tokenizer.h"

using namespace grpo;
using test::error_of;

namespace {

const std::string kRef = std::string(GRPO_SHARED_DIR) + "/reference/models/qwen3-vl/";

// A data folder with the reference pictures in pics/ (image_a 64x96, image_b 32x32, image_c 34x52).
struct VisionFixture : ::testing::Test {
  void SetUp() override {
    std::filesystem::create_directories(dir.path() + "/pics");
    for (const char* name : {"image_a.png", "image_b.png", "image_c.png"})
      std::filesystem::copy_file(kRef + name, dir.path() + "/pics/" + name);
    processor = load_image_processor_config(kRef);  // min 1024, max 16384 pixels
    const std::string tok_dir = dir.path() + "/tokenizer";
    write_byte_tokenizer(tok_dir, /*vision=*/true);
    tok = std::make_unique<Tokenizer>(Tokenizer::load(tok_dir));
  }
  DatasetOptions options(bool chat = true) {
    DatasetOptions o;
    o.image_processor = &processor;
    o.encode_prompt = [this, chat](const Example& ex) { return encode_prompt(*tok, ex, chat, &processor); };
    return o;
  }
  test::TempDir dir;
  ImageProcessorConfig processor;
  std::unique_ptr<Tokenizer> tok;
};

std::vector<int32_t> ids_of(const std::string& text) { return std::vector<int32_t>(text.begin(), text.end()); }

TEST_F(VisionFixture, VerlRowsWithPicturesEncodeWithExpandedPads) {
  const std::string path = dir.write(
      "train.jsonl",
      R"({"data_source": "t", "prompt": [{"role": "user", "content": "<image>Hi"}], "images": ["pics/image_a.png"],)"
      R"( "reward_model": {"style": "rule", "ground_truth": "4"}})"
      "\n"
      R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "A"}, {"type": "image"},)"
      R"( {"type": "text", "text": "B"}, {"type": "image"}]}], "answer": 1, "images": ["pics/image_b.png", "pics/image_c.png"]})"
      "\n");
  const Dataset ds = load_dataset(path, options());
  ASSERT_EQ(ds.examples.size(), 2u);
  const Example& a = ds.examples[0];
  EXPECT_EQ(a.answer, "4");
  EXPECT_EQ(a.data_source, "t");
  ASSERT_EQ(a.images.size(), 1u);
  EXPECT_EQ(a.images[0], dir.path() + "/pics/image_a.png");
  ASSERT_EQ(a.image_grids.size(), 1u);
  EXPECT_EQ(a.image_grids[0], (ImageGrid{1, 4, 6}));
  // <|im_start|>user\n <|vision_start|> 6 x <|image_pad|> <|vision_end|> Hi<|im_end|>\n<|im_start|>assistant\n
  std::vector<int32_t> want = {257};
  for (int32_t c : ids_of("user\n")) want.push_back(c);
  want.push_back(kByteVisionStartId);
  want.insert(want.end(), 6, kByteImagePadId);
  want.push_back(kByteVisionEndId);
  for (int32_t c : ids_of("Hi")) want.push_back(c);
  want.push_back(258);
  for (int32_t c : ids_of("\n")) want.push_back(c);
  want.push_back(257);
  for (int32_t c : ids_of("assistant\n")) want.push_back(c);
  EXPECT_EQ(a.prompt_ids, want);

  const Example& b = ds.examples[1];
  EXPECT_EQ(b.image_grids, (std::vector<ImageGrid>{{1, 2, 2}, {1, 2, 4}}));
  EXPECT_EQ(prompt_text(*tok, b, true),
            "<|im_start|>user\nA<|vision_start|><|image_pad|><|vision_end|>B<|vision_start|><|image_pad|><|vision_end|>"
            "<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(std::count(b.prompt_ids.begin(), b.prompt_ids.end(), kByteImagePadId), 1 + 2);
}

TEST_F(VisionFixture, PicturesLoadOnDemandAsTheReferencePreprocessing) {
  const std::string path = dir.write("d.jsonl", R"({"prompt": "<image><image>two", "answer": 1, )"
                                                R"("images": ["pics/image_c.png", "pics/image_a.png"]})" "\n");
  const Dataset ds = load_dataset(path, options(/*chat=*/false));
  const Example& ex = ds.examples[0];
  EXPECT_EQ(prompt_text(*tok, ex, false),
            "<|vision_start|><|image_pad|><|vision_end|><|vision_start|><|image_pad|><|vision_end|>two");
  const PictureBatch b = load_example_pictures(ex, processor, path);
  EXPECT_EQ(b.pictures(), 2);
  EXPECT_EQ(b.rows(), 8 + 24);
  EXPECT_EQ(b.tokens(), 2 + 6);
  EXPECT_EQ(b.row_width, 1536);
  const PictureBatch c = preprocess_image(load_image(kRef + "image_c.png"), processor, "c");
  const PictureBatch a = preprocess_image(load_image(kRef + "image_a.png"), processor, "a");
  EXPECT_TRUE(std::equal(c.pixel_values.begin(), c.pixel_values.end(), b.pixel_values.begin()));
  EXPECT_TRUE(std::equal(a.pixel_values.begin(), a.pixel_values.end(), b.pixel_values.begin() + 8 * 1536));
  EXPECT_EQ(std::count(ex.prompt_ids.begin(), ex.prompt_ids.end(), kByteImagePadId), b.tokens());
}

TEST_F(VisionFixture, PlaceholderCountMismatchNamesFileAndLine) {
  const std::string good = R"({"prompt": "<image>x", "answer": 1, "images": ["pics/image_b.png"]})" "\n";
  struct Case {
    std::string line, expect;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"prompt": "<image><image>x", "answer": 1, "images": ["pics/image_b.png"]})",
            "2 image placeholders (\"<image>\" in the text or {\"type\": \"image\"} items) but 1 picture in \"images\""},
           {R"({"prompt": "x", "answer": 1, "images": ["pics/image_b.png"]})", "0 image placeholders"},
           {R"({"messages": [{"role": "user", "content": [{"type": "image"}]}], "answer": 1, "images": []})",
            "1 image placeholder ("},
           {R"({"prompt": "<image>", "answer": 1, "images": "pics/image_b.png"})", "must be a list of picture paths"},
           {R"({"prompt": "<image>", "answer": 1, "images": [3]})", "\"images\"[0] must be a picture path"},
           {R"({"messages": [{"role": "user", "content": [{"type": "video"}]}], "answer": 1, "images": []})",
            "video items are not supported"},
           {R"({"messages": [{"role": "user", "content": [{"type": "text"}]}], "answer": 1})",
            "messages[0].content[0] must be {\"type\": \"text\", \"text\": string}"},
           {R"({"prompt": [{"role": "user"}], "answer": 1})", "prompt[0] needs a string \"content\""},
           {R"({"prompt": "<image>", "images": ["pics/image_b.png"]})", "needs \"answer\" (or verl's"},
           {R"({"prompt": "<image>", "answer": 1, "images": ["pics/missing.png"]})",
            "images[0]: [image] " + dir.path() + "/pics/missing.png: cannot open"},
           {R"({"prompt": "<image>", "answer": 1, "images": ["train.jsonl"]})", "not a PNG or JPEG picture"},
           {R"({"prompt": "<image>", "answer": 1, "images": ["pics"]})", "is a folder"},
       }) {
    const std::string path = dir.write("train.jsonl", good + good + c.line + "\n" + good);
    const std::string e = error_of([&] { load_dataset(path, options()); });
    EXPECT_NE(e.find("[dataset] " + path + ":3: "), std::string::npos) << c.line << " -> " << e;
    EXPECT_NE(e.find(c.expect), std::string::npos) << c.line << " -> " << e;
  }
}

TEST_F(VisionFixture, PicturesTooSmallOrTooThinAreRefusedWithTheRow) {
  write_png(dir.path() + "/pics/tiny.png", Image{20, 40, std::vector<uint8_t>(20 * 40 * 3, 9)});
  write_png(dir.path() + "/pics/thin.png", Image{32, 6432, std::vector<uint8_t>(32 * 6432 * 3, 9)});
  for (const auto& [file, expect] : {std::pair{"tiny.png", "height 20 or width 40 smaller than factor 32"},
                                     std::pair{"thin.png", "aspect ratio above 200"}}) {
    const std::string path =
        dir.write("d.jsonl", std::string(R"({"prompt": "<image>", "answer": 1, "images": ["pics/)") + file + "\"]}\n");
    const std::string e = error_of([&] { load_dataset(path, options()); });
    EXPECT_NE(e.find(path + ":1: images[0]: [image] " + dir.path() + "/pics/" + file + ": " + expect), std::string::npos)
        << e;
  }
}

TEST_F(VisionFixture, AFileThatBreaksAfterLoadingIsNamedWhenUsed) {
  const std::string pic = dir.path() + "/pics/later.png";
  std::filesystem::copy_file(kRef + "image_a.png", pic);
  const std::string path = dir.write("d.jsonl", R"({"prompt": "<image>?", "answer": 1, "images": ["pics/later.png"]})" "\n");
  const Dataset ds = load_dataset(path, options());
  const std::string bytes = read_file(pic);
  write_file_atomic(pic, bytes.substr(0, bytes.size() / 2));  // truncated: the header still reads
  const std::string e = error_of([&] { load_example_pictures(ds.examples[0], processor, path); });
  EXPECT_NE(e.find("[dataset] " + path + ":1: images[0]: [image] " + pic + ": invalid PNG"), std::string::npos) << e;
  write_png(pic, Image{64, 64, std::vector<uint8_t>(64 * 64 * 3, 1)});  // a different size
  const std::string changed = error_of([&] { load_example_pictures(ds.examples[0], processor, path); });
  EXPECT_NE(changed.find("was the file changed?"), std::string::npos) << changed;
}

TEST_F(VisionFixture, RowsWithoutTheImageKeyKeepImageAsText) {
  const std::string path = dir.write("d.jsonl", R"({"prompt": "say <image> please", "answer": 1})" "\n"
                                                R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"},)"
                                                R"( {"type": "text", "text": "b"}]}], "answer": 1})" "\n");
  const Dataset ds = load_dataset(path, options());
  EXPECT_TRUE(ds.examples[0].images.empty());
  EXPECT_EQ(prompt_text(*tok, ds.examples[0], true), "<|im_start|>user\nsay <image> please<|im_end|>\n<|im_start|>assistant\n");
  // A text-only content list renders as its joined text with any template.
  EXPECT_EQ(template_messages(ds.examples[1])[0]["content"], "ab");
  // Rows with an empty picture list (verl writes the key on every row of a mixed dataset) keep their text.
  const std::string mixed = dir.write("m.jsonl", R"({"prompt": "plain", "answer": 1, "images": []})" "\n");
  const Dataset md = load_dataset(mixed, options());
  EXPECT_EQ(template_messages(md.examples[0])[0]["content"], "plain");
}

TEST_F(VisionFixture, ImageKeyModelWithoutPreprocessorAndTruncation) {
  const std::string path = dir.write("d.jsonl", R"({"prompt": "<image>?", "answer": 1, "pictures": ["pics/image_b.png"]})" "\n");
  DatasetOptions o = options();
  o.image_key = "pictures";
  EXPECT_EQ(load_dataset(path, o).examples[0].image_grids.size(), 1u);
  o.image_processor = nullptr;
  EXPECT_NE(error_of([&] { load_dataset(path, o); }).find(path + ":1: the row has pictures but the model has no preprocessor_config.json"),
            std::string::npos);
  o = options();
  o.image_key = "pictures";
  o.max_prompt_length = 5;  // the picture's tokens count: the only prompt is filtered, leaving none
  EXPECT_NE(error_of([&] { load_dataset(path, o); }).find("all 1 prompts are longer than 5 tokens"), std::string::npos);
  o.overflow = PromptOverflow::TruncateLeft;
  EXPECT_NE(error_of([&] { load_dataset(path, o); }).find("a prompt with pictures cannot be truncated"), std::string::npos);
  // A text tokenizer has no <|image_pad|>.
  const std::string text_tok = dir.path() + "/text_tokenizer";
  write_byte_tokenizer(text_tok);
  const Tokenizer t = Tokenizer::load(text_tok);
  o = options(false);
  o.image_key = "pictures";
  o.encode_prompt = [&](const Example& ex) { return encode_prompt(t, ex, false, &processor); };
  EXPECT_NE(error_of([&] { load_dataset(path, o); }).find(path + ":1: [data] prompt: the row has pictures but the tokenizer has no <|image_pad|>"),
            std::string::npos)
      << error_of([&] { load_dataset(path, o); });
}

}  // namespace
