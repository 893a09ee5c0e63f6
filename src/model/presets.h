// Built-in model shapes for `grpo init` and tests: tiny (~1M parameters), small (~25M, the shape the
// performance guide measures peers on) and qwen3-0.6b (the real Qwen3-0.6B shape), for each architecture.
#pragma once
#include <string>
#include <vector>

#include "model/config.h"

namespace grpo {

// arch: qwen3 | qwen2 | llama; preset: tiny | small | qwen3-0.6b. Unknown names are errors listing the
// choices. tiny/small use the 384-token vocabulary of the byte tokenizer (256 bytes + specials at 256..).
ModelConfig preset_config(const std::string& arch, const std::string& preset);
const std::vector<std::string>& preset_archs();
const std::vector<std::string>& preset_names();

}  // namespace grpo
