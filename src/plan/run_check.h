// `grpo train --check` / `grpo sft --check`: everything a run would read, checked without training: the
// model folder (config.json, the safetensors headers against it, the tokenizer; no weights are read),
// the data files (they parse, their prompts tokenize within data.max_prompt_length as the config's
// filter/truncation rule says, there are enough of them), the memory plan of a GRPO run (it fits this
// machine, as `grpo train` checks at start), and the reward set-up (each function constructs). It collects every
// problem instead of stopping at the first, and describes the run: the model, the batch shapes of a step, the number of
// steps, what has no effect here.
#pragma once
#include <cstdint>
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

// What the check needs beyond the config, as `grpo train` would have it.
struct RunCheckOptions {
  int ranks = 1;                    // the run's ranks (the memory plan is per rank)
  bool ignore_memory_plan = false;  // --ignore-memory-plan: a plan that does not fit is no problem
  int64_t available_bytes = 0;      // the machine's memory for the plan; 0: this one's MemAvailable
};

RunCheck check_run(const Config& config, const ConfigNotes& notes, RunKind kind, const RunCheckOptions& options = {});

// The check as text: the summary, then the problems (or that the run would start).
std::string describe(const RunCheck& check);

}  // namespace grpo
