// `grpo data arith` and `grpo data calc`: write the built-in arithmetic and calculator tasks (train.jsonl,
// test.jsonl) into a folder.
#include <cstdio>

#include "cli/command.h"
#include "data/arith.h"
#include "data/calc.h"
#include "tools/tool_set.h"

namespace grpo::cli {
namespace {

struct ArithArgs {
  std::string out;
  int64_t train = 5000, test = 500;
  uint64_t seed = 0;
  std::string difficulty = "mixed";
  double columns_fraction = 0;
};

struct CalcArgs {
  std::string out;
  int64_t train = 5000, test = 500;
  uint64_t seed = 0;
  std::string difficulty = "mixed";
  double tool_fraction = 0.25;
};

void setup_calc(CLI::App* data) {
  auto args = std::make_shared<CalcArgs>();
  CLI::App* cmd = data->add_subcommand(
      "calc", "Write problems a calculator tool pays on: 4-5 digit products, mixed expressions (train.jsonl, test.jsonl)");
  cmd->add_option("--out", args->out, "Output folder")->required();
  cmd->add_option("--train", args->train, "Training problems")
      ->check(CLI::Range(int64_t{0}, kCalcMaxProblems))
      ->capture_default_str();
  cmd->add_option("--test", args->test, "Held-out problems (never in train)")
      ->check(CLI::Range(int64_t{0}, kCalcMaxProblems))
      ->capture_default_str();
  cmd->add_option("--seed", args->seed, "Random seed")->capture_default_str();
  cmd->add_option("--difficulty", args->difficulty, "mult (levels 1-3), mixed (1-5), hard (2-5) or one level 1..5")
      ->capture_default_str();
  cmd->add_option("--tool-fraction", args->tool_fraction,
                  "Fraction of training examples whose target calls the calculator (the others answer directly)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->callback([args] {
    const CalcSplit split = write_calc_dataset(args->out, args->train, args->test, args->seed, args->difficulty,
                                               args->tool_fraction, tools::ToolSet::builtin({"calculator"}).template_tools());
    std::printf("wrote %s (%lld problems, %lld calling the calculator) and %s (%lld problems)\n", split.train_path.c_str(),
                static_cast<long long>(split.train), static_cast<long long>(split.train_with_tool),
                split.test_path.c_str(), static_cast<long long>(split.test));
  });
}

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
  setup_calc(data);
}

GRPO_REGISTER_COMMAND(setup_data);

}  // namespace
}  // namespace grpo::cli
