// A model folder loaded for generation (see loaded_model.h).
#include "generate/loaded_model.h"

#include <filesystem>

#include "core/error.h"

namespace grpo::generate {

LoadedModel load_model(const std::string& model, const std::string& adapter, const std::string& dtype,
                       int64_t block_size, const std::string& needs_tokenizer) {
  LoadedModel m;
  if (std::filesystem::exists(std::filesystem::path(model) / "tokenizer.json")) {
    m.tok = Tokenizer::load(model);
  } else {
    m.no_tokenizer = cat("no tokenizer.json in ", model);
    GRPO_CHECK(needs_tokenizer.empty(), "[generate] ", needs_tokenizer, " needs the model's tokenizer (",
               m.no_tokenizer, ")");
  }
  m.weights = ModelWeights::load(model);
  const ModelConfig& config = m.weights->config();
  if (m.tok) {
    GRPO_CHECK(m.tok->vocab_size() <= config.vocab_size, "[generate] ", model, ": the tokenizer has ",
               m.tok->vocab_size(), " token ids but the model's vocab_size is ", config.vocab_size);
    m.stop_ids = m.tok->stop_ids();
  } else {
    for (int64_t id : config.eos_token_ids) m.stop_ids.push_back(static_cast<int32_t>(id));
  }
  m.model = std::make_unique<rollout::DecoderRolloutModel>(*m.weights, parse_compute_mode(dtype), block_size);
  if (!adapter.empty()) m.lora = LoraAdapters::load(config, adapter);
  m.model->set_lora(m.lora.get());
  if (has_image_processor_config(model)) m.images = load_image_processor_config(model);
  m.image_pad = static_cast<int32_t>(config.image_token_id);
  return m;
}

}  // namespace grpo::generate
