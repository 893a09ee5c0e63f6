// The rollout engine's generate loop (see engine.h): schedule, pack the step, run the model, sample, check
// stops, fork prompts into their samples, park multi-turn samples and insert their replies, finish sequences.
#include "rollout/engine.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>

#include "core/checked.h"
#include "core/error.h"
#include "core/profiler.h"
#include "core/rng.h"
#include "core/threads.h"
#include "core/units.h"
#include "rollout/engine_run.h"

namespace grpo::rollout {

int64_t kv_blocks_for(int64_t sequences, int64_t tokens, int64_t block_size, const char* what) {
  GRPO_CHECK(sequences >= 0 && tokens >= 0 && block_size > 0, what, ": KV sizing needs sequences, tokens >= 0 and "
             "block_size > 0, got ", sequences, ", ", tokens, ", ", block_size);
  return checked_mul(sequences, tokens / block_size + (tokens % block_size != 0), what);
}

int64_t kv_blocks_for(std::span<const Request> requests, int64_t max_seqs, int64_t block_size, int64_t max_positions) {
  GRPO_CHECK(max_seqs >= 1 && block_size >= 1 && max_positions >= 1, "[rollout] KV sizing: max_seqs ", max_seqs,
             ", block_size ", block_size, " and max_positions ", max_positions, " must be >= 1");
  // (blocks one sample needs, samples of its request), largest need first
  std::vector<std::pair<int64_t, int64_t>> needs;
  int64_t running = max_seqs;
  for (const Request& r : requests) {
    const int64_t tokens = std::min(checked_add(static_cast<int64_t>(r.prompt.size()), r.max_new_tokens,
                                                "[rollout] KV sizing: prompt + max_new_tokens"),
                                    max_positions);
    needs.emplace_back(kv_blocks_for(1, tokens, block_size, "[rollout] KV sizing"), std::max<int64_t>(0, r.n));
    running = std::max<int64_t>(running, r.n);
  }
  std::sort(needs.begin(), needs.end(), std::greater<>());
  int64_t blocks = 0;
  for (const auto& [need, n] : needs) {
    const int64_t take = std::min(n, running);
    blocks = checked_add(blocks, checked_mul(take, need, "[rollout] KV sizing"), "[rollout] KV sizing");
    running -= take;
    if (running == 0) break;
  }
  return blocks;
}

std::string KvBudget::describe() const {
  char frac[32];
  std::snprintf(frac, sizeof frac, "%.2f", fraction);
  const std::string memory = available_bytes > 0 ? cat(frac, " x ", human_bytes(available_bytes),
                                                       base_is_plan ? " left by the rest of the run" : " available")
                                                 : cat(human_bytes(requested_bytes), " asked for");
  std::string s = cat("KV cache ", human_bytes(bytes), " (", blocks, " blocks of ", block_size, " tokens, ",
                      ops::kv_dtype_name(dtype), ") = ");
  if (max_blocks > 0) return s + cat("min(", memory, ", ", max_blocks, " blocks the work holds at once)");
  return s + memory;
}

Engine::Engine(RolloutModel& model, const EngineConfig& config, DecodeFn decode)
    : model_(model), config_(config), decode_(std::move(decode)) {
  GRPO_CHECK(config.block_size > 0, "[rollout] block_size must be > 0, got ", config.block_size);
  GRPO_CHECK(config.token_budget >= 1, "[rollout] token_budget must be >= 1, got ", config.token_budget);
  GRPO_CHECK(config.max_seqs >= 1, "[rollout] max_seqs must be >= 1, got ", config.max_seqs);
  GRPO_CHECK(config.kv_memory_bytes >= 0, "[rollout] kv_memory_bytes must be >= 0, got ", config.kv_memory_bytes);
  GRPO_CHECK(config.kv_memory_bytes > 0 || (config.kv_memory_fraction > 0 && config.kv_memory_fraction <= 1),
             "[rollout] kv_memory_fraction must be in (0, 1], got ", config.kv_memory_fraction);
  GRPO_CHECK(config.kv_max_blocks >= 0, "[rollout] kv_max_blocks must be >= 0, got ", config.kv_max_blocks);
  const KvCacheShape shape{model.num_layers(), model.num_kv_heads(), model.head_dim(), config.block_size,
                           config.kv_dtype};
  const int64_t base = config.kv_memory_bytes > 0 ? 0
                       : config.kv_base_bytes > 0 ? config.kv_base_bytes
                                                  : available_memory_bytes();
  kv_budget_ = kv_budget_for(config, shape, base);
  kv_budget_.base_is_plan = config.kv_memory_bytes == 0 && config.kv_base_bytes > 0;
  const int64_t blocks = kv_budget_.blocks;
  kv_ = std::make_unique<KvCache>(shape, blocks, config.prefix_cache);
  const int nt = std::max(1, num_threads());
  samplers_.reserve(nt);
  for (int i = 0; i < nt; ++i) samplers_.emplace_back(model.vocab_size());
}

Engine::~Engine() = default;

void Engine::clear_prefix_cache() { kv_->clear_prefix_cache(); }

void Engine::release_memory() {
  kv_->release_storage();
  step_ws_.discard();
  model_ws_.discard();
}

int64_t workspace_bucket(const EngineConfig& config, int64_t tokens) {
  int64_t bucket = 16;
  while (bucket < tokens) bucket *= 2;
  return std::min(bucket, config.token_budget);
}

int64_t step_workspace_bytes(const EngineConfig& config, int64_t bucket, int64_t vocab, int64_t max_positions,
                             int64_t scored_rows) {
  const int64_t S = std::min(bucket, config.max_seqs);
  const int64_t max_blocks = (max_positions + config.block_size - 1) / config.block_size;
  const int64_t ints = 4 * bucket + (S + 1) + S * max_blocks + S + 3 * bucket;  // + M-RoPE positions
  return ints * 4 + bucket * static_cast<int64_t>(sizeof(float*)) + (S + scored_rows) * (vocab + 1) * 4 + 10 * 64;
}

KvBudget kv_budget_for(const EngineConfig& config, const KvCacheShape& shape, int64_t available_bytes) {
  KvBudget kb;
  kb.dtype = config.kv_dtype;
  kb.block_size = config.block_size;
  kb.max_blocks = config.kv_max_blocks;
  if (config.kv_memory_bytes > 0) {
    kb.requested_bytes = config.kv_memory_bytes;
  } else {
    kb.available_bytes = available_bytes;
    kb.fraction = config.kv_memory_fraction;
    kb.requested_bytes = static_cast<int64_t>(config.kv_memory_fraction * static_cast<double>(available_bytes));
  }
  kb.blocks = KvCache::blocks_for_bytes(shape, kb.requested_bytes);
  if (kb.max_blocks > 0) kb.blocks = std::min(kb.blocks, kb.max_blocks);
  kb.blocks = std::min(kb.blocks, (int64_t{1} << 31) / config.block_size - 1);  // slot ids stay int32
  GRPO_CHECK(kb.blocks >= 1, "[rollout] a KV memory budget of ", kb.requested_bytes, " bytes holds no block of ",
             config.block_size, " tokens");
  kb.bytes = kb.blocks * KvCache::bytes_per_block(shape);
  return kb;
}

void Engine::ensure_workspaces(int64_t tokens, bool scoring) {
  const int64_t bucket = std::max(ws_bucket_, workspace_bucket(config_, tokens));
  if (bucket == ws_bucket_ && (ws_scoring_ || !scoring)) return;
  ws_scoring_ = ws_scoring_ || scoring;
  const int64_t S = std::min(bucket, config_.max_seqs), scored = ws_scoring_ ? kMaxScoredRows : 0;
  step_ws_.reserve(
      static_cast<size_t>(step_workspace_bytes(config_, bucket, model_.vocab_size(), model_.max_positions(), scored)),
      cat("the rollout step workspace (", bucket, " tokens, ", S, " sequences, ", scored,
          " scored prompt rows, logits)"));
  if (bucket > ws_bucket_)
    model_ws_.reserve(model_.workspace_bytes(bucket, S), cat("the rollout model workspace (", bucket, " tokens)"));
  ws_bucket_ = bucket;
}

void Engine::encode_pictures(Run& run, size_t i) {
  run.vision[i] = {};
  run.keys[i].clear();
  const Request& r = run.request(static_cast<int32_t>(i));
  if (!model_.has_vision()) {
    GRPO_CHECK(r.pictures.empty(), "[rollout] request ", i, ": ", r.pictures.size(),
               " pictures given but the model takes none");
    return;
  }
  PromptVision& pv = run.vision[i] = model_.encode_prompt(r.prompt, r.pictures, cat("request ", i));
  stats_.vision_s += pv.vision_seconds;
  stats_.vision_patches += pv.patches;
  if (r.pictures.empty()) return;
  // Image pads keyed by their picture's content and their index (negative: never a token id).
  std::vector<int32_t>& keys = run.keys[i];
  keys = r.prompt;
  for (size_t t = 0; t < keys.size(); ++t) {
    const int32_t k = pv.pad_index[t];
    if (k < 0) continue;
    uint64_t x = r.pictures[pv.pad_picture[k]]->hash ^ (static_cast<uint64_t>(k) * 0x9e3779b97f4a7c15ull);
    keys[t] = static_cast<int32_t>(static_cast<uint32_t>(splitmix64(x)) | 0x80000000u);
  }
}

void Engine::add_group(Run& run, size_t i) {
  const Request& r = run.request(static_cast<int32_t>(i));
  const int64_t max_blocks = (model_.max_positions() + config_.block_size - 1) / config_.block_size;
  encode_pictures(run, i);
  std::vector<Sequence>& group = run.groups[i];
  group.clear();
  group.reserve(1 + static_cast<size_t>(r.n));
  for (int32_t k = -1; k < r.n; ++k) {
    group.emplace_back(static_cast<int32_t>(i), k, r, &decode_, max_blocks);
    if (run.turns.handler && k >= 0) group.back().mask.reserve(r.max_new_tokens);
    if (!run.keys[i].empty()) group.back().prompt_keys = run.keys[i].data();
  }
  run.group_size[i] = r.n;
  run.samples_left[i] = r.n;
  run.live_samples += r.n;
  group.front().tokens.assign(r.prompt.begin(), r.prompt.end());
  run.scheduler.add(&group.front());
}

void Engine::check_fits_cache(const Request& r, size_t i) const {
  const int64_t bs = config_.block_size;
  const int64_t max_tokens =
      std::min<int64_t>(static_cast<int64_t>(r.prompt.size()) + r.max_new_tokens, model_.max_positions());
  const int64_t need = (max_tokens + bs - 1) / bs;
  GRPO_CHECK(need <= kv_->num_blocks(), "[rollout] request ", i, ": ", r.prompt.size(), " prompt tokens + ",
             r.max_new_tokens, " new tokens need up to ", need, " KV blocks of ", bs, " tokens, the cache has ",
             kv_->num_blocks(), " (", kv_->view().bytes_per_block() * kv_->num_blocks(),
             " bytes): give it more memory or lower max_new_tokens");
}

RequestResult Engine::take_result(Run& run, size_t i) {
  const Request& r = run.request(static_cast<int32_t>(i));
  std::vector<Sequence>& group = run.groups[i];
  Sequence& prompt = group.front();
  if (prompt.running || !prompt.finished) run.scheduler.finish(&prompt);  // aborted before its fork
  RequestResult result;
  result.samples.resize(r.n);
  result.prompt_logprobs = std::move(prompt.prompt_logprobs);
  result.prompt_top_logprobs = std::move(prompt.prompt_top);
  for (int32_t k = 0; k < r.n; ++k) {
    Sequence& s = group[1 + k];
    SampleResult& out = result.samples[k];
    const bool complete = s.finished || s.result_len >= 0;
    if (!s.finished) {  // aborted (or static-batch padding cut short by the abort)
      run.scheduler.finish(&s);
      if (!complete && s.generated() > 0) s.text.flush(std::span(s.tokens).subspan(s.prompt_len));
    }
    const int64_t n = s.result_len >= 0 ? s.result_len : s.generated();
    if (n > 0) out.tokens.assign(s.tokens.begin() + s.prompt_len, s.tokens.begin() + s.prompt_len + n);
    out.logprobs = std::move(s.logprobs);
    out.top_logprobs = std::move(s.top);
    out.text = s.text.take_text();
    out.finish_reason = complete ? s.finish_reason : FinishReason::Abort;
    if (run.turns.handler) {
      out.response_mask = std::move(s.mask);
      out.response_mask.resize(out.tokens.size(), 1);  // (a sample aborted before its first token: empty)
      out.turns = std::move(s.turns);
    }
  }
  return result;
}

std::vector<RequestResult> Engine::generate(const std::vector<Request>& requests, const ProgressFn& progress,
                                           const MultiTurn& turns) {
  const int64_t V = model_.vocab_size(), max_pos = model_.max_positions();
  if (turns.handler) {
    GRPO_CHECK(config_.continuous_batching, "[rollout] multi-turn generation needs continuous batching");
    GRPO_CHECK(static_cast<bool>(decode_), "[rollout] multi-turn generation needs a detokenizer (the handler reads "
               "each turn's text)");
  }
  size_t total = 0;
  int32_t max_n = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const Request& r = requests[i];
    validate_request(r, i, V, max_pos, static_cast<bool>(decode_));
    check_fits_cache(r, i);
    total += 1 + static_cast<size_t>(r.n);
    max_n = std::max(max_n, r.n);
  }
  stats_ = {};
  const KvCache::Stats kv_before = kv_->stats();
  Run run(*kv_, config_, total, turns);
  run.resize(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) run.requests[i] = &requests[i];
  for (size_t i = 0; i < requests.size(); ++i) add_group(run, i);
  run.jobs.reserve(total);
  run.fork_buf.reserve(max_n);
  run.ready_buf.reserve(total);

  try {
    loop(run, progress);
  } catch (...) {  // leave the cache whole for the next call
    for (std::vector<Sequence>& group : run.groups)
      for (Sequence& s : group) run.scheduler.finish(&s);
    throw;
  }
  stats_.preemptions = run.scheduler.preemptions();
  stats_.prefix_lookups = kv_->stats().lookups - kv_before.lookups;
  stats_.prefix_hits = kv_->stats().hits - kv_before.hits;

  std::vector<RequestResult> results(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) results[i] = take_result(run, i);
  return results;
}

void Engine::loop(Run& run, const ProgressFn& progress) {
  while (!run.scheduler.idle() && !run.aborted) {
    if (!run.scheduler.parked().empty()) {
      take_replies(run, false);
      if (run.scheduler.idle()) break;  // the replies ended the last samples
    }
    const uint64_t allocs = Buffer::alloc_count();
    const int64_t prefill_before = stats_.prefill_tokens, decode_before = stats_.decode_tokens;
    const auto step_start = std::chrono::steady_clock::now();
    if (!step(run)) {  // every sample left waits for a reply (or for blocks a parked one holds)
      take_replies(run, true);
      stats_.reply_wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count();
      continue;
    }
    const double step_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count();
    const int64_t prefilled = stats_.prefill_tokens - prefill_before, decoded = stats_.decode_tokens - decode_before;
    if (prefilled > 0) stats_.prefill_s += step_s * static_cast<double>(prefilled) / static_cast<double>(prefilled + decoded);
    const int64_t made = static_cast<int64_t>(Buffer::alloc_count() - allocs);
    stats_.step_allocs += made;
    stats_.steps_with_allocs += made > 0;
    stats_.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - run.start).count();
    if (progress) {
      const Progress p{run.requests_done, static_cast<int64_t>(run.requests.size()), stats_.generated_tokens,
                       stats_.elapsed_s, stats_.elapsed_s > 0 ? stats_.generated_tokens / stats_.elapsed_s : 0};
      run.aborted = !progress(p);
    }
  }
}

void Engine::end_sample(Run& run, Sequence& s) {
  --run.live_samples;
  if (--run.samples_left[s.request] == 0) ++run.requests_done;
}

bool Engine::start_turn_work(Run& run, Sequence& s) {
  ++s.turns.assistant_turns;
  const MultiTurn& mt = run.turns;
  const Request& req = run.request(s.request);
  const bool budget_left = s.generated() < req.max_new_tokens &&
                           static_cast<int64_t>(s.tokens.size()) < model_.max_positions();
  if (s.finish_reason != FinishReason::Stop || !budget_left || (mt.max_assistant_turns > 0 && s.turns.assistant_turns >= mt.max_assistant_turns) ||
      (mt.max_user_turns > 0 && s.turns.user_turns >= mt.max_user_turns))
    return false;
  const std::span<const int32_t> gen = std::span<const int32_t>(s.tokens).subspan(s.prompt_len);
  const TurnEnd turn{s.request, s.sample, s.turns.assistant_turns, gen.subspan(s.turn_begin),
                     std::string_view(s.text.text()).substr(s.turn_text_begin)};
  const auto asked = std::chrono::steady_clock::now();  // the wait starts when the reply is asked for
  std::future<TurnReply> work = mt.handler->on_turn_end(turn);
  if (!work.valid()) return false;
  s.pending = std::move(work);
  s.parked_at = asked;
  run.scheduler.park(&s);
  stats_.parked_peak = std::max<int64_t>(stats_.parked_peak, static_cast<int64_t>(run.scheduler.parked().size()));
  return true;
}

void Engine::take_replies(Run& run, bool wait) {
  const std::span<Sequence* const> parked = run.scheduler.parked();
  if (wait) {  // the oldest parked sample first: its reply was asked for earliest
    GRPO_CHECK(!parked.empty(), "[rollout] the scheduler could not place any sequence (", kv_->available_blocks(),
               " of ", kv_->num_blocks(), " blocks available)");
    GRPO_PROFILE("rollout_reply_wait");
    parked.front()->pending.wait();
  }
  run.ready_buf.clear();
  for (Sequence* s : parked)
    if (s->pending.wait_for(std::chrono::seconds(0)) == std::future_status::ready) run.ready_buf.push_back(s);
  const int64_t V = model_.vocab_size(), max_pos = model_.max_positions();
  for (Sequence* sp : run.ready_buf) {
    Sequence& s = *sp;
    const Request& req = run.request(s.request);
    TurnReply reply = s.pending.get();
    s.turns.parked_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - s.parked_at).count();
    s.turns.tool_calls += reply.tool_calls;
    for (const std::string& kind : reply.failures) ++s.turns.failures[kind];
    s.turns.tool_seconds += reply.tool_seconds;
    for (const int32_t t : reply.tokens)
      GRPO_CHECK(t >= 0 && t < V, "[rollout] request ", s.request, " sample ", s.sample, ": the turn handler's reply "
                 "has token id ", t, ", outside the vocabulary [0, ", V, ")");
    const int64_t n = static_cast<int64_t>(reply.tokens.size());
    // verl's budget: a reply that would fill the response is not inserted; the response ends, cut by the length.
    const bool fits = n > 0 && s.generated() + n < req.max_new_tokens &&
                      static_cast<int64_t>(s.tokens.size()) + n < max_pos;
    if (!fits) {
      if (n > 0) s.finish_reason = FinishReason::Length;
      end_sample(run, s);
      s.finished = true;
      run.scheduler.finish(&s);
      continue;
    }
    s.tokens.insert(s.tokens.end(), reply.tokens.begin(), reply.tokens.end());
    s.logprobs.insert(s.logprobs.end(), n, 0.0f);
    s.top.resize(s.top.size() + static_cast<size_t>(n) * req.top_logprobs);
    s.mask.insert(s.mask.end(), n, uint8_t{0});
    s.text.insert(decode_(reply.tokens), static_cast<size_t>(s.generated()));
    s.turn_begin = s.generated();
    s.turn_text_begin = s.text.text().size();
    ++s.turns.user_turns;
    s.turns.inserted_tokens += n;
    ++stats_.replies;
    stats_.inserted_tokens += n;
    run.scheduler.resume(&s);
  }
}

bool Engine::step(Run& run) {
  GRPO_PROFILE("rollout_step");
  const std::span<const ScheduledSeq> plan = run.scheduler.schedule();
  if (plan.empty() && !run.scheduler.parked().empty()) return false;
  GRPO_CHECK(!plan.empty(), "[rollout] the scheduler could not place any sequence (", kv_->available_blocks(),
             " of ", kv_->num_blocks(), " blocks available)");
  const StepInputs in = build_step_inputs(run, plan);
  model_ws_.reset();
  {
    GRPO_PROFILE("rollout_forward");
    model_.forward(in.batch, kv_->view(), in.logits, model_ws_);
  }
  if (in.batch.R > in.sampling_rows) score_prompts(run, plan, in.logits + in.sampling_rows * model_.vocab_size());
  run.scheduler.commit();
  ++stats_.steps;
  draw_tokens(run, plan, in.logits);
  fork_prompts(run, plan);
  for (Run::SampleJob& job : run.jobs) append_draw(run, *job.seq, job.out);
  if (!config_.continuous_batching && run.live_samples == 0) end_static_batch(run);
  return true;
}

Engine::StepInputs Engine::build_step_inputs(Run& run, std::span<const ScheduledSeq> plan) {
  const int64_t bs = config_.block_size, V = model_.vocab_size();
  int64_t T = 0, R = 0, scored = 0, nblocks = 0;
  for (const ScheduledSeq& p : plan) {
    T += p.num_tokens;
    R += p.wants_logits;
    scored += p.scored_rows();
    nblocks += static_cast<int64_t>(p.seq->blocks.size());
  }
  const int64_t S = static_cast<int64_t>(plan.size()), sampling_rows = R;
  R += scored;
  ensure_workspaces(T, scored > 0);
  step_ws_.reset();
  int32_t* tokens = step_ws_.take<int32_t>(T, "step tokens");        // [T]
  int32_t* positions = step_ws_.take<int32_t>(T, "step positions");  // [T]
  int32_t* seq_index = step_ws_.take<int32_t>(T, "step seq_index");  // [T]
  int32_t* slots = step_ws_.take<int32_t>(T, "step slots");          // [T]
  int32_t* indptr = step_ws_.take<int32_t>(S + 1, "step block_table_indptr");  // [S+1]
  int32_t* table = step_ws_.take<int32_t>(nblocks, "step block_table");       // [sum blocks]
  int32_t* rows = step_ws_.take<int32_t>(R, "step logits_rows");              // [R]
  float* logits = step_ws_.take<float>(R * V, "step logits");                 // [R, V]
  bool pictures = false;  // any planned sequence from a prompt with pictures: M-RoPE positions and features
  for (const ScheduledSeq& p : plan) pictures = pictures || !run.request(p.seq->request).pictures.empty();
  int32_t* mrope = pictures ? step_ws_.take<int32_t>(3 * T, "step mrope positions") : nullptr;  // [3, T]
  const float** features = pictures ? step_ws_.take<const float*>(T, "step features") : nullptr;  // [T]
  int64_t t = 0, r = 0, scored_row = sampling_rows;
  indptr[0] = 0;
  for (int64_t s = 0; s < S; ++s) {
    const Sequence& seq = *plan[s].seq;
    for (int64_t j = 0; j < plan[s].num_tokens; ++j, ++t) {
      const int64_t pos = seq.num_computed + j;
      tokens[t] = seq.tokens[pos];
      positions[t] = static_cast<int32_t>(pos);
      seq_index[t] = static_cast<int32_t>(s);
      slots[t] = static_cast<int32_t>(seq.blocks[pos / bs] * bs + pos % bs);
      if (!pictures) continue;
      const PromptVision& pv = run.vision[seq.request];
      const bool in_prompt = pos < seq.prompt_len && !pv.positions.empty();
      for (int64_t a = 0; a < 3; ++a)
        mrope[a * T + t] = in_prompt ? pv.positions[a * seq.prompt_len + pos] : static_cast<int32_t>(pos + pv.rope_delta);
      const int32_t pad = in_prompt ? pv.pad_index[pos] : -1;
      features[t] = pad >= 0 ? pv.features.data() + pad * pv.feature_width : nullptr;
    }
    std::copy(seq.blocks.begin(), seq.blocks.end(), table + indptr[s]);
    indptr[s + 1] = indptr[s] + static_cast<int32_t>(seq.blocks.size());
    if (plan[s].wants_logits) rows[r++] = static_cast<int32_t>(t - 1);
    const int64_t chunk_start = t - plan[s].num_tokens;
    for (int64_t j = 0; j < plan[s].scored_rows(); ++j) rows[scored_row++] = static_cast<int32_t>(chunk_start + j);
    const bool decode = plan[s].num_tokens == 1 && !seq.is_prompt() && seq.generated() > 0;
    (decode ? stats_.decode_tokens : stats_.prefill_tokens) += plan[s].num_tokens;
  }
  return {ForwardBatch{tokens, positions, seq_index, slots, T, S, indptr, table, rows, R, mrope, features}, logits,
          sampling_rows};
}

void Engine::draw_tokens(Run& run, std::span<const ScheduledSeq> plan, const float* logits) {
  const int64_t V = model_.vocab_size();
  // A prompt's row serves its n samples, each with its own RNG.
  run.jobs.clear();
  int64_t r = 0;
  for (const ScheduledSeq& p : plan) {
    if (!p.wants_logits) continue;
    Sequence* seq = p.seq;
    if (seq->is_prompt()) {
      for (int32_t k = 0; k < run.group_size[seq->request]; ++k) run.jobs.push_back({r, seq + 1 + k, {}});
    } else {
      run.jobs.push_back({r, seq, {}});
    }
    ++r;
  }
  GRPO_PROFILE("rollout_sample");
  const int nt = std::max(1, std::min(num_threads(), static_cast<int>(samplers_.size())));
  const int64_t njobs = static_cast<int64_t>(run.jobs.size());
  std::exception_ptr error;  // an exception may not leave the parallel region: the first is rethrown
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) if (njobs > 1 && njobs * V > (1 << 16))
  for (int64_t j = 0; j < njobs; ++j) {
    Run::SampleJob& job = run.jobs[j];
    const Request& req = run.request(job.seq->request);
    try {
      job.out =
          samplers_[omp_get_thread_num()].sample(logits + job.row * V, req.sampling, job.seq->rng, req.top_logprobs);
    } catch (...) {
#pragma omp critical(grpo_rollout_sample_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

void Engine::score_prompts(Run& run, std::span<const ScheduledSeq> plan, const float* logits) {
  GRPO_PROFILE("rollout_score_prompt");
  const int64_t V = model_.vocab_size();
  const int nt = std::max(1, std::min(num_threads(), static_cast<int>(samplers_.size())));
  int64_t row = 0;
  for (const ScheduledSeq& p : plan) {
    Sequence& seq = *p.seq;
    const Request& req = run.request(seq.request);
    const float temperature = req.sampling.temperature == 0 ? 1.0f : req.sampling.temperature;
    const int64_t rows = p.scored_rows(), n = req.top_logprobs;
#pragma omp parallel for schedule(static) num_threads(nt) if (rows > 1)
    for (int64_t j = 0; j < rows; ++j) {
      const int64_t pos = seq.num_computed + j;  // this row scores prompt token pos + 1
      const SampledToken s = samplers_[omp_get_thread_num()].score(logits + (row + j) * V, seq.tokens[pos + 1],
                                                                   temperature, static_cast<int32_t>(n));
      seq.prompt_logprobs[pos] = s.logprob;
      std::copy(s.top.begin(), s.top.begin() + s.num_top, seq.prompt_top.begin() + pos * n);
    }
    row += rows;
  }
}

// Forks first (plan order): a prompt's samples take its tokens and share its blocks.
void Engine::fork_prompts(Run& run, std::span<const ScheduledSeq> plan) {
  for (const ScheduledSeq& p : plan) {
    Sequence* seq = p.seq;
    if (!p.wants_logits || !seq->is_prompt()) continue;
    run.fork_buf.clear();
    for (int32_t k = 0; k < run.group_size[seq->request]; ++k) {
      Sequence* sample = seq + 1 + k;
      sample->tokens.assign(seq->tokens.begin(), seq->tokens.end());
      run.fork_buf.push_back(sample);
    }
    run.scheduler.fork(seq, run.fork_buf);
    seq->finished = true;
  }
}

// The draw appended to its sample and checked for a stop: the sample ends, parks for its turn's reply, or
// (static batch) keeps decoding as padding.
void Engine::append_draw(Run& run, Sequence& s, const SampledToken& draw) {
  const Request& req = run.request(s.request);
  s.tokens.push_back(draw.token);
  if (s.result_len >= 0) {  // static-batch padding: decoded, discarded
    ++stats_.padding_tokens;
    if (s.generated() >= req.max_new_tokens || static_cast<int64_t>(s.tokens.size()) >= model_.max_positions()) {
      s.finished = true;
      run.scheduler.finish(&s);
    }
    return;
  }
  s.logprobs.push_back(draw.logprob);
  s.top.insert(s.top.end(), draw.top.begin(), draw.top.begin() + draw.num_top);
  s.top.resize(s.top.size() + (req.top_logprobs - draw.num_top));  // (a vocabulary smaller than top_logprobs)
  if (run.turns.handler) s.mask.push_back(1);
  ++stats_.generated_tokens;
  const std::span<const int32_t> gen = std::span<const int32_t>(s.tokens).subspan(s.prompt_len);
  const bool stop_id =
      std::find(req.stop_token_ids.begin(), req.stop_token_ids.end(), draw.token) != req.stop_token_ids.end();
  if (stop_id) {
    s.text.flush(gen.first(gen.size() - 1));
    s.finish_reason = FinishReason::Stop;
  } else if (s.text.push(gen)) {
    s.finish_reason = FinishReason::Stop;
  } else if (!req.stop_lengths.empty() && s.generated() >= req.stop_lengths[s.sample]) {  // its drawn end
    s.text.flush(gen);
    s.finish_reason = FinishReason::Stop;
  } else if (s.generated() >= req.max_new_tokens || static_cast<int64_t>(s.tokens.size()) >= model_.max_positions()) {
    s.finish_reason = s.text.flush(gen) ? FinishReason::Stop : FinishReason::Length;
  } else {
    return;
  }
  if (run.turns.handler && start_turn_work(run, s)) return;
  end_sample(run, s);
  const bool length =
      s.generated() >= req.max_new_tokens || static_cast<int64_t>(s.tokens.size()) >= model_.max_positions();
  if (config_.continuous_batching || length) {
    s.finished = true;
    run.scheduler.finish(&s);
  } else {
    s.result_len = s.generated();  // keeps decoding as padding
  }
}

// A static batch whose longest sample has stopped: its padding ends.
void Engine::end_static_batch(Run& run) {
  for (std::vector<Sequence>& group : run.groups)
    for (Sequence& s : group)
      if (s.result_len >= 0 && !s.finished) {
        s.finished = true;
        run.scheduler.finish(&s);
      }
}

}  // namespace grpo::rollout
