// `grpo train --check` / `grpo sft --check`: everything a run would read, checked without training: the
// model folder (config.json, the safetensors headers against it, the tokenizer; no weights are read),
// the data files (they parse, their prompts tokenize within data.max_prompt_length as the config's
// filter/truncation rule says, there are enough of them), and the reward set-up (each function
// constructs). It collects every problem instead of stopping at the first, and describes the run: the
// model, the batch shapes of a step, the number of steps, what has no effect here.
#pragma once
#include <string>
#include <vector>

#include "config/config.h"

namespace grpo {

enum class RunKind { Grpo, Sft };

struct RunCheck {
  std::vector<std::string> summary;   // lines describing the run
  std::vector<std::string> problems;  // each one would stop the run at start-up
  bool ok() const { return problems.empty(); }
};

RunCheck check_run(const Config& config, const ConfigNotes& notes, RunKind kind);

// The check as text: the summary, then the problems (or that the run would start).
std::string describe(const RunCheck& check);

}  // namespace grpo
