// A model folder loaded for generation (`grpo generate`, `grpo serve`): its tokenizer (none without
// tokenizer.json: token ids in and out), weights, the rollout model over them with an optional LoRA adapter
// applied at every step (not merged), the picture preprocessing of a vision-language model and the stop ids
// (the tokenizer's, else config.json's eos_token_id).
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "image/preprocess.h"
#include "model/lora.h"
#include "model/weights.h"
#include "rollout/decoder_model.h"
#include "tokenizer/tokenizer.h"

namespace grpo::generate {

struct LoadedModel {
  std::optional<Tokenizer> tok;
  std::string no_tokenizer;  // why tok is empty: "no tokenizer.json in MODEL"
  std::unique_ptr<ModelWeights> weights;
  std::unique_ptr<LoraAdapters> lora;
  std::unique_ptr<rollout::DecoderRolloutModel> model;
  std::optional<ImageProcessorConfig> images;  // preprocessor_config.json, for vision-language models
  std::vector<int32_t> stop_ids;
  int32_t image_pad = -1;  // config.json's image_token_id (-1: none)

  const Tokenizer* tokenizer() const { return tok ? &*tok : nullptr; }
  const ImageProcessorConfig* image_config() const { return images ? &*images : nullptr; }
};

// Loads `model` (weights read as `dtype`, "f32" or "bf16") with `adapter` (empty: none) for an engine of
// KV blocks of `block_size` tokens. `needs_tokenizer`: what requires tokenizer.json ("--chat"), an error
// naming it when the file is absent (empty: nothing does).
LoadedModel load_model(const std::string& model, const std::string& adapter, const std::string& dtype,
                       int64_t block_size, const std::string& needs_tokenizer);

}  // namespace grpo::generate
