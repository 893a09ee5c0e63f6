// The shapes task: every answer recomputed from the rendered picture by an independent analysis
// (connected components, colour by channel dominance, kind by fill pattern, size by side) and from the
// question's text; determinism, train/test disjointness, verl-style rows that load as a vision dataset,
// responses of both styles scored 1 by the `math` reward.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "core/error.h"
#include "core/files.h"
#include "data/dataset.h"
#include "data/prompting.h"
#include "reward/rewards.h"
#include "data/shapes.h"
#include "temp_dir.h"
#include "tokenizer/byte_tokenizer.h"

using namespace grpo;

namespace {

struct Blob {
  std::string color, kind;
  int64_t side = 0;
};

std::string classify_color(double r, double g, double b) {
  if (r > 150 && g > 150 && b < 100) return "yellow";
  if (r > 150 && g < 100 && b < 100) return "red";
  if (g > 120 && r < 100 && b < 120) return "green";
  if (b > 150 && r < 100 && g < 150) return "blue";
  if (r > 100 && b > 140 && g < 110) return "purple";
  return "unknown";
}

// Connected components of non-background pixels (4-neighbours), each described independently.
std::vector<Blob> analyse(const Image& img) {
  const int64_t H = img.height, W = img.width;
  auto px = [&](int64_t y, int64_t x) { return img.rgb.data() + (y * W + x) * 3; };
  const uint8_t* bg = px(0, 0);
  auto is_bg = [&](int64_t y, int64_t x) { return std::equal(bg, bg + 3, px(y, x)); };
  std::vector<int> label(static_cast<size_t>(H * W), -1);
  std::vector<Blob> blobs;
  for (int64_t y0 = 0; y0 < H; ++y0)
    for (int64_t x0 = 0; x0 < W; ++x0) {
      if (is_bg(y0, x0) || label[y0 * W + x0] >= 0) continue;
      const int id = static_cast<int>(blobs.size());
      std::vector<std::pair<int64_t, int64_t>> stack{{y0, x0}}, pixels;
      label[y0 * W + x0] = id;
      while (!stack.empty()) {
        auto [y, x] = stack.back();
        stack.pop_back();
        pixels.push_back({y, x});
        const int64_t ny[4] = {y - 1, y + 1, y, y}, nx[4] = {x, x, x - 1, x + 1};
        for (int k = 0; k < 4; ++k)
          if (ny[k] >= 0 && ny[k] < H && nx[k] >= 0 && nx[k] < W && !is_bg(ny[k], nx[k]) && label[ny[k] * W + nx[k]] < 0) {
            label[ny[k] * W + nx[k]] = id;
            stack.push_back({ny[k], nx[k]});
          }
      }
      int64_t top = H, bottom = -1, left = W, right = -1;
      double r = 0, g = 0, b = 0;
      for (auto [y, x] : pixels) {
        top = std::min(top, y), bottom = std::max(bottom, y), left = std::min(left, x), right = std::max(right, x);
        r += px(y, x)[0], g += px(y, x)[1], b += px(y, x)[2];
      }
      const double n = static_cast<double>(pixels.size());
      Blob blob;
      blob.color = classify_color(r / n, g / n, b / n);
      blob.side = std::max(bottom - top, right - left) + 1;
      const double fill = n / static_cast<double>(blob.side * blob.side);
      int64_t bottom_row = 0;
      for (auto [y, x] : pixels) bottom_row += y == bottom;
      blob.kind = fill > 0.92 ? "square" : fill > 0.65 ? "circle" : bottom_row > blob.side / 2 ? "triangle" : "diamond";
      blobs.push_back(blob);
    }
  return blobs;
}

// The answer recomputed from the question's words and the picture's blobs.
std::string independent_answer(const std::string& question, const std::vector<Blob>& blobs) {
  const std::vector<std::string> colors{"red", "green", "blue", "yellow", "purple"},
      kinds{"square", "circle", "triangle", "diamond"};
  if (question.rfind("What", 0) == 0) {
    const Blob* big = &blobs[0];
    int ties = 0;
    for (const Blob& b : blobs) {
      if (b.side > big->side) big = &b, ties = 0;
      if (b.side == big->side) ++ties;
    }
    EXPECT_EQ(ties, 1) << "the largest shape is not unique: " << question;
    return question.find("colour") != std::string::npos ? big->color : big->kind;
  }
  std::string color, kind;
  for (const auto& c : colors)
    if (question.find(" " + c + " ") != std::string::npos) color = c;
  for (const auto& k : kinds)
    if (question.find(" " + k + "s ") != std::string::npos) kind = k;
  int64_t n = 0;
  for (const Blob& b : blobs) n += (color.empty() || b.color == color) && (kind.empty() || b.kind == kind);
  return std::to_string(n);
}

TEST(Shapes, AnswersMatchAnIndependentReadingOfThePicture) {
  std::map<std::string, int> seen_questions, seen_answers;
  for (int level = 1; level <= kShapesMaxLevel; ++level) {
    const auto problems = generate_shapes(150, 11, {level});
    for (const ShapesProblem& p : problems) {
      const Image img = render_shapes(p);
      ASSERT_EQ(img.height, p.canvas);
      const auto blobs = analyse(img);
      ASSERT_EQ(blobs.size(), p.shapes.size()) << shapes_signature(p);  // no overlaps, nothing lost
      for (const Blob& b : blobs) ASSERT_NE(b.color, "unknown");
      const std::string q = shapes_question_text(p);
      ASSERT_EQ(independent_answer(q, blobs), p.answer) << q << " " << shapes_signature(p);
      ++seen_questions[shapes_question_name(p.question)];
      ++seen_answers[p.answer];
    }
  }
  EXPECT_EQ(seen_questions.size(), 6u);
  EXPECT_GT(seen_answers["0"], 0);  // "how many" can be none
  EXPECT_GT(seen_answers["blue"], 0);
  EXPECT_GT(seen_answers["triangle"], 0);
}

TEST(Shapes, ResponsesOfBothStylesEarnTheReward) {
  for (const ShapesProblem& p : generate_shapes(200, 3, {1, 2, 3})) {
    const std::string direct = shapes_response(p, ShapesStyle::Direct), listing = shapes_response(p, ShapesStyle::Listing);
    ASSERT_EQ(direct, "\\boxed{" + p.answer + "}");
    ASSERT_EQ(listing.rfind("Shapes: " + shape_description(p.shapes[0], p.question >= ShapesQuestion::LargestColor), 0), 0u)
        << listing;
    ASSERT_EQ(math_reward(direct, p.answer), 1.0f);
    ASSERT_EQ(math_reward(listing, p.answer), 1.0f) << listing;
    ASSERT_EQ(math_reward("\\boxed{" + p.answer + "x}", p.answer), 0.0f);
  }
  EXPECT_EQ(math_reward("\\boxed{purple}", "blue"), 0.0f);
}

TEST(Shapes, DeterministicDisjointAndWrittenAsVerlRows) {
  test::TempDir a, b;
  const ShapesSplit sa = write_shapes_dataset(a.path(), 40, 10, 9, "mixed", 0.5);
  write_shapes_dataset(b.path(), 40, 10, 9, "mixed", 0.5);
  EXPECT_EQ(read_file(sa.train_path), read_file(b.path() + "/train.jsonl"));
  EXPECT_EQ(read_file(sa.test_path), read_file(b.path() + "/test.jsonl"));
  EXPECT_EQ(read_file(a.path() + "/images/train-7.png"), read_file(b.path() + "/images/train-7.png"));
  const auto test = generate_shapes(300, 1 ^ 0x7465737400000000ull, {1});
  const auto train = generate_shapes(2000, 1, {1}, test);
  std::set<std::string> test_sigs;
  for (const auto& p : test) test_sigs.insert(shapes_signature(p));
  for (const auto& p : train) ASSERT_FALSE(test_sigs.count(shapes_signature(p)));

  // The rows load as a vision dataset; the byte tokenizer with vision tokens renders and expands them.
  const std::string tok_dir = a.path() + "/tok";
  write_byte_tokenizer(tok_dir, true);
  const Tokenizer tok = Tokenizer::load(tok_dir);
  ImageProcessorConfig pp;  // the tiny reference model's limits
  pp.min_pixels = 1024;
  pp.max_pixels = 16384;
  DatasetOptions o;
  o.image_processor = &pp;
  o.require_response = true;
  o.encode_prompt = [&](const Example& ex) { return encode_prompt(tok, ex, true, &pp); };
  const Dataset ds = load_dataset(sa.train_path, o);
  ASSERT_EQ(ds.examples.size(), 40u);
  int listing = 0;
  for (const Example& ex : ds.examples) {
    ASSERT_EQ(ex.images.size(), 1u);
    EXPECT_TRUE(std::filesystem::exists(ex.images[0]));
    EXPECT_EQ(ex.data_source, "shapes");
    const int level = ex.extra["level"];
    const int64_t side = level == 1 ? 4 : level == 2 ? 6 : 8;  // 64, 96, 128 pixels in 16-pixel patches
    EXPECT_EQ(ex.image_grids[0], (ImageGrid{1, side, side}));
    EXPECT_EQ(std::count(ex.prompt_ids.begin(), ex.prompt_ids.end(), kByteImagePadId), side * side / 4);
    EXPECT_EQ(math_reward(ex.response, ex.answer), 1.0f);
    listing += ex.response.rfind("Shapes:", 0) == 0;
  }
  EXPECT_GT(listing, 8);
  EXPECT_LT(listing, 32);
  const std::string row = read_file(sa.test_path).substr(0, read_file(sa.test_path).find('\n'));
  const auto j = nlohmann::json::parse(row);
  EXPECT_EQ(j["prompt"][0]["role"], "user");
  EXPECT_EQ(j["prompt"][0]["content"].get<std::string>().rfind("<image>", 0), 0u);
  EXPECT_EQ(j["images"][0], "images/test-0.png");
  EXPECT_EQ(j["extra_info"]["split"], "test");
  EXPECT_TRUE(j["reward_model"]["ground_truth"].is_string());
}

TEST(Shapes, RlAndValProblemsAreInNoOtherFileAndAnswerDirectly) {
  test::TempDir d, none;
  const ShapesSplit s = write_shapes_dataset(d.path(), 30, 10, 4, "easy", 1.0, 50, 20);
  ASSERT_EQ(s.rl, 50);
  ASSERT_EQ(s.rl_path, d.path() + "/rl.jsonl");
  ASSERT_EQ(s.val, 20);
  ASSERT_EQ(s.val_path, d.path() + "/val.jsonl");
  std::set<std::string> prompts_seen;  // picture bytes + question of every train and test row
  auto rows = [](const std::string& path) {
    std::vector<nlohmann::json> out;
    std::istringstream in(read_file(path));
    for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
    return out;
  };
  auto key = [&](const nlohmann::json& j) {
    return read_file(d.path() + "/" + j["images"][0].get<std::string>()) + j["prompt"][0]["content"].get<std::string>();
  };
  for (const char* split : {"/train.jsonl", "/test.jsonl"})
    for (const auto& j : rows(d.path() + split)) prompts_seen.insert(key(j));
  for (const auto& [path, split, count] : {std::tuple{s.rl_path, "rl", 50u}, std::tuple{s.val_path, "val", 20u}}) {
    const auto extra = rows(path);
    ASSERT_EQ(extra.size(), count) << split;
    for (const auto& j : extra) {
      EXPECT_TRUE(prompts_seen.insert(key(j)).second) << j.dump();  // in no earlier file, nor twice
      EXPECT_EQ(j["extra_info"]["split"], split);
      EXPECT_EQ(j["response"].get<std::string>().rfind("\\boxed{", 0), 0u) << j["response"];  // direct
    }
  }
  const ShapesSplit plain = write_shapes_dataset(none.path(), 30, 10, 4, "easy", 1.0);
  for (const char* file : {"/train.jsonl", "/test.jsonl"}) EXPECT_EQ(read_file(d.path() + file), read_file(none.path() + file));
  EXPECT_TRUE(plain.rl_path.empty());
  EXPECT_TRUE(plain.val_path.empty());
  EXPECT_FALSE(std::filesystem::exists(none.path() + "/rl.jsonl"));
  EXPECT_FALSE(std::filesystem::exists(none.path() + "/val.jsonl"));
}

TEST(Shapes, DifficultiesAndLimits) {
  EXPECT_EQ(shapes_levels("easy"), (std::vector<int>{1}));
  EXPECT_EQ(shapes_levels("mixed"), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(shapes_levels("2"), (std::vector<int>{2}));
  EXPECT_THROW(shapes_levels("4"), Error);
  EXPECT_THROW(shapes_levels("impossible"), Error);
  Rng rng(1);
  EXPECT_THROW(generate_shapes_problem(rng, 0), Error);
  test::TempDir d;
  EXPECT_THROW(write_shapes_dataset(d.path(), 1, 1, 0, "easy", 1.5), Error);
  for (const auto& p : generate_shapes(100, 2, {3})) {
    EXPECT_GE(p.shapes.size(), 4u);
    EXPECT_LE(p.shapes.size(), 8u);
    EXPECT_EQ(p.canvas, 128);
  }
}

}  // namespace
