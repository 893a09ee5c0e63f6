// The JSON fields of a generation request (see request_fields.h).
#include "generate/request_fields.h"

#include <type_traits>

#include "core/error.h"
#include "generate/options.h"

namespace grpo::generate {

namespace {

template <typename T>
void override_sampling(const Json& j, const char* key, rollout::SamplingParams& p, T rollout::SamplingParams::*member) {
  if (!j.contains(key)) return;
  if constexpr (std::is_same_v<T, float>)
    set_sampling(p, member, number_field(j, key), field(key));
  else
    set_sampling(p, member, static_cast<T>(integer_field(j, key, kInt32Min, kInt32Max)), field(key));
}
}  // namespace

std::string field(const char* key) { return cat("field \"", key, "\""); }

int64_t integer_field(const Json& j, const char* key, int64_t lo, int64_t hi) {
  const Json& v = j.at(key);
  GRPO_CHECK(v.is_number_integer(), field(key), " must be an integer, got ", v.dump());
  // Non-negative integers parse as unsigned: beyond int64 they are out of any range asked for here.
  const bool fits = !v.is_number_unsigned() || v.get<uint64_t>() <= static_cast<uint64_t>(kInt64Max);
  GRPO_CHECK(fits && v.get<int64_t>() >= lo && v.get<int64_t>() <= hi, field(key), " must be an integer in [", lo, ", ",
             hi, "], got ", v.dump());
  return v.get<int64_t>();
}

float number_field(const Json& j, const char* key) {
  const Json& v = j.at(key);
  GRPO_CHECK(v.is_number(), field(key), " must be a number, got ", v.dump());
  return to_float(v.get<double>());
}

std::vector<std::string> stop_field(const Json& j, const char* key) {
  const Json& v = j.at(key);
  std::vector<std::string> stops;
  if (v.is_string()) {
    stops.push_back(v.get<std::string>());
  } else {
    GRPO_CHECK(v.is_array(), field(key), " must be a string or an array of strings, got ", v.dump());
    for (const Json& s : v) {
      GRPO_CHECK(s.is_string(), field(key), " must be a string or an array of strings, got ", v.dump());
      stops.push_back(s.get<std::string>());
    }
  }
  check_stops(stops, field(key));
  return stops;
}

void apply_sampling_overrides(const Json& j, rollout::SamplingParams& p) {
  using rollout::SamplingParams;
  override_sampling(j, "temperature", p, &SamplingParams::temperature);
  override_sampling(j, "top_p", p, &SamplingParams::top_p);
  override_sampling(j, "top_k", p, &SamplingParams::top_k);
  override_sampling(j, "min_p", p, &SamplingParams::min_p);
}

std::vector<int32_t> chat_prompt(const Tokenizer& tok, const Json& messages, const Json& tools) {
  return tok.encode(tok.apply_chat_template(messages, tools, true, Json::object({{"enable_thinking", false}})));
}

}  // namespace grpo::generate
