// libFuzzer target: config.json text -> JSON -> parse_model_config -> expected_tensors and back to JSON.
// Invalid JSON is skipped; any invalid config must throw grpo::Error and nothing may crash or overflow.
// Seeds: fuzz/corpus/config/.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  try {
    grpo::ModelConfig c = grpo::parse_model_config(j, "fuzz/config.json");
    if (grpo::parameter_count(c) <= 0) std::abort();
    grpo::ModelConfig back = grpo::parse_model_config(grpo::model_config_to_json(c), "fuzz/roundtrip.json");
    if (back.head_dim != c.head_dim || back.vocab_size != c.vocab_size) std::abort();
  } catch (const grpo::Error&) {
  }
  return 0;
}
