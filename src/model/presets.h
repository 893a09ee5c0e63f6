// Built-in model shapes for `grpo init` and tests: tiny (~1M parameters), small (~25M, the shape the
// performance guide measures peers on), qwen3-0.6b (the real Qwen3-0.6B shape) for each text architecture,
// qwen3-1.7b and qwen3-4b (the real Qwen3-1.7B / Qwen3-4B shapes, qwen3 only),
// and Qwen3-VL shapes (tiny and small with a small vision tower, qwen3-vl-2b and qwen3-vl-8b the real shapes).
#pragma once
#include <string>
#include <vector>

#include "model/config.h"

namespace grpo {

// arch: qwen3 | qwen2 | llama | qwen3-vl; preset: tiny | small | qwen3-0.6b (text archs) | qwen3-1.7b |
// qwen3-4b (qwen3) | qwen3-vl-2b, qwen3-vl-8b (qwen3-vl: the real Qwen3-VL-2B and -8B shapes). Unknown names
// and combinations are errors listing the choices.
// tiny/small use the 384-token vocabulary of the byte tokenizer (256 bytes + specials at 256.., the vision
// tokens at 261..264 for qwen3-vl).
ModelConfig preset_config(const std::string& arch, const std::string& preset);
const std::vector<std::string>& preset_archs();
const std::vector<std::string>& preset_names();
bool preset_exists(const std::string& arch, const std::string& preset);

// Writes preprocessor_config.json (atomically) for a Qwen3-VL config: Qwen3-VL-8B's file with this tower's
// patch sizes; the pixel limits (size.shortest_edge = min_pixels, longest_edge = max_pixels) of the released
// models for the real shapes (vocab > 100k), smaller ones for tiny/small models trained on small pictures.
void write_preprocessor_config(const std::string& path, const ModelConfig& c);

}  // namespace grpo
