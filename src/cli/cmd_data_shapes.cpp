// `grpo data shapes`: writes the built-in visual task (PNG pictures, train.jsonl, test.jsonl, optionally
// rl.jsonl and val.jsonl) into a folder.
#include <cstdio>

#include "cli/command.h"
#include "data/shapes.h"

namespace grpo::cli {
namespace {

struct ShapesArgs {
  std::string out;
  int64_t train = 5000, test = 500, rl = 0, val = 0;
  uint64_t seed = 0;
  std::string difficulty = "mixed";
  double listing_fraction = 0;
};

void setup_data_shapes(CLI::App& app) {
  CLI::App* data = group_command(app, "data", "Datasets: built-in task generators");
  auto args = std::make_shared<ShapesArgs>();
  CLI::App* cmd = data->add_subcommand(
      "shapes", "Write pictures of coloured shapes with questions answered by a number or a word (images/, "
                "train.jsonl, test.jsonl in verl's vision format)");
  cmd->add_option("--out", args->out, "Output folder")->required();
  cmd->add_option("--train", args->train, "Training problems")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--test", args->test, "Held-out problems (never in train)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--rl", args->rl, "Further problems for GRPO (rl.jsonl: in neither train nor test)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--val", args->val,
                  "Further problems for decisions during training, such as when SFT stops (val.jsonl: in no other file)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--seed", args->seed, "Random seed")->capture_default_str();
  cmd->add_option("--difficulty", args->difficulty,
                  "easy (level 1: 1-3 shapes, 64 px), medium (1-2), hard (3: 4-8 shapes, 128 px), mixed (1-3) or one "
                  "level 1..3")
      ->capture_default_str();
  cmd->add_option("--listing-fraction", args->listing_fraction,
                  "Fraction of worked responses that list every shape before answering (the rest answer directly)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->callback([args] {
    const ShapesSplit split = write_shapes_dataset(args->out, args->train, args->test, args->seed, args->difficulty,
                                                   args->listing_fraction, args->rl, args->val);
    std::printf("wrote %s (%lld problems), %s (%lld problems)", split.train_path.c_str(),
                static_cast<long long>(split.train), split.test_path.c_str(), static_cast<long long>(split.test));
    if (split.rl > 0) std::printf(", %s (%lld problems)", split.rl_path.c_str(), static_cast<long long>(split.rl));
    if (split.val > 0) std::printf(", %s (%lld problems)", split.val_path.c_str(), static_cast<long long>(split.val));
    std::printf(" and their pictures in %s\n", split.images_dir.c_str());
  });
}

GRPO_REGISTER_COMMAND(setup_data_shapes);

}  // namespace
}  // namespace grpo::cli
