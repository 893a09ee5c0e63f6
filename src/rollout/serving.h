// What Engine::serve talks to: a feed of requests that arrive while others run (a server's queue). Between
// two steps the engine asks the feed for new requests and for the ones to cancel, then tells it each
// sample's new tokens and each request's end. Requests join the running batch as the scheduler admits them;
// a cancelled request's sequences leave it and their KV blocks are freed at once. A request's tokens do not
// depend on what else runs (the engine's batch invariance; its RNG key is (seed, id, sample)).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rollout/request.h"

namespace grpo::rollout {

// A request handed to the engine; `request` must stay valid until on_done(ticket) returns.
struct Admission {
  uint64_t ticket;
  const Request* request;
};

// The engine between two steps, for the feed's metrics.
struct ServeState {
  int64_t running_requests = 0;  // admitted and not done
  int64_t kv_blocks_used = 0, kv_blocks = 0;
  int64_t preemptions = 0, generated_tokens = 0, steps = 0;
};

// A sample's tokens so far, of which the last `fresh` are new.
struct SampleProgress {
  std::span<const int32_t> tokens;    // [generated]
  std::span<const float> logprobs;    // [generated]
  std::span<const TokenLogprob> top;  // [generated, the request's top_logprobs]
  size_t fresh = 0;
  std::string_view text;  // the text so far (it may still lose a stop string's start that is held at its end)
};

class RequestFeed {
 public:
  virtual ~RequestFeed() = default;
  // Called between steps: appends the requests to admit and the tickets to cancel (of admitted requests not
  // done). `idle`: nothing runs, so the call may block until there is work. Returns false once the feed has
  // stopped: the engine returns when nothing runs any more (it still runs what was admitted).
  virtual bool poll(std::vector<Admission>& admit, std::vector<uint64_t>& cancel, bool idle,
                    const ServeState& state) = 0;
  // Sample `sample` of request `ticket` has new tokens.
  virtual void on_tokens(uint64_t ticket, int32_t sample, const SampleProgress& progress) = 0;
  // The request ended: its results (cancelled samples with finish reason abort), or `error` (not empty)
  // when it was refused (an invalid request, or one whose samples cannot fit the KV cache).
  virtual void on_done(uint64_t ticket, RequestResult result, const std::string& error) = 0;
};

}  // namespace grpo::rollout
