// Supervised fine-tuning (`grpo sft`): prompt/response JSONL, cross-entropy on response tokens only,
// shuffled mini-batches of sft.batch_size sequences packed into token-budget micro-batches, warm-up then
// cosine learning-rate decay. Saves a Hugging Face model folder (<run>/model) and validates at the end.
#pragma once
#include <string>
#include <vector>

#include "grpo/config.h"

namespace grpo {

struct SftSummary {
  int64_t steps = 0;
  double seconds = 0;
  double val_accuracy = -1;  // -1: no val file
  double final_loss = 0;
  std::string model_dir;
};

SftSummary run_sft(const Config& config, bool quiet = false);

}  // namespace grpo
