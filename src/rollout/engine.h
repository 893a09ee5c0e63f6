// The rollout engine: generates n samples for each request with a RolloutModel over a paged KV cache, with
// continuous batching, group sharing (a prompt is prefilled once for its n samples), a cross-request prefix
// cache and preemption by recompute. Results do not depend on batch composition, scheduling or thread count
// (given a model whose per-token results do not depend on the rest of the batch). Prompts with pictures
// (vision-language models) are encoded once per request; the prefix cache keys their image pads by the
// pictures' content, so the same picture in the same place hits and another picture does not.
//
//   Engine engine(model, EngineConfig{.kv_memory_bytes = 1 << 30}, detokenize);
//
// The KV cache is sized once, at construction: the budget (kv_memory_bytes, or a fraction of the available
// memory) capped at what the work can hold at once (kv_max_blocks, from kv_blocks_for()). Its memory is
// reserved, not touched: pages are committed as blocks are first used (see core/arena.h, Buffer).
//   std::vector<RequestResult> out = engine.generate(requests);
//
// Multi-turn (rollout/turns.h): given a TurnHandler, a sample whose turn ends with a stop is shown to the
// handler; when it answers with work (a tool call), the sample is parked with its KV blocks while the others
// decode, and once the reply is ready its tokens are prefilled onto the sample, which decodes its next turn.
//   engine.generate(requests, {}, MultiTurn{&handler, max_assistant_turns});
//
// Serving (rollout/serving.h): engine.serve(feed) takes requests while others run, streams their tokens and
// cancels the ones the feed gives up; a request's results are the same as in generate().
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/arena.h"
#include "rollout/incremental_text.h"
#include "rollout/kv_cache.h"
#include "rollout/model_interface.h"
#include "rollout/request.h"
#include "rollout/sampler.h"
#include "rollout/serving.h"
#include "rollout/turns.h"

namespace grpo::rollout {

struct Sequence;
struct ScheduledSeq;

struct EngineConfig {
  int64_t block_size = 16;
  ops::KvDType kv_dtype = ops::KvDType::F32;
  int64_t kv_memory_bytes = 0;      // > 0: the KV cache's budget in bytes
  double kv_memory_fraction = 0.3;  // used when kv_memory_bytes == 0: fraction of the base below
  int64_t kv_base_bytes = 0;        // > 0: the fraction's base, what the rest of a run leaves the cache (its memory
                                    // plan's kv_base_bytes); 0: MemAvailable when the engine starts
  int64_t kv_max_blocks = 0;        // > 0: the budget never exceeds this many blocks (what the work can use)
  int64_t token_budget = 512;       // tokens processed per step (decodes + prefill chunks)
  int64_t max_seqs = 64;            // sequences per step
  bool prefix_cache = true;
  // false: a static batch, the unoptimised baseline of the benchmarks. A sample that stops keeps its result
  // but goes on decoding (padding, discarded) until every sample of the generate call has stopped, as a
  // batch padded to its longest sequence does. Results are the same either way.
  bool continuous_batching = true;
};

// Blocks that `sequences` samples of up to `tokens` tokens each hold at most at once. Errors name
// `what` (e.g. "[config] actor_rollout_ref.rollout.max_num_seqs") when the count overflows.
int64_t kv_blocks_for(int64_t sequences, int64_t tokens, int64_t block_size, const char* what);
// The most blocks one generate() of `requests` holds at once when at most max_seqs samples run together
// (a group is admitted whole, so at least its n): the sum of the largest per-sample needs, each
// ceil(min(prompt + max_new_tokens, max_positions) / block_size).
int64_t kv_blocks_for(std::span<const Request> requests, int64_t max_seqs, int64_t block_size,
                      int64_t max_positions);

// How the KV cache was sized, for the log.
struct KvBudget {
  int64_t available_bytes = 0;  // the fraction's base, when the budget is a fraction (else 0)
  bool base_is_plan = false;    // that base is what the memory plan leaves the cache, not MemAvailable
  double fraction = 0;
  int64_t requested_bytes = 0;  // kv_memory_bytes, or fraction x available_bytes
  int64_t max_blocks = 0;       // the cap from the work (0: none)
  int64_t blocks = 0, block_size = 0, bytes = 0;
  ops::KvDType dtype = ops::KvDType::F32;
  // "KV cache 96.0 MiB (6144 blocks of 16 tokens, bf16) = min(0.50 x 20.1 GiB available, 6144 blocks the
  // work holds at once)"; "... 0.50 x 9.3 GiB left by the rest of the run ..." with a planned base
  std::string describe() const;
};

// The KV budget `config` gives a cache of `shape` when its fraction's base is `available_bytes` (read only
// when config.kv_memory_bytes is 0): the engine's sizing rule, shared with the memory plan.
KvBudget kv_budget_for(const EngineConfig& config, const KvCacheShape& shape, int64_t available_bytes);
// The token bucket (a power of 2 from 16, at most config.token_budget) the step workspaces are sized for
// when a step has `tokens` tokens, and the bytes of the step workspace (token ids, positions, block tables,
// the logits rows) for that bucket, of a model with `vocab` ids and `max_positions` positions, with room for
// `scored_rows` more logits rows (prompt scoring: kMaxScoredRows once a request asks for it, else 0).
int64_t workspace_bucket(const EngineConfig& config, int64_t tokens);
int64_t step_workspace_bytes(const EngineConfig& config, int64_t bucket, int64_t vocab, int64_t max_positions,
                             int64_t scored_rows = 0);

struct Progress {
  int64_t requests_done = 0, requests_total = 0;
  int64_t tokens_generated = 0;
  double elapsed_s = 0, tokens_per_second = 0;
};
// Called after every step; returning false aborts the samples not finished yet (finish_reason abort).
using ProgressFn = std::function<bool(const Progress&)>;

struct EngineStats {
  int64_t steps = 0, prefill_tokens = 0, decode_tokens = 0, generated_tokens = 0;
  int64_t padding_tokens = 0;  // decoded after a sample stopped (static batching only)
  int64_t preemptions = 0, prefix_lookups = 0, prefix_hits = 0;
  double vision_s = 0;         // time in the vision tower (encode_prompt), once per request with pictures
  int64_t vision_patches = 0;  // patch rows the tower ran on
  // Buffer allocations made inside steps (workspace growth to a new batch-size bucket), and the steps that
  // made any: after warm-up both stay constant (the decode loop allocates nothing).
  int64_t step_allocs = 0, steps_with_allocs = 0;
  double elapsed_s = 0;
  // Of elapsed_s, the share spent on prefill tokens: each step's time divided between its prefill and
  // decode tokens in proportion to their counts (the matmuls, most of a step, cost the same per token).
  double prefill_s = 0;
  // Multi-turn: replies inserted, their tokens (prefilled), the most samples parked at once, and the time the
  // engine had nothing to step and waited for a reply (the tools' time not hidden by other samples' decoding).
  int64_t replies = 0, inserted_tokens = 0, parked_peak = 0;
  double reply_wait_s = 0;
};

class Engine {
 public:
  // decode (optional): token ids -> text, for result texts and stop strings.
  Engine(RolloutModel& model, const EngineConfig& config, DecodeFn decode = {});
  ~Engine();

  std::vector<RequestResult> generate(const std::vector<Request>& requests, const ProgressFn& progress = {},
                                      const MultiTurn& turns = {});
  // Serving (rollout/serving.h): runs requests as `feed` hands them over, admitted between steps into the
  // running batch, until the feed stops and nothing runs. stats() then counts the whole session.
  void serve(RequestFeed& feed);

  // Drops every prefix-cache entry (the model's weights changed: cached k/v are stale).
  void clear_prefix_cache();
  // Between generate() calls: returns the memory of the KV cache and of the step workspaces to the system
  // (KvCache::release_storage, Workspace::discard) and so forgets the prefix cache. Their addresses stay
  // reserved; the next generate() faults the pages back in as it writes them and allocates nothing. A
  // GRPO step calls it after its rollout, so that the training update does not hold the KV cache.
  void release_memory();
  const EngineStats& stats() const { return stats_; }  // of the last generate()
  const KvCache& kv_cache() const { return *kv_; }
  const KvBudget& kv_budget() const { return kv_budget_; }

 private:
  struct Run;
  void ensure_workspaces(int64_t tokens, bool scoring);
  // Vision models: request i's PromptVision and prefix-cache keys.
  void encode_pictures(Run& run, size_t i);
  void add_group(Run& run, size_t i);  // request i's prompt and samples, its prompt waiting to be admitted
  void check_fits_cache(const Request& r, size_t i) const;  // its samples fit the cache, else an error
  RequestResult take_result(Run& run, size_t i);            // request i's samples (unfinished ones aborted)
  // Serving: admits `feed`'s new requests and cancels; false when it stopped and nothing runs.
  bool serve_poll(Run& run, RequestFeed& feed);
  void serve_report(Run& run, RequestFeed& feed);   // new tokens, then the requests that ended
  void loop(Run& run, const ProgressFn& progress);  // steps until every sequence finished or aborted
  bool step(Run& run);  // false: nothing could be scheduled (every runnable sample waits on a parked one)
  // A step's phases: the model's inputs for the planned sequences (in step_ws_) and its logits rows [R, V];
  // a token drawn for each row's samples (run.jobs); the prompts' samples forked; each draw appended to its
  // sample, which stops or goes on; a static batch's padding ended once every sample stopped.
  struct StepInputs {
    ForwardBatch batch;
    float* logits = nullptr;  // [R, V]: the sampling rows, then the scored rows
    int64_t sampling_rows = 0;
  };
  StepInputs build_step_inputs(Run& run, std::span<const ScheduledSeq> plan);
  void draw_tokens(Run& run, std::span<const ScheduledSeq> plan, const float* logits);
  // Scored prompts: each scored row's next prompt token's log-prob (and alternatives) from its logits row
  // (`logits` [scored rows, V], the rows in plan order).
  void score_prompts(Run& run, std::span<const ScheduledSeq> plan, const float* logits);
  void fork_prompts(Run& run, std::span<const ScheduledSeq> plan);
  void append_draw(Run& run, Sequence& s, const SampledToken& draw);
  void end_static_batch(Run& run);
  // Inserts the replies that are ready (wait: at least one, blocking) and resumes their samples.
  void take_replies(Run& run, bool wait);
  // A sample's turn ended with a stop: true when the handler took it (the sample is parked).
  bool start_turn_work(Run& run, Sequence& s);
  void end_sample(Run& run, Sequence& s);  // the sample's result is complete

  RolloutModel& model_;
  EngineConfig config_;
  DecodeFn decode_;
  KvBudget kv_budget_;
  std::unique_ptr<KvCache> kv_;
  std::vector<Sampler> samplers_;  // one per thread
  Workspace step_ws_, model_ws_;
  int64_t ws_bucket_ = 0;  // tokens the workspaces are sized for
  bool ws_scoring_ = false;  // the step workspace has kMaxScoredRows more logits rows
  EngineStats stats_;
};

}  // namespace grpo::rollout
