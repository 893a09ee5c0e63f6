// The demo (`grpo demo`, README quick-start command 1): generates the arithmetic task (two-digit + and -,
// a quarter of the worked responses column by column), initialises a `small` byte-level Qwen3 model from
// scratch, warm-starts it with SFT (examples/arith-sft.yaml), then trains it with GRPO
// (examples/arith-grpo.yaml) and reports held-out accuracy after each phase. A rerun into the same folder
// replaces the earlier demo runs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace grpo {

struct DemoOptions {
  std::string out = "runs/demo";
  int64_t train_examples = 16000, test_examples = 500;
  uint64_t seed = 0;
  std::string difficulty = "2";     // arith levels (see grpo/arith.h): two-digit + and -
  double columns_fraction = 0.25;   // SFT responses worked digit by digit (ArithStyle::Columns)
  std::vector<std::string> sft_overrides, grpo_overrides;  // extra --set values
};

struct DemoResult {
  double sft_accuracy = 0, grpo_accuracy = 0;
  double sft_seconds = 0, grpo_seconds = 0;
  std::string sft_report, grpo_report;
};

DemoResult run_demo(const DemoOptions& opt);

}  // namespace grpo
