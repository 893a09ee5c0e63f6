// The shapes task (see shapes.h): scenes drawn by rejection sampling (no overlaps, a single largest shape
// when the question asks for it), questions, rendering and the verl-style files.
#include "data/shapes.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

#include "core/error.h"
#include "core/files.h"

namespace grpo {

namespace {

struct LevelSpec {
  int min_shapes, max_shapes, colors, kinds;
  int64_t canvas;
  std::array<int64_t, 3> sides;  // small, medium, large
  std::vector<ShapesQuestion> questions;
};

const LevelSpec& level_spec(int level) {
  using Q = ShapesQuestion;
  static const LevelSpec specs[kShapesMaxLevel] = {
      {1, 3, 3, 2, 64, {12, 18, 24}, {Q::CountAll, Q::CountColor, Q::LargestColor}},
      {2, 5, 4, 3, 96, {14, 21, 30}, {Q::CountAll, Q::CountColor, Q::CountKind, Q::CountColorKind, Q::LargestColor,
                                      Q::LargestKind}},
      {4, 8, 5, 4, 128, {14, 21, 30}, {Q::CountAll, Q::CountColor, Q::CountKind, Q::CountColorKind, Q::LargestColor,
                                       Q::LargestKind}},
  };
  GRPO_CHECK(level >= 1 && level <= kShapesMaxLevel, "[shapes] level ", level, " is not in 1..", kShapesMaxLevel);
  return specs[level - 1];
}

constexpr int64_t kGap = 2;  // pixels between shapes and from the border

const uint8_t kColors[][3] = {{215, 40, 40}, {40, 160, 60}, {45, 85, 220}, {230, 195, 35}, {150, 65, 190}};
const uint8_t kBackground = 238;

bool overlaps(const DrawnShape& a, const DrawnShape& b) {
  return a.x < b.x + b.side + kGap && b.x < a.x + a.side + kGap && a.y < b.y + b.side + kGap &&
         b.y < a.y + a.side + kGap;
}

// Shapes at random places without overlaps; empty when they do not fit (the caller draws again).
std::vector<DrawnShape> draw_scene(Rng& rng, const LevelSpec& spec) {
  const int n = static_cast<int>(rng.between(spec.min_shapes, spec.max_shapes));
  std::vector<DrawnShape> shapes;
  for (int i = 0; i < n; ++i) {
    DrawnShape s;
    s.kind = static_cast<ShapeKind>(rng.below(static_cast<uint64_t>(spec.kinds)));
    s.color = static_cast<int>(rng.below(static_cast<uint64_t>(spec.colors)));
    s.size = static_cast<int>(rng.below(3));
    s.side = spec.sides[static_cast<size_t>(s.size)];
    bool placed = false;
    for (int attempt = 0; attempt < 100 && !placed; ++attempt) {
      s.x = rng.between(kGap, spec.canvas - kGap - s.side);
      s.y = rng.between(kGap, spec.canvas - kGap - s.side);
      placed = std::none_of(shapes.begin(), shapes.end(), [&](const DrawnShape& o) { return overlaps(s, o); });
    }
    if (!placed) return {};
    shapes.push_back(s);
  }
  // Reading order: by centre row, then centre column.
  std::sort(shapes.begin(), shapes.end(), [](const DrawnShape& a, const DrawnShape& b) {
    const int64_t ay = 2 * a.y + a.side, by = 2 * b.y + b.side;
    return ay != by ? ay < by : 2 * a.x + a.side < 2 * b.x + b.side;
  });
  return shapes;
}

// The index of the single largest shape, or -1 when the largest size is shared.
int single_largest(const std::vector<DrawnShape>& shapes) {
  int best = -1, count = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (best < 0 || shapes[i].size > shapes[static_cast<size_t>(best)].size) {
      best = static_cast<int>(i);
      count = 1;
    } else if (shapes[i].size == shapes[static_cast<size_t>(best)].size) {
      ++count;
    }
  }
  return count == 1 ? best : -1;
}

std::string capitalised(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

std::string plural(const std::string& kind) { return kind + "s"; }

bool matches(const ShapesProblem& p, const DrawnShape& s) {
  switch (p.question) {
    case ShapesQuestion::CountColor: return s.color == p.color;
    case ShapesQuestion::CountKind: return s.kind == p.kind;
    case ShapesQuestion::CountColorKind: return s.color == p.color && s.kind == p.kind;
    default: return true;
  }
}

bool inside(ShapeKind kind, double u, double v, const DrawnShape& s) {  // (u, v) relative to the box's corner
  const double h = static_cast<double>(s.side) / 2, du = u - h, dv = v - h;
  switch (kind) {
    case ShapeKind::Square: return true;
    case ShapeKind::Circle: return du * du + dv * dv <= h * h;
    case ShapeKind::Triangle: return std::fabs(du) <= v / 2;  // apex at the top middle, base at the bottom
    case ShapeKind::Diamond: return std::fabs(du) + std::fabs(dv) <= h;
  }
  return false;
}

}  // namespace

const std::vector<std::string>& shapes_color_names() {
  static const std::vector<std::string> names{"red", "green", "blue", "yellow", "purple"};
  return names;
}

const char* shape_kind_name(ShapeKind k) {
  switch (k) {
    case ShapeKind::Square: return "square";
    case ShapeKind::Circle: return "circle";
    case ShapeKind::Triangle: return "triangle";
    case ShapeKind::Diamond: return "diamond";
  }
  return "?";
}

const char* shapes_question_name(ShapesQuestion q) {
  switch (q) {
    case ShapesQuestion::CountAll: return "count_all";
    case ShapesQuestion::CountColor: return "count_color";
    case ShapesQuestion::CountKind: return "count_kind";
    case ShapesQuestion::CountColorKind: return "count_color_kind";
    case ShapesQuestion::LargestColor: return "largest_color";
    case ShapesQuestion::LargestKind: return "largest_kind";
  }
  return "?";
}

std::vector<int> shapes_levels(const std::string& difficulty) {
  if (difficulty == "easy") return {1};
  if (difficulty == "medium") return {1, 2};
  if (difficulty == "hard") return {3};
  if (difficulty == "mixed") return {1, 2, 3};
  if (difficulty.size() == 1 && difficulty[0] >= '1' && difficulty[0] <= '0' + kShapesMaxLevel)
    return {difficulty[0] - '0'};
  fail("[shapes] unknown difficulty \"", difficulty, "\": expected easy, medium, hard, mixed or a level 1..",
       kShapesMaxLevel);
}

ShapesProblem generate_shapes_problem(Rng& rng, int level) {
  const LevelSpec& spec = level_spec(level);
  ShapesProblem p;
  p.level = level;
  p.canvas = spec.canvas;
  p.question = spec.questions[rng.below(spec.questions.size())];
  const bool largest = p.question == ShapesQuestion::LargestColor || p.question == ShapesQuestion::LargestKind;
  for (int attempt = 0; p.shapes.empty(); ++attempt) {
    GRPO_CHECK(attempt < 1000, "[shapes] cannot place the shapes of level ", level);
    p.shapes = draw_scene(rng, spec);
    if (largest && single_largest(p.shapes) < 0) p.shapes.clear();
  }
  // The attribute asked about: mostly one that is present, sometimes any (the answer may be 0).
  const DrawnShape& pick = p.shapes[rng.below(p.shapes.size())];
  const bool present = rng.below(4) != 0;
  p.color = present ? pick.color : static_cast<int>(rng.below(static_cast<uint64_t>(spec.colors)));
  p.kind = present ? pick.kind : static_cast<ShapeKind>(rng.below(static_cast<uint64_t>(spec.kinds)));
  if (p.question != ShapesQuestion::CountColor && p.question != ShapesQuestion::CountColorKind) p.color = -1;
  if (p.question != ShapesQuestion::CountKind && p.question != ShapesQuestion::CountColorKind) p.kind = ShapeKind::Square;
  if (largest) {
    const DrawnShape& big = p.shapes[static_cast<size_t>(single_largest(p.shapes))];
    p.answer = p.question == ShapesQuestion::LargestColor ? shapes_color_names()[static_cast<size_t>(big.color)]
                                                          : shape_kind_name(big.kind);
  } else {
    p.answer = std::to_string(std::count_if(p.shapes.begin(), p.shapes.end(), [&](const DrawnShape& s) { return matches(p, s); }));
  }
  p.picture_seed = rng.next_u64();
  return p;
}

Image render_shapes(const ShapesProblem& p) {
  Image img{p.canvas, p.canvas, std::vector<uint8_t>(static_cast<size_t>(p.canvas * p.canvas * 3), kBackground)};
  for (size_t i = 0; i < p.shapes.size(); ++i) {
    const DrawnShape& s = p.shapes[i];
    Rng jitter({p.picture_seed, i});
    uint8_t rgb[3];
    for (int c = 0; c < 3; ++c)
      rgb[c] = static_cast<uint8_t>(std::clamp<int64_t>(kColors[s.color][c] + jitter.between(-10, 10), 0, 255));
    for (int64_t y = 0; y < s.side; ++y)
      for (int64_t x = 0; x < s.side; ++x)
        if (inside(s.kind, static_cast<double>(x) + 0.5, static_cast<double>(y) + 0.5, s)) {
          uint8_t* px = img.rgb.data() + ((s.y + y) * p.canvas + s.x + x) * 3;
          std::copy(rgb, rgb + 3, px);
        }
  }
  return img;
}

std::string shapes_question_text(const ShapesProblem& p) {
  const std::string color = p.color >= 0 ? shapes_color_names()[static_cast<size_t>(p.color)] : "";
  const std::string kind = shape_kind_name(p.kind);
  switch (p.question) {
    case ShapesQuestion::CountAll: return "How many shapes are there?";
    case ShapesQuestion::CountColor: return "How many " + color + " shapes are there?";
    case ShapesQuestion::CountKind: return "How many " + plural(kind) + " are there?";
    case ShapesQuestion::CountColorKind: return "How many " + color + " " + plural(kind) + " are there?";
    case ShapesQuestion::LargestColor: return "What colour is the largest shape?";
    case ShapesQuestion::LargestKind: return "What shape is the largest one?";
  }
  return "";
}

std::string shape_description(const DrawnShape& s, bool with_size) {
  static const char* sizes[] = {"small", "medium", "large"};
  return (with_size ? std::string(sizes[s.size]) + " " : std::string()) + shapes_color_names()[static_cast<size_t>(s.color)] +
         " " + shape_kind_name(s.kind);
}

std::string shapes_response(const ShapesProblem& p, ShapesStyle style) {
  const std::string boxed = "\\boxed{" + p.answer + "}";
  if (style == ShapesStyle::Direct) return boxed;
  const bool largest = p.question == ShapesQuestion::LargestColor || p.question == ShapesQuestion::LargestKind;
  std::string s = "Shapes: ";
  for (size_t i = 0; i < p.shapes.size(); ++i) s += (i ? ", " : "") + shape_description(p.shapes[i], largest);
  s += ". ";
  const std::string color = p.color >= 0 ? shapes_color_names()[static_cast<size_t>(p.color)] : "";
  switch (p.question) {
    case ShapesQuestion::CountAll: s += "Count: " + p.answer; break;
    case ShapesQuestion::CountColor: s += capitalised(color) + " ones: " + p.answer; break;
    case ShapesQuestion::CountKind: s += capitalised(plural(shape_kind_name(p.kind))) + ": " + p.answer; break;
    case ShapesQuestion::CountColorKind:
      s += capitalised(color) + " " + plural(shape_kind_name(p.kind)) + ": " + p.answer;
      break;
    case ShapesQuestion::LargestColor:
    case ShapesQuestion::LargestKind:
      s += "Largest: " + shape_description(p.shapes[static_cast<size_t>(single_largest(p.shapes))], true);
      break;
  }
  return s + ". " + boxed;
}

std::string shapes_signature(const ShapesProblem& p) {
  std::string s = cat(p.level, "|", static_cast<int>(p.question), "|", p.color, "|", static_cast<int>(p.kind));
  for (const DrawnShape& sh : p.shapes)
    s += cat("|", static_cast<int>(sh.kind), ",", sh.color, ",", sh.size, ",", sh.x, ",", sh.y);
  return s;
}

std::vector<ShapesProblem> generate_shapes(int64_t n, uint64_t seed, const std::vector<int>& levels,
                                           const std::vector<ShapesProblem>& exclude) {
  GRPO_CHECK(n >= 0, "[shapes] number of problems must be >= 0, got ", n);
  GRPO_CHECK(!levels.empty(), "[shapes] no levels to draw from");
  std::set<std::string> seen;
  for (const auto& p : exclude) seen.insert(shapes_signature(p));
  Rng rng({seed, 0x7368617065ull});
  std::vector<ShapesProblem> out;
  out.reserve(static_cast<size_t>(n));
  int64_t misses = 0;
  while (static_cast<int64_t>(out.size()) < n) {
    ShapesProblem p = generate_shapes_problem(rng, levels[rng.below(levels.size())]);
    if (!seen.insert(shapes_signature(p)).second) {
      GRPO_CHECK(++misses < 100000, "[shapes] cannot draw ", n, " distinct problems (", out.size(), " found)");
      continue;
    }
    misses = 0;
    out.push_back(std::move(p));
  }
  return out;
}

nlohmann::json shapes_row(const ShapesProblem& p, const std::string& id, const std::string& image_path,
                          const std::string& split, int64_t index, ShapesStyle style) {
  return {{"id", id},
          {"data_source", kShapesDataSource},
          {"prompt", nlohmann::json::array({{{"role", "user"}, {"content", "<image>" + shapes_question_text(p)}}})},
          {"images", nlohmann::json::array({image_path})},
          {"reward_model", {{"style", "rule"}, {"ground_truth", p.answer}}},
          {"response", shapes_response(p, style)},
          {"level", p.level},
          {"question", shapes_question_name(p.question)},
          {"extra_info", {{"split", split}, {"index", index}}}};
}

ShapesSplit write_shapes_dataset(const std::string& dir, int64_t n_train, int64_t n_test, uint64_t seed,
                                 const std::string& difficulty, double listing_fraction, int64_t n_rl,
                                 int64_t n_val) {
  GRPO_CHECK(listing_fraction >= 0 && listing_fraction <= 1,
             "[shapes] the fraction of listing responses must be in [0, 1], got ", listing_fraction);
  const auto levels = shapes_levels(difficulty);
  const auto test = generate_shapes(n_test, seed ^ 0x7465737400000000ull, levels);
  const auto train = generate_shapes(n_train, seed, levels, test);
  std::vector<ShapesProblem> seen = test;
  seen.insert(seen.end(), train.begin(), train.end());
  const auto rl = generate_shapes(n_rl, seed ^ 0x726c000000000000ull, levels, seen);
  seen.insert(seen.end(), rl.begin(), rl.end());
  const auto val = generate_shapes(n_val, seed ^ 0x76616c0000000000ull, levels, seen);
  ShapesSplit split{dir + "/train.jsonl", dir + "/test.jsonl", n_rl > 0 ? dir + "/rl.jsonl" : "",
                    n_val > 0 ? dir + "/val.jsonl" : "", dir + "/images", n_train, n_test, n_rl, n_val};
  make_dirs(split.images_dir);
  auto write = [&](const std::string& path, const std::vector<ShapesProblem>& problems, const std::string& name,
                   double listing) {
    Rng style_rng({seed, 0x7374796c65ull});
    write_file_atomic_with(path, [&](std::FILE* f) {
      for (size_t i = 0; i < problems.size(); ++i) {
        const std::string id = cat(name, "-", i), image = "images/" + id + ".png";
        write_png(dir + "/" + image, render_shapes(problems[i]));
        const ShapesStyle style = style_rng.uniform() < listing ? ShapesStyle::Listing : ShapesStyle::Direct;
        const std::string line = shapes_row(problems[i], id, image, name, static_cast<int64_t>(i), style).dump() + "\n";
        GRPO_CHECK(std::fwrite(line.data(), 1, line.size(), f) == line.size(), "[shapes] cannot write ", path);
      }
    });
  };
  write(split.train_path, train, "train", listing_fraction);
  write(split.test_path, test, "test", listing_fraction);
  if (n_rl > 0) write(split.rl_path, rl, "rl", 0.0);
  if (n_val > 0) write(split.val_path, val, "val", 0.0);
  return split;
}

}  // namespace grpo
