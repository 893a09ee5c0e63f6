// `grpo data arith`: writes the built-in arithmetic task (train.jsonl, test.jsonl) into a folder.
#include <cstdio>

#include "cli/command.h"
#include "data/arith.h"

namespace grpo::cli {
namespace {

struct ArithArgs {
  std::string out;
  int64_t train = 5000, test = 500;
  uint64_t seed = 0;
  std::string difficulty = "mixed";
  double columns_fraction = 0;
};

void setup_data(CLI::App& app) {
  CLI::App* data = group_command(app, "data", "Datasets: built-in task generators");
  auto args = std::make_shared<ArithArgs>();
  CLI::App* cmd = data->add_subcommand(
      "arith", "Write arithmetic problems with verifiable integer answers (train.jsonl, test.jsonl)");
  cmd->add_option("--out", args->out, "Output folder")->required();
  cmd->add_option("--train", args->train, "Training problems")
      ->check(CLI::Range(int64_t{0}, kArithMaxProblems))
      ->capture_default_str();
  cmd->add_option("--test", args->test, "Held-out problems (never in train)")
      ->check(CLI::Range(int64_t{0}, kArithMaxProblems))
      ->capture_default_str();
  cmd->add_option("--seed", args->seed, "Random seed")->capture_default_str();
  cmd->add_option("--difficulty", args->difficulty,
                  "easy (levels 1-2), medium (1-3), hard (3-5), mixed (1-5) or one level 1..5")
      ->capture_default_str();
  cmd->add_option("--columns-fraction", args->columns_fraction,
                  "Fraction of worked responses that add and subtract digit by digit (column style)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->callback([args] {
    const ArithSplit split = write_arith_dataset(args->out, args->train, args->test, args->seed, args->difficulty,
                                                 args->columns_fraction);
    std::printf("wrote %s (%lld problems) and %s (%lld problems)\n", split.train_path.c_str(),
                static_cast<long long>(split.train), split.test_path.c_str(), static_cast<long long>(split.test));
  });
}

GRPO_REGISTER_COMMAND(setup_data);

}  // namespace
}  // namespace grpo::cli
