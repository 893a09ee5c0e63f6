// Supervised fine-tuning (`grpo sft`): prompt/response JSONL, cross-entropy on response tokens only,
// shuffled mini-batches of sft.batch_size sequences packed into token-budget micro-batches, warm-up then
// cosine learning-rate decay. Saves a Hugging Face model folder (<run>/model) and validates (held-out
// accuracy, greedy) at the end and every trainer.test_freq steps; with sft.stop_at_val_accuracy it stops at
// the first validation that reaches it and saves that model.
// Metrics go where trainer.logger says (step_logger.h).
#pragma once
#include <string>
#include <vector>

#include "config/config.h"

namespace grpo {

struct SftSummary {
  int64_t steps = 0;
  bool stopped_early = false;  // sft.stop_at_val_accuracy was reached before the last epoch's end
  double seconds = 0;
  double val_accuracy = -1;  // -1: no val file
  double val_tool_call_share = -1;  // multi-turn: held-out responses that called a tool (-1: no val file or no tools)
  double final_loss = 0;
  std::string model_dir;  // the trained model (Hugging Face folder); with LoRA the adapter (PEFT folder)
};

// `overwrite`: the run folder may hold an earlier run, whose outputs are deleted (run_folder.h); else such a
// folder is refused.
SftSummary run_sft(const Config& config, bool quiet = false, bool overwrite = false);

}  // namespace grpo
