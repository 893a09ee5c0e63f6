// The built-in visual task (`grpo data shapes`): PNG pictures of simple coloured shapes (squares,
// circles, triangles, diamonds; a few colours; three sizes; never overlapping) with a question whose
// answer is a number or a word, e.g.
//   {"id": "train-17", "data_source": "shapes", "images": ["images/train-17.png"],
//    "prompt": [{"role": "user", "content": "<image>How many red squares are there?"}],
//    "reward_model": {"style": "rule", "ground_truth": "2"}, "response": "\\boxed{2}", "level": 2,
//    "question": "count_color_kind", "extra_info": {"split": "train", "index": 17}}
// Questions: how many shapes; how many <colour> shapes; how many <kind>s; how many <colour> <kind>s
// (possibly none); what colour / what kind is the largest shape (always a single largest one).
// Levels: 1: 1-3 shapes, red/green/blue squares and circles on 64x64; 2: 2-5 shapes, + yellow,
// + triangles on 96x96; 3: 4-8 shapes, + purple, + diamonds on 128x128.
// Responses for supervised warm-up come in two styles, as arith's: Direct ("\boxed{2}") and Listing, which
// first names every shape in reading order and then answers ("Shapes: red square, blue circle, red
// square. Red squares: 2. \boxed{2}"); listing is longer but turns counting into reading its own list,
// which a small model gets right more often: the style GRPO can learn to prefer from the reward alone.
// The answer is checked by the `math` reward (the \boxed{} content compared as a number or as text).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/rng.h"
#include "image/image.h"

namespace grpo {

constexpr int kShapesMaxLevel = 3;
// The rows' data_source: the project's own task, scored by `math` when reward.functions is not set
// (config/reward_setup.h), not by one of verl's rules.
inline constexpr const char* kShapesDataSource = "shapes";

enum class ShapeKind { Square, Circle, Triangle, Diamond };
enum class ShapesQuestion { CountAll, CountColor, CountKind, CountColorKind, LargestColor, LargestKind };

struct DrawnShape {
  ShapeKind kind = ShapeKind::Square;
  int color = 0;                // index into shapes_color_names()
  int size = 0;                 // 0 small, 1 medium, 2 large
  int64_t x = 0, y = 0, side = 0;  // top-left corner and side of the bounding square, pixels
};

struct ShapesProblem {
  int level = 1;
  int64_t canvas = 64;  // square picture side, pixels
  std::vector<DrawnShape> shapes;  // in reading order (top to bottom, then left to right)
  ShapesQuestion question = ShapesQuestion::CountAll;
  int color = -1;        // the colour asked about (CountColor, CountColorKind)
  ShapeKind kind = ShapeKind::Square;  // the kind asked about (CountKind, CountColorKind)
  std::string answer;    // a number ("2") or a word ("blue", "circle")
  uint64_t picture_seed = 0;  // colour jitter of the rendering
};

enum class ShapesStyle { Direct, Listing };

const std::vector<std::string>& shapes_color_names();  // red, green, blue, yellow, purple
const char* shape_kind_name(ShapeKind k);               // square, circle, triangle, diamond
const char* shapes_question_name(ShapesQuestion q);     // count_all, count_color, ...

// Difficulty names: easy (level 1), medium (1-2), hard (3), mixed (1-3), or one level "1".."3".
std::vector<int> shapes_levels(const std::string& difficulty);

ShapesProblem generate_shapes_problem(Rng& rng, int level);
// The picture: canvas x canvas RGB, light background, filled shapes with a little colour jitter.
Image render_shapes(const ShapesProblem& p);
std::string shapes_question_text(const ShapesProblem& p);  // "How many red squares are there?"
std::string shapes_response(const ShapesProblem& p, ShapesStyle style);
// A shape's description as the Listing style writes it ("red square", with the size word when the
// question is about the largest shape: "large red square").
std::string shape_description(const DrawnShape& s, bool with_size);
// A problem's identity (shapes and question): train never repeats a test problem.
std::string shapes_signature(const ShapesProblem& p);

// `n` problems with levels drawn uniformly from `levels`, none of whose signatures is in `exclude`,
// deterministic in seed.
std::vector<ShapesProblem> generate_shapes(int64_t n, uint64_t seed, const std::vector<int>& levels,
                                           const std::vector<ShapesProblem>& exclude = {});

// The verl-style row of a problem whose picture is at `image_path` (relative to the data file).
nlohmann::json shapes_row(const ShapesProblem& p, const std::string& id, const std::string& image_path,
                          const std::string& split, int64_t index, ShapesStyle style);

struct ShapesSplit {
  // rl_path / val_path: empty when no RL prompts / no validation problems were asked for
  std::string train_path, test_path, rl_path, val_path, images_dir;
  int64_t train = 0, test = 0, rl = 0, val = 0;
};
// Writes DIR/images/{train,test}-N.png and DIR/train.jsonl, DIR/test.jsonl (each file atomically); test
// problems never appear in train. A `listing_fraction` of the responses, drawn at random, use
// ShapesStyle::Listing. With n_rl > 0 also DIR/rl.jsonl (and images/rl-N.png): further problems in neither
// train nor test, prompts for GRPO, which reads only their ground truths (responses direct): the SFT model
// has memorised its own training problems, on which GRPO finds little to learn. With n_val > 0 also
// DIR/val.jsonl (images/val-N.png): problems in none of the other files, for decisions taken during
// training (when SFT stops) so that test.jsonl measures the result without having chosen it. The other
// files do not depend on n_rl and n_val.
ShapesSplit write_shapes_dataset(const std::string& dir, int64_t n_train, int64_t n_test, uint64_t seed,
                                 const std::string& difficulty, double listing_fraction = 0, int64_t n_rl = 0,
                                 int64_t n_val = 0);

}  // namespace grpo
