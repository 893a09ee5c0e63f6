// A randomly initialised preset model with the byte-level tokenizer, written as a Hugging Face folder:
// the starting point of the demo and of `grpo bench grpo` (no downloads).
#pragma once
#include <cstdint>
#include <string>

namespace grpo {

// Writes DIR/config.json, model.safetensors (f32), tokenizer.json and tokenizer_config.json; for qwen3-vl
// also preprocessor_config.json, with the vision tokens in the tokenizer.
void write_byte_model(const std::string& dir, const std::string& arch, const std::string& preset, uint64_t seed);

}  // namespace grpo
