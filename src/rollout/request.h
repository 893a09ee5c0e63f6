// What the rollout engine is asked for (a Request: prompt, its pictures, n samples, sampling parameters, stops,
// limits, seed) and what it returns (per sample: tokens, log-probs, text, finish reason).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/picture.h"
#include "rollout/turns.h"

namespace grpo::rollout {

// Applied in this order: temperature, top-k, top-p, min-p, then one draw from the per-sample RNG.
struct SamplingParams {
  float temperature = 1.0f;  // 0: greedy (argmax, ties to the lowest id)
  int32_t top_k = 0;         // 0: off; else keep the k most likely tokens
  float top_p = 1.0f;        // (0, 1]: keep the smallest set of most likely tokens with mass >= top_p
  float min_p = 0.0f;        // [0, 1]: drop tokens with p < min_p * p_max
};

// A token and its log-prob (an alternative of a position's top log-probs).
struct TokenLogprob {
  int32_t token = -1;
  float logprob = 0;
};
constexpr int32_t kMaxTopLogprobs = 20;  // OpenAI's bound on top_logprobs

struct Request {
  std::vector<int32_t> prompt;  // token ids, at least one
  // Vision-language models: the pictures of the prompt's <|image_pad|> runs, in order (shared, not copied).
  std::vector<PicturePtr> pictures;
  int32_t n = 1;                // samples (the group size G of GRPO), >= 1
  SamplingParams sampling;
  std::vector<int32_t> stop_token_ids;   // the stop token is kept in tokens, its text is not
  std::vector<std::string> stop_strings;  // matched on the decoded text; excluded from the text
  int32_t max_new_tokens = 256;           // >= 1
  // Predetermined lengths (benchmarks: the same work in every configuration): sample k stops after
  // stop_lengths[k] tokens as at a stop token (finish reason stop). Empty: none; else n values in
  // [1, max_new_tokens].
  std::vector<int32_t> stop_lengths;
  uint64_t seed = 0;
  // Per generated token, the log-probs of this many most likely tokens ([0, kMaxTopLogprobs]), under the same
  // distribution as SampleResult::logprobs (most likely first, ties to the lower id).
  int32_t top_logprobs = 0;
  // Also score the prompt: each prompt token after the first gets its log-prob given the tokens before it (and
  // top_logprobs alternatives), under the same distribution. Its prefill is never taken from the prefix cache
  // and runs at most Scheduler's kMaxScoredRows tokens a step (each such token is a row of logits).
  bool prompt_logprobs = false;
  // Identifies the request in the RNG key (seed, id, sample index): give each request of a batch its own
  // id so that results do not depend on which other requests run alongside it.
  uint64_t id = 0;
};

enum class FinishReason { Stop, Length, Abort };
std::string_view finish_reason_name(FinishReason r);

struct SampleResult {
  std::vector<int32_t> tokens;  // generated tokens
  // log p(token) under softmax(logits / temperature) over the full vocabulary (temperature 0: under
  // softmax(logits)), before top-k/top-p/min-p truncation: the quantity the trainer recomputes.
  std::vector<float> logprobs;
  // [tokens, Request::top_logprobs]: each token's alternatives (an inserted reply's token: token -1, logprob 0).
  std::vector<TokenLogprob> top_logprobs;
  std::string text;  // decoded generated text, stop string / stop token text excluded
  FinishReason finish_reason = FinishReason::Abort;
  // Multi-turn (generate() given a TurnHandler): tokens and logprobs hold every turn and the inserted replies
  // (logprob 0); response_mask [tokens] is 1 for sampled tokens, 0 for inserted ones (verl's response_mask);
  // text is the turns' text with the replies' decoded text between them. Empty / zero otherwise.
  std::vector<uint8_t> response_mask;
  TurnStats turns;
};

struct RequestResult {
  std::vector<SampleResult> samples;  // [n]
  // Request::prompt_logprobs: log p(prompt[i + 1] | prompt[0..i]) [prompt - 1], and the alternatives of
  // each [prompt - 1, top_logprobs]. Empty otherwise.
  std::vector<float> prompt_logprobs;
  std::vector<TokenLogprob> prompt_top_logprobs;
};

// Throws grpo::Error naming the request index and the field when a request is invalid.
void validate_request(const Request& r, size_t index, int64_t vocab_size, int64_t max_positions,
                      bool has_detokenizer);
void validate_sampling(const SamplingParams& p, const std::string& where);

}  // namespace grpo::rollout
