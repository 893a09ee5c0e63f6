// The state of one sequence in the rollout engine: a group's prompt (which forks into the n samples once
// its prefill yields the first logits) or one sample. Tokens are the prompt followed by the generated
// tokens; num_computed of them have k/v in the cache, in the blocks of the block table. A multi-turn sample's
// generated tokens mix its turns with inserted replies (mask 0); between turns it is parked with a pending reply.
#pragma once
#include <chrono>
#include <cstdint>
#include <future>
#include <vector>

#include "core/rng.h"
#include "rollout/incremental_text.h"
#include "rollout/request.h"
#include "rollout/turns.h"

namespace grpo::rollout {

struct Sequence {
  Sequence(int32_t request, int32_t sample, const Request& r, const DecodeFn* decode, int64_t max_blocks)
      : request(request), sample(sample), rng({r.seed, r.id, static_cast<uint64_t>(sample < 0 ? 0 : sample)}),
        text(decode, &r.stop_strings) {
    const size_t max_tokens = r.prompt.size() + static_cast<size_t>(r.max_new_tokens);
    tokens.reserve(max_tokens);
    logprobs.reserve(r.max_new_tokens);
    top.reserve(static_cast<size_t>(r.max_new_tokens) * r.top_logprobs);
    blocks.reserve(max_blocks);
    block_hashes.reserve(max_blocks);
    prompt_len = static_cast<int64_t>(r.prompt.size());
    if (sample < 0 && r.prompt_logprobs) {
      scores_prompt = true;
      prompt_logprobs.resize(prompt_len - 1);
      prompt_top.resize((prompt_len - 1) * r.top_logprobs);
    }
  }
  bool is_prompt() const { return sample < 0; }
  int64_t remaining() const { return static_cast<int64_t>(tokens.size()) - num_computed; }
  int64_t generated() const { return static_cast<int64_t>(tokens.size()) - prompt_len; }

  int32_t request;  // index into the requests of generate()
  int32_t sample;   // sample index, -1 for a group's prompt sequence
  Rng rng;          // per-sample stream from (seed, request id, sample index)
  std::vector<int32_t> tokens;          // prompt + generated
  std::vector<float> logprobs;          // [generated]
  std::vector<TokenLogprob> top;        // [generated, request's top_logprobs]
  int64_t prompt_len = 0;
  // A prompt sequence of a request with prompt_logprobs: rows of its prefill are scored (by position).
  bool scores_prompt = false;
  std::vector<float> prompt_logprobs;    // [prompt_len - 1]
  std::vector<TokenLogprob> prompt_top;  // [prompt_len - 1, top_logprobs]
  int64_t num_computed = 0;             // tokens whose k/v are in the cache
  std::vector<int32_t> blocks;          // block table
  std::vector<uint64_t> block_hashes;   // prefix-cache hashes of the first full, computed blocks
  // Prefix-cache keys of the prompt [prompt_len] when it has pictures (its tokens, with image pads replaced by
  // keys of the picture's content), else null: the tokens are the keys.
  const int32_t* prompt_keys = nullptr;
  int64_t start_order = -1;             // admission order (-1: never admitted); shared by a group's samples
  bool running = false, finished = false;
  int64_t result_len = -1;  // static batching: generated tokens in the result once it stopped (-1: still live)
  int64_t preemptions = 0;
  IncrementalText text;
  FinishReason finish_reason = FinishReason::Abort;
  // Multi-turn (generate() given a TurnHandler):
  std::vector<uint8_t> mask;           // [generated] 1: sampled, 0: inserted reply
  int64_t turn_begin = 0;              // generated tokens before the current turn
  size_t turn_text_begin = 0;          // bytes of text before the current turn
  std::future<TurnReply> pending;      // valid while parked
  std::chrono::steady_clock::time_point parked_at;  // when it was last parked
  TurnStats turns;
};

}  // namespace grpo::rollout
