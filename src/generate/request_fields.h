// The JSON fields of a generation request shared by `grpo generate`'s prompt lines and the server's
// requests: integers and numbers in range, stop strings, the sampling overrides, and a chat prompt rendered
// as training renders prompts. Each error names the field and what was expected.
#pragma once
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rollout/request.h"
#include "tokenizer/tokenizer.h"

namespace grpo::generate {

using Json = nlohmann::ordered_json;

inline constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();
inline constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
inline constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
inline constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// "field \"key\"", the prefix of an error about `key`.
std::string field(const char* key);
// j[key] as an integer in [lo, hi]; anything else (a float, a string such as "nan") is an error naming it.
int64_t integer_field(const Json& j, const char* key, int64_t lo, int64_t hi);
// j[key] as a number (a string such as "nan" is an error naming it).
float number_field(const Json& j, const char* key);
// j[key]: a string or an array of non-empty strings.
std::vector<std::string> stop_field(const Json& j, const char* key = "stop");
// j's "temperature", "top_p", "top_k" and "min_p", when present, checked with the engine's rules.
void apply_sampling_overrides(const Json& j, rollout::SamplingParams& p);
// Chat messages rendered with the generation prompt and enable_thinking false (Qwen3's empty think block),
// as the rollouts and SFT render prompts, so that a model trained here is tried on the text it trained on.
std::vector<int32_t> chat_prompt(const Tokenizer& tok, const Json& messages, const Json& tools);

}  // namespace grpo::generate
