// Preset model + byte tokenizer folder (see byte_model.h).
#include "data/byte_model.h"

#include <filesystem>

#include "core/files.h"
#include "model/checkpoint.h"
#include "model/init.h"
#include "model/presets.h"
#include "model/weights.h"
#include "tokenizer/byte_tokenizer.h"

namespace grpo {

void write_byte_model(const std::string& dir, const std::string& arch, const std::string& preset, uint64_t seed) {
  ModelWeights w(preset_config(arch, preset));
  init_parameters(w, seed);
  const std::string tok = dir + ".byte_tokenizer";
  make_dirs(tok);
  const bool vision = w.config().has_vision();
  write_byte_tokenizer(tok, vision);
  std::vector<std::string> extra{tok + "/tokenizer.json", tok + "/tokenizer_config.json"};
  if (vision) {
    write_preprocessor_config(tok + "/preprocessor_config.json", w.config());
    extra.push_back(tok + "/preprocessor_config.json");
  }
  save_checkpoint(dir, w.config(), w.named_tensors(), DType::F32, 0, extra);
  std::filesystem::remove_all(tok);
}

}  // namespace grpo
