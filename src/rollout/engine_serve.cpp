// Engine::serve (see engine.h, serving.h): the generate loop over a request feed. Requests take free slots
// of the Run (a slot's group of sequences lives until the request ends), join the scheduler's waiting queue
// between steps and run in the same steps as the others; a request's samples are built and drawn exactly as
// in generate(), so its tokens are the same whatever else runs.
#include <chrono>
#include <exception>

#include "core/error.h"
#include "rollout/engine_run.h"

namespace grpo::rollout {

void Engine::serve(RequestFeed& feed) {
  GRPO_CHECK(config_.continuous_batching, "[rollout] serving needs continuous batching");
  stats_ = {};
  Run run(*kv_, config_, 0, {});
  const auto start = std::chrono::steady_clock::now();
  while (serve_poll(run, feed)) {
    if (run.scheduler.idle()) continue;
    try {
      step(run);
    } catch (const std::exception& e) {  // every admitted request fails with the error; the cache stays whole
      for (size_t slot = 0; slot < run.requests.size(); ++slot) {
        if (!run.requests[slot]) continue;
        for (Sequence& s : run.groups[slot]) run.scheduler.finish(&s);
        run.live_samples -= run.samples_left[slot];
        run.samples_left[slot] = 0;
        const uint64_t ticket = run.tickets[slot];
        run.release_slot(slot);
        feed.on_done(ticket, {}, e.what());
      }
      continue;
    }
    stats_.preemptions = run.scheduler.preemptions();
    stats_.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    serve_report(run, feed);
  }
}

bool Engine::serve_poll(Run& run, RequestFeed& feed) {
  run.admit_buf.clear();
  run.cancel_buf.clear();
  const bool idle = run.scheduler.idle();
  const ServeState state{static_cast<int64_t>(run.requests.size() - run.free_slots.size()),
                         kv_->num_blocks() - kv_->available_blocks(),
                         kv_->num_blocks(),
                         run.scheduler.preemptions(),
                         stats_.generated_tokens,
                         stats_.steps};
  const bool open = feed.poll(run.admit_buf, run.cancel_buf, idle, state);
  for (const Admission& a : run.admit_buf) {
    size_t slot = run.requests.size();
    if (!run.free_slots.empty()) {
      slot = static_cast<size_t>(run.free_slots.back());
      run.free_slots.pop_back();
    } else {
      run.resize(slot + 1);
    }
    try {
      validate_request(*a.request, slot, model_.vocab_size(), model_.max_positions(), static_cast<bool>(decode_));
      check_fits_cache(*a.request, slot);
      run.requests[slot] = a.request;
      run.tickets[slot] = a.ticket;
      run.reported[slot].assign(static_cast<size_t>(a.request->n), 0);
      add_group(run, slot);  // the prompt joins the scheduler last, once nothing can throw
    } catch (const std::exception& e) {
      run.release_slot(slot);
      feed.on_done(a.ticket, {}, e.what());
    }
  }
  for (const uint64_t ticket : run.cancel_buf) {
    for (size_t slot = 0; slot < run.requests.size(); ++slot) {
      if (!run.requests[slot] || run.tickets[slot] != ticket) continue;
      run.live_samples -= run.samples_left[slot];
      run.samples_left[slot] = 0;
      RequestResult result = take_result(run, slot);  // releases the blocks of its unfinished sequences
      run.release_slot(slot);
      feed.on_done(ticket, std::move(result), "");
      break;
    }
  }
  return open || !run.scheduler.idle();
}

void Engine::serve_report(Run& run, RequestFeed& feed) {
  for (size_t slot = 0; slot < run.requests.size(); ++slot) {
    if (!run.requests[slot]) continue;
    const std::vector<Sequence>& group = run.groups[slot];
    std::vector<int64_t>& reported = run.reported[slot];
    for (size_t k = 0; k < reported.size(); ++k) {
      const Sequence& s = group[1 + k];
      const int64_t generated = s.generated();
      if (generated <= reported[k]) continue;
      const std::span<const int32_t> tokens = std::span<const int32_t>(s.tokens).subspan(s.prompt_len);
      feed.on_tokens(run.tickets[slot], static_cast<int32_t>(k),
                     {tokens, s.logprobs, s.top, static_cast<size_t>(generated - reported[k]), s.text.text()});
      reported[k] = generated;
    }
    if (run.samples_left[slot] > 0) continue;
    RequestResult result = take_result(run, slot);
    const uint64_t ticket = run.tickets[slot];
    run.release_slot(slot);
    feed.on_done(ticket, std::move(result), "");
  }
}

}  // namespace grpo::rollout
