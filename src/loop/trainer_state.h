// Checkpoints of a run: a Hugging Face model folder (loadable by this engine and by transformers) plus
// the trainer's state (optimizer moments in optimizer.safetensors, step counters and data position in
// trainer_state.json), written as one folder atomically. Several ranks of full fine-tuning write it in
// parallel, nothing gathered on one rank: each its model file (the folder's model-*-of-*.safetensors: a
// share of the tensors, from its bf16 shadow under mixed precision or its f32 weights), its shard of the
// moments and, under mixed precision, of the f32 master weights (loop/flat_shards.h), from which a resume
// loads exactly; `latest` in the checkpoints folder names the
// newest complete one. A crash mid-save leaves the previous checkpoint intact; a failed save leaves no
// partial folder behind.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "loop/flat_shards.h"
#include "model/lora.h"
#include "model/weights.h"
#include "train/optimizer.h"

namespace grpo {

struct TrainerState {
  int64_t global_step = 0;     // optimizer steps of the run done
  int64_t epoch = 0;           // current pass over the training data
  int64_t epoch_position = 0;  // prompts of the current epoch consumed
  int64_t skipped_steps = 0;   // steps skipped for non-finite loss/gradients
  int64_t consecutive_skips = 0;  // of them, in a row up to now (five stop the run)
  double reward_kl_coef = -1;      // algorithm.kl_ctrl's coefficient now (adaptive moves it); -1: not started
};

// AdamW's state in the whole flat parameter layout (model/weights.h), whatever the number of ranks that
// trained: optimizer.safetensors names the moments after the parameters (m.<name>, v.<name>), so a run
// resumes with any number of ranks. With a frozen vision tower the moments cover the text part only, a
// prefix of the layout (the tower's tensors come last), and the file has no tower moments.
struct OptimizerMoments {
  const float* m = nullptr;  // [numel]
  const float* v = nullptr;
  int64_t numel = 0;         // elements covered: the layout's, or its text prefix's
  int64_t steps = 0;         // optimizer steps taken
};

// A checkpoint of a run on several ranks of full fine-tuning: every rank's files staged in stage_dir (its
// model file in stage_dir/model, its shards by flat_shards.h), listed in rank order.
struct ShardedCheckpoint {
  std::string stage_dir;
  std::vector<ModelFilePart> parts;     // model_file_parts(config, ranks)
  DType model_dtype = DType::F32;       // of the model files: bf16 under mixed precision
  std::vector<nlohmann::json> moments;  // every rank's moment shard entry
  std::vector<nlohmann::json> masters;  // every rank's master shard entry (mixed precision; else empty)
  int64_t trained_numel = 0;            // elements the moments cover, as in OptimizerMoments
  int64_t layout_numel = 0;             // elements the masters cover: the whole layout
  int64_t steps = 0;                    // optimizer steps taken
};
// Where the ranks stage their files for the checkpoint of `global_step`.
std::string checkpoint_stage_dir(const std::string& run_dir, int64_t global_step);

// Writes <run_dir>/checkpoints/global_step_<N> (optimizer state and trainer state written straight into
// the folder being assembled) and updates <run_dir>/checkpoints/latest; then, when max_to_keep > 0
// (trainer.max_actor_ckpt_to_keep), removes the oldest global_step_* folders beyond that many. Returns the
// folder.
std::string save_run_checkpoint(const std::string& run_dir, const ModelWeights& w, const OptimizerMoments& opt,
                                const TrainerState& st, DType save_dtype, const std::string& tokenizer_dir,
                                int64_t max_to_keep = 0);
// The same from the ranks' staged files, moved into the folder by the one rank that calls it (the stage is
// removed).
std::string save_run_checkpoint(const std::string& run_dir, const ModelConfig& c, const ShardedCheckpoint& ck,
                                const TrainerState& st, const std::string& tokenizer_dir, int64_t max_to_keep = 0);
// LoRA: the same folder with the adapter in PEFT's layout (adapter_config.json + adapter_model.safetensors,
// loadable by PEFT and vLLM, and by `--adapter`) instead of the frozen base, and the adapters' moments in
// optimizer.safetensors (m.<adapter key>, v.<adapter key>). Written as a folder atomically.
std::string save_run_lora_checkpoint(const std::string& run_dir, const LoraAdapters& lora, const OptimizerMoments& opt,
                                     const TrainerState& st, const std::string& base_model,
                                     const std::string& tokenizer_dir, int64_t max_to_keep = 0);
// Loads a LoRA checkpoint's adapter (same modules and rank as `lora`), moments and state.
TrainerState load_run_lora_checkpoint(const std::string& dir, LoraAdapters& lora, float* m, float* v,
                                      int64_t moments_numel, int64_t* optimizer_steps);
// The global_step_<N> folders of <run_dir>/checkpoints, oldest (smallest N) first.
std::vector<std::string> run_checkpoints(const std::string& run_dir);
// The newest complete checkpoint folder of a run ("" when there is none).
std::string latest_run_checkpoint(const std::string& run_dir);
// Loads weights, optimizer moments (into m and v, each [moments_numel], the layout or its text prefix as in
// OptimizerMoments, zero padding) and state from a checkpoint folder; *optimizer_steps receives the
// optimizer's step count.
TrainerState load_run_checkpoint(const std::string& dir, ModelWeights& w, float* m, float* v, int64_t moments_numel,
                                 int64_t* optimizer_steps);

// A checkpoint's weights: from its f32 master shards when it has them (several ranks under mixed precision:
// exact, where the model files are rounded to bf16), else from its model folder.
void load_checkpoint_weights(const std::string& dir, ModelWeights& w);
// Loads weights (as load_checkpoint_weights) and state, and the
// moments of elements [lo, hi) of the layout into m and v [hi - lo], from sharded moments or from
// optimizer.safetensors, whatever the number of ranks that saved them.
TrainerState load_run_checkpoint_range(const std::string& dir, ModelWeights& w, int64_t lo, int64_t hi,
                                       int64_t moments_numel, float* m, float* v, int64_t* optimizer_steps);

// The same for an optimizer that owns the whole layout (one process).
std::string save_run_checkpoint(const std::string& run_dir, const ModelWeights& w, const train::AdamW& adam,
                                const TrainerState& st, DType save_dtype, const std::string& tokenizer_dir,
                                int64_t max_to_keep = 0);
TrainerState load_run_checkpoint(const std::string& dir, ModelWeights& w, train::AdamW& adam);

}  // namespace grpo
