// Validation of rollout requests: every bad field is an error that names the request and the field.
#include "rollout/request.h"

#include <cmath>

#include "core/error.h"

namespace grpo::rollout {

std::string_view finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Abort: return "abort";
  }
  return "?";
}

void validate_sampling(const SamplingParams& p, const std::string& where) {
  GRPO_CHECK(std::isfinite(p.temperature) && p.temperature >= 0, "[rollout] ", where,
             ": temperature must be a finite number >= 0, got ", p.temperature);
  GRPO_CHECK(p.top_k >= 0, "[rollout] ", where, ": top_k must be >= 0 (0 = off), got ", p.top_k);
  GRPO_CHECK(std::isfinite(p.top_p) && p.top_p > 0 && p.top_p <= 1, "[rollout] ", where,
             ": top_p must be in (0, 1], got ", p.top_p);
  GRPO_CHECK(std::isfinite(p.min_p) && p.min_p >= 0 && p.min_p <= 1, "[rollout] ", where,
             ": min_p must be in [0, 1], got ", p.min_p);
}

void validate_request(const Request& r, size_t index, int64_t vocab_size, int64_t max_positions,
                      bool has_detokenizer) {
  const std::string where = cat("request ", index);
  GRPO_CHECK(r.n >= 1, "[rollout] ", where, ": n must be >= 1, got ", r.n);
  GRPO_CHECK(r.max_new_tokens >= 1, "[rollout] ", where, ": max_new_tokens must be >= 1, got ", r.max_new_tokens);
  GRPO_CHECK(!r.prompt.empty(), "[rollout] ", where, ": prompt is empty (at least one token needed)");
  GRPO_CHECK(static_cast<int64_t>(r.prompt.size()) < max_positions, "[rollout] ", where, ": prompt has ",
             r.prompt.size(), " tokens, the model's max_positions is ", max_positions,
             " (room for at least one new token needed)");
  for (size_t i = 0; i < r.prompt.size(); ++i)
    GRPO_CHECK(r.prompt[i] >= 0 && r.prompt[i] < vocab_size, "[rollout] ", where, ": prompt[", i, "] = ", r.prompt[i],
               " not in [0, ", vocab_size, ")");
  for (size_t i = 0; i < r.stop_token_ids.size(); ++i)
    GRPO_CHECK(r.stop_token_ids[i] >= 0 && r.stop_token_ids[i] < vocab_size, "[rollout] ", where,
               ": stop_token_ids[", i, "] = ", r.stop_token_ids[i], " not in [0, ", vocab_size, ")");
  for (size_t i = 0; i < r.stop_strings.size(); ++i)
    GRPO_CHECK(!r.stop_strings[i].empty(), "[rollout] ", where, ": stop_strings[", i, "] is empty");
  GRPO_CHECK(r.stop_strings.empty() || has_detokenizer, "[rollout] ", where,
             ": stop_strings need a detokenizer, and the engine has none");
  GRPO_CHECK(r.stop_lengths.empty() || static_cast<int64_t>(r.stop_lengths.size()) == r.n, "[rollout] ", where,
             ": stop_lengths has ", r.stop_lengths.size(), " entries, expected n = ", r.n, " (or none)");
  for (size_t k = 0; k < r.stop_lengths.size(); ++k)
    GRPO_CHECK(r.stop_lengths[k] >= 1 && r.stop_lengths[k] <= r.max_new_tokens, "[rollout] ", where, ": stop_lengths[",
               k, "] = ", r.stop_lengths[k], " not in [1, max_new_tokens = ", r.max_new_tokens, "]");
  GRPO_CHECK(r.top_logprobs >= 0 && r.top_logprobs <= kMaxTopLogprobs, "[rollout] ", where,
             ": top_logprobs must be in [0, ", kMaxTopLogprobs, "], got ", r.top_logprobs);
  validate_sampling(r.sampling, where);
}

}  // namespace grpo::rollout
