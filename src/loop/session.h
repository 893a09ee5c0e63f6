// What SFT and GRPO runs share: the policy's weights (one copy, read by both the trainer and the rollout
// engine), its tokenizer, the datasets with encoded prompts, and the rollout engine over the weights.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "config/config.h"
#include "loop/tool_turns.h"
#include "data/dataset.h"
#include "image/preprocess.h"
#include "model/decoder.h"
#include "model/picture.h"
#include "rollout/decoder_model.h"
#include "rollout/engine.h"
#include "tokenizer/tokenizer.h"

namespace grpo {

// What a run generates with the rollout engine: GRPO rolls out every step (and validates), SFT only
// validates (no engine without validation data).
enum class SessionRollout { TrainAndValidate, ValidateOnly };
// The rank that opens the session among the ranks that will train together: under mixed precision each
// loads the f32 masters of its own shard of the GEMM weights only (ModelWeights::shard_gemm_masters).
struct WeightShard {
  int rank = 0;
  int ranks = 1;
};

struct Session {
  Config config;
  ComputeMode mode = ComputeMode::F32;  // mixed_precision.enabled -> bf16
  ModelConfig model_config;  // the model's config.json (read before the weights)
  std::unique_ptr<ModelWeights> weights;
  // LoRA (actor_rollout_ref.model.lora_rank > 0): the adapters trained on the frozen weights, read unmerged
  // by the rollout engine and the trainer's decoder; null for full fine-tuning.
  std::unique_ptr<LoraAdapters> lora;
  std::unique_ptr<Tokenizer> tokenizer;
  Dataset train, val;  // val.examples empty when there is no val file
  std::unique_ptr<rollout::DecoderRolloutModel> rollout_model;
  std::unique_ptr<rollout::Engine> engine;  // null for SFT without validation data
  std::vector<int32_t> stop_ids;  // ends of responses
  // rollout.multi_turn.enable: the tools (their schemas are in every prompt), their runner and the engine's
  // turn handler; null otherwise.
  std::unique_ptr<RunTools> tools;
  // The model's preprocessor_config.json (vision-language models): how the datasets' pictures are sized
  // and preprocessed (data/vision_data.h loads an example's pixels when it is used).
  std::optional<ImageProcessorConfig> image_processor;
  // The base of the KV budget's fraction (rollout.gpu_memory_utilization): what the memory plan leaves the
  // cache, set by `before_weights` (0: MemAvailable when the engine starts, for runs without a plan).
  int64_t kv_base_bytes = 0;

  // Loads everything `config` names and builds the rollout engine when `rollout` needs one (its KV budget
  // is printed). `require_response`: SFT data. The model's config.json, the tokenizer and the datasets are
  // read first; `before_weights` (when given) then sees the session without weights (the memory plan's
  // check, which sets kv_base_bytes), and may refuse the run before anything large is allocated. `shard`: which f32
  // masters to load.
  using BeforeWeights = std::function<void(Session&)>;
  static std::unique_ptr<Session> open(const Config& config, bool require_response,
                                       SessionRollout rollout = SessionRollout::TrainAndValidate,
                                       const BeforeWeights& before_weights = {}, const WeightShard& shard = {});
  // The first part of open(): config.json, tokenizer, image preprocessor and datasets, no weights, no engine.
  static std::unique_ptr<Session> open_data(const Config& config, bool require_response);
  // An example's pictures, decoded and preprocessed now for the model (empty without pictures); `data`
  // holds the example (named in errors). Datasets keep only paths and grids, so pixels live as long as
  // the step, validation or batch that uses them.
  std::vector<PicturePtr> pictures(const Example& ex, const Dataset& data) const;
  // Refuses (naming the row) pictures the model cannot see: a text model, a preprocessor whose patch rows
  // or merge differ from the vision tower's, a tokenizer whose <|image_pad|> is not config.json's
  // image_token_id.
  void check_pictures_fit_model(const Dataset& data, const Example& ex) const;
  // Re-reads weights from a Hugging Face folder (resume) and refreshes what depends on them.
  void load_weights(const std::string& dir);
};

}  // namespace grpo
