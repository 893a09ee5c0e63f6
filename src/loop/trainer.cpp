// The GRPO loop (see trainer.h).
#include "loop/trainer.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <cstdio>
#include <numeric>

#include "core/checked.h"
#include "core/clock.h"
#include "core/error_context.h"
#include "core/files.h"
#include "core/profiler.h"
#include "core/rng.h"
#include "loop/distributed.h"
#include "loop/rank_model_files.h"
#include "config/reward_setup.h"
#include "plan/memory_plan.h"
#include "report/metrics.h"
#include "report/report.h"
#include "loop/run_folder.h"
#include "loop/run_setup.h"
#include "config/part_options.h"

namespace grpo {

namespace {

// Keeps the lines of metrics.jsonl up to `step` (resume: the run continues from its checkpoint).
void truncate_metrics(const std::string& path, int64_t step) {
  if (!file_exists(path)) return;
  std::string kept;
  for (const nlohmann::json& j : read_metrics(path))
    if (j.value("step", int64_t{0}) <= step) kept += j.dump() + "\n";
  write_file_atomic(path, kept);
}

}  // namespace

uint64_t rollout_request_id(int64_t step, int64_t gen_batch, int64_t request, int64_t gen_batches_per_step,
                            int64_t requests_per_batch) {
  return (static_cast<uint64_t>(step - 1) * static_cast<uint64_t>(gen_batches_per_step) + static_cast<uint64_t>(gen_batch)) *
             static_cast<uint64_t>(requests_per_batch) +
         static_cast<uint64_t>(request);
}

GrpoTrainer::GrpoTrainer(const Config& config, const TrainOptions& opt)
    : cfg_(config),
      opt_(opt),
      comm_(comm::world()),
      console_(comm_.rank() == 0),
      expected_response_tokens_(config.data.max_response_length) {
  RunStartOptions start;
  start.resume_dir = opt.resume_dir;
  start.overwrite = opt.overwrite;
  start.quiet = opt.quiet;
  start.before_weights = [this](Session& s) { s.kv_base_bytes = check_memory_plan(s); };
  RunSetup run = open_run(cfg_, TrainingKind::Grpo, start);
  opt_.quiet = run.quiet;
  run_dir_ = run.run_dir();
  s_ = std::move(run.session);
  {
    ErrorContext what("setting up the GRPO run");
    build_actor();
    build_reference();
    build_rewards_and_schedule();
  }
  start_run(run, cfg_, TrainingKind::Grpo, [&] {
    if (!run.folder.resume_checkpoint.empty()) resume_from(run.folder.resume_checkpoint);
  });
  logger_ = std::move(run.logger);
  if (console_ && comm_.size() > 1 && !opt_.quiet)
    std::fprintf(
        stderr, "[train] %d ranks on %s (%s reduce, %s%s)\n", comm_.size(), comm_.backend().c_str(),
        comm::wire_name(cfg_.actor_rollout_ref.actor.fsdp_config.mixed_precision.reduce_dtype).data(),
        cfg_.actor_rollout_ref.actor.fsdp_config.overlap_comm ? "overlapped with the backward" : "after the backward",
        cfg_.actor_rollout_ref.actor.fsdp_config.reshard_after_forward ? ", ZeRO-3" : ", ZeRO-2");
}

int64_t GrpoTrainer::check_memory_plan(const Session& s) const {
  // Once the data is read and before the weights load: a run that cannot fit stops here. The KV cache gets
  // its fraction of what the plan leaves it (run anyway though it does not fit: of MemAvailable then).
  const MemoryPlan p = plan_memory(memory_plan_inputs(s.config, s.model_config, s.train, s.val, comm_.size()));
  if (console_) std::fprintf(stderr, "%s\n", memory_log_line(p).c_str());
  GRPO_CHECK(p.fits() || opt_.ignore_memory_plan,
             "[memory] the run does not fit this machine's memory "
             "(grpo train --ignore-memory-plan runs it anyway):\n",
             explain_memory_plan(p));
  return p.fits() ? p.kv_base_bytes : 0;
}

void GrpoTrainer::build_actor() {
  const int64_t N = static_cast<int64_t>(s_->train.examples.size()), B = cfg_.data.train_batch_size;
  GRPO_CHECK(N >= B, "[data] ", data_files_text(cfg_.data.train_files), " (data.train_files) has ", N, " prompts",
             s_->train.filtered > 0 ? cat(" left after ", s_->train.filtered, " longer than data.max_prompt_length = ",
                                          cfg_.data.max_prompt_length, " tokens were filtered out")
                                    : std::string(),
             ", fewer than data.train_batch_size = ", B,
             "; lower data.train_batch_size (and actor_rollout_ref.actor.ppo_mini_batch_size) or add prompts");
  const ActorConfig& ac = cfg_.actor_rollout_ref.actor;
  actor_ = std::make_unique<train::Actor>(*s_->weights, grpo_decoder_options(cfg_), actor_micro_batching(cfg_),
                                          grpo_adamw_config(cfg_), &comm_, data_parallel_config(cfg_),
                                          ac.freeze_vision_tower || s_->lora, s_->lora.get());
  // verl's losses that ignore loss_agg_mode: said once
  const train::PgLossMode mode = ac.policy_loss.loss_mode;
  const train::LossAggMode agg = loss_agg_mode(cfg_);
  if (console_ && !opt_.quiet && train::effective_loss_agg_mode(mode, agg) != agg)
    std::fprintf(stderr,
                 "[train] policy_loss.loss_mode %s aggregates its policy-gradient term %s whatever "
                 "loss_agg_mode says (%s), as verl does\n",
                 train::pg_loss_mode_name(mode).data(),
                 mode == train::PgLossMode::GeoMean ? "as the mean over sequences" : "seq-mean-token-mean",
                 train::loss_agg_mode_name(agg).data());
}

void GrpoTrainer::build_reference() {
  const ActorConfig& ac = cfg_.actor_rollout_ref.actor;
  const bool needs_reference = (ac.use_kl_loss && ac.kl_loss_coef != 0) || cfg_.algorithm.use_kl_in_reward;
  if (needs_reference && s_->lora) {
    // LoRA: the reference policy is the frozen base, the actor's own weights without the adapters.
    ref_decoder_ = std::make_unique<Decoder>(*s_->weights, grpo_decoder_options(cfg_));
  } else if (needs_reference) {
    ErrorContext loading("loading the reference model ", cfg_.actor_rollout_ref.model.path);
    ref_weights_ = ModelWeights::load(cfg_.actor_rollout_ref.model.path);
    ref_decoder_ = std::make_unique<Decoder>(*ref_weights_, grpo_decoder_options(cfg_));
  }
  ref_micro_batching_ = ref_micro_batching(cfg_);
}

void GrpoTrainer::build_rewards_and_schedule() {
  const int64_t N = static_cast<int64_t>(s_->train.examples.size()), B = cfg_.data.train_batch_size;
  rewards_ = make_rewards(run_reward_functions(cfg_.reward, data_sources_of({&s_->train, &s_->val}),
                                               cat(data_files_text(cfg_.data.train_files), " (data.train_files) and data.val_files")));
  total_steps_ = total_training_steps(cfg_, N);
  steps_per_epoch_ = std::max<int64_t>(1, N / B);
  max_gen_batches_ = max_num_gen_batches_per_step(cfg_, N);
  const int64_t requests_per_batch =
      checked_mul(B,
                  (cfg_.actor_rollout_ref.rollout.share_group_prompt ? 1 : cfg_.actor_rollout_ref.rollout.n) +
                      (cfg_.algorithm.adv_estimator == train::AdvEstimator::Remax ? 1 : 0),
                  "[config] rollout requests per generation batch");
  checked_mul(checked_mul(total_steps_, max_gen_batches_, "[config] generation batches of the run"), requests_per_batch,
              "[config] rollout requests of the run");  // so that request ids cannot wrap
}

void GrpoTrainer::resume_from(const std::string& checkpoint) {
  ErrorContext loading("loading the checkpoint ", checkpoint);
  int64_t optimizer_steps = 0;
  if (s_->lora) {  // the adapters' moments, whole on every rank (small); each keeps its shard
    std::vector<float> m(actor_->trained_numel()), v(m.size());
    state_ = load_run_lora_checkpoint(checkpoint, *s_->lora, m.data(), v.data(), m.size(), &optimizer_steps);
    actor_->load_moments(m.data(), v.data(), optimizer_steps);
  } else {  // each rank reads the moments of its own range, whatever the ranks that saved them
    const train::Actor::MomentRange r = actor_->moment_range();
    std::vector<float> m(r.hi - r.lo), v(m.size());
    state_ = load_run_checkpoint_range(checkpoint, *s_->weights, r.lo, r.hi, actor_->trained_numel(), m.data(),
                                       v.data(), &optimizer_steps);
    actor_->load_moment_range(m.data(), v.data(), optimizer_steps);
  }
  s_->engine->clear_prefix_cache();
  if (console_) {
    truncate_metrics(run_dir_ + "/metrics.jsonl", state_.global_step);
    std::fprintf(stderr, "[train] resumed %s at step %lld of %lld\n", checkpoint.c_str(),
                 static_cast<long long>(state_.global_step), static_cast<long long>(total_steps_));
  }
}

std::string GrpoTrainer::save_checkpoint() {
  const std::string& base = cfg_.actor_rollout_ref.model.path;
  const int64_t keep = cfg_.trainer.max_actor_ckpt_to_keep;
  std::string dir;
  if (comm_.size() > 1 && !s_->lora) {  // every rank writes its own files, nothing gathered
    ShardedCheckpoint ck =
        stage_rank_model_files(checkpoint_stage_dir(run_dir_, state_.global_step), *s_->weights, *actor_, comm_);
    ck.trained_numel = actor_->trained_numel();
    ck.steps = actor_->optimizer().steps();
    const train::Actor::MomentRange r = actor_->moment_range();
    const nlohmann::json mine =
        write_flat_shard(moment_shards(), ck.stage_dir, comm_.rank(), {r.lo, r.hi, {r.m, r.v}}, ck.trained_numel);
    for (const std::string& entry : comm_.all_gather_bytes(mine.dump()))
      ck.moments.push_back(nlohmann::json::parse(entry));
    if (console_) dir = save_run_checkpoint(run_dir_, s_->weights->config(), ck, state_, base, keep);
  } else {  // one process, or LoRA (the adapters' moments are small): rank 0 writes them whole
    actor_->with_whole_weights([&] {
      const train::Actor::FullMoments full = actor_->gather_for_checkpoint();
      const OptimizerMoments moments{full.m, full.v, full.numel, actor_->optimizer().steps()};
      if (console_)
        dir = s_->lora ? save_run_lora_checkpoint(run_dir_, *s_->lora, moments, state_, base, base, keep)
                       : save_run_checkpoint(run_dir_, *s_->weights, moments, state_, DType::F32, base, keep);
    });
  }
  comm_.barrier();
  return dir;
}

GrpoTrainer::~GrpoTrainer() = default;

void GrpoTrainer::next_prompts(std::vector<const Example*>* out) {
  const int64_t B = cfg_.data.train_batch_size, N = s_->train.examples.size();
  auto make_order = [&] {
    order_.resize(N);
    std::iota(order_.begin(), order_.end(), 0);
    if (cfg_.data.shuffle) {
      Rng rng({static_cast<uint64_t>(cfg_.trainer.seed), static_cast<uint64_t>(state_.epoch), 0x5eedull});
      for (int64_t i = N - 1; i > 0; --i) std::swap(order_[i], order_[rng.below(i + 1)]);
    }
  };
  if (static_cast<int64_t>(order_.size()) != N) make_order();
  if (state_.epoch_position + B > N) {
    ++state_.epoch;
    state_.epoch_position = 0;
    make_order();
  }
  out->clear();
  for (int64_t i = 0; i < B; ++i) out->push_back(&s_->train.examples[order_[state_.epoch_position + i]]);
  state_.epoch_position += B;
}

EvalOptions validation_options(const Session& s) {
  const Config& c = s.config;
  EvalOptions eo;
  const ValKwargs& vk = c.actor_rollout_ref.rollout.val_kwargs;
  eo.sampling.temperature = static_cast<float>(vk.temperature);
  eo.sampling.top_p = static_cast<float>(vk.top_p);
  eo.sampling.top_k = vk.top_k > 0 ? static_cast<int32_t>(vk.top_k) : 0;
  eo.max_new_tokens = static_cast<int32_t>(c.data.max_response_length);
  eo.stop_ids = s.stop_ids;
  eo.seed = static_cast<uint64_t>(c.trainer.seed);
  eo.pictures = [&s](const Example& ex) { return s.pictures(ex, s.val); };
  eo.n = static_cast<int32_t>(vk.n);
  if (s.tools) eo.turns = s.tools->options;
  return eo;
}

nlohmann::json GrpoTrainer::validate() {
  GRPO_PROFILE("testing");
  const EvalOptions eo = validation_options(*s_);
  const ValKwargs& vk = cfg_.actor_rollout_ref.rollout.val_kwargs;
  ErrorContext what("validation: ", s_->val.examples.size(), " prompts x ", vk.n, " responses of at most ",
                    eo.max_new_tokens, " tokens");
  const EvalResult r = evaluate(comm_, *s_->engine, s_->val.examples, eo, &rewards_);
  s_->engine->release_memory();  // the next update or checkpoint does not hold the KV cache
  nlohmann::json m = {{"val/accuracy", r.accuracy}, {"val/reward/mean", r.reward_mean},
                      {"val/response_length/mean", r.response_length}, {"timing_s/testing", r.seconds}};
  if (s_->tools) m["val/tools/call_share"] = r.tool_call_share;
  if (r.n > 1) {  // verl's names for n responses per prompt
    const std::string at = cat("@", r.n);
    m["val/accuracy/mean" + at] = r.accuracy;
    m["val/accuracy/best" + at] = r.best_accuracy;
    m["val/accuracy/maj" + at] = r.majority_accuracy;
    m["val/reward/mean" + at] = r.reward_mean;
    m["val/reward/best" + at] = r.reward_best;
  }
  return m;
}

TrainSummary GrpoTrainer::run() {
  const auto t_run = Clock::now();
  TrainSummary sum;
  const bool has_val = !s_->val.examples.empty();
  const std::string best_key = cat("val/accuracy/best@", cfg_.actor_rollout_ref.rollout.val_kwargs.n);
  auto log_val = [&](int64_t step) {
    nlohmann::json v = validate();
    sum.val_accuracy.push_back(v["val/accuracy"].get<double>());
    sum.val_steps.push_back(step);
    if (v.contains("val/tools/call_share")) sum.val_tool_call_share.push_back(v["val/tools/call_share"].get<double>());
    if (logger_)
      logger_->log(step, v,
                   cat("[val] step ", step, ": ",
                       console_fields(v, {{"accuracy", "val/accuracy", "%.3f"},
                                          {"best@n", best_key.c_str(), "%.3f"},
                                          {"reward", "val/reward/mean", "%.3f"},
                                          {"len", "val/response_length/mean", "%.1f"},
                                          {"time (s)", "timing_s/testing", "%.1f"}}),
                       " | ", s_->val.examples.size(), " prompts"));
  };
  if (has_val && cfg_.trainer.val_before_train && state_.global_step == 0) log_val(0);
  if (state_.global_step >= total_steps_ && !opt_.quiet)
    std::fprintf(stderr, "[train] the run is already complete (%lld steps)\n", static_cast<long long>(total_steps_));
  while (state_.global_step < total_steps_) {
    const int64_t step = state_.global_step + 1;
    const bool profile = std::find(opt_.profile_steps.begin(), opt_.profile_steps.end(), step) != opt_.profile_steps.end();
    if (profile) Profiler::enable(true);
    nlohmann::json m = train_step(step);
    if (profile) Profiler::enable(false);
    state_.global_step = step;
    std::string line = cat("[train] step ", step, "/", total_steps_, " | ",
                           console_fields(m, {{"reward", "critic/rewards/mean", "%.3f"},
                                              {"len", "response_length/mean", "%.1f"},
                                              {"gen (s)", "timing_s/gen", "%.2f"},
                                              {"upd (s)", "timing_s/update_actor", "%.2f"},
                                              {"step (s)", "timing_s/step", "%.2f"},
                                              {"rollout tok/s", "perf/rollout_tokens_per_s", "%.0f"},
                                              {"packing", "perf/packing_efficiency", "%.2f"}}));
    char rss_gib[32];
    std::snprintf(rss_gib, sizeof rss_gib, "%.2f", m.value("perf/peak_rss_bytes", 0.0) / (1 << 30));
    line += cat(" | peak RSS ", rss_gib, " GiB");
    if (m.value("training/groups_kept", int64_t{-1}) == 0)
      line += cat(" | no group with a reward signal in ", m["training/gen_batches"].get<int64_t>(),
                  " generation batches (every group's rewards equal): step skipped, no update");
    if (logger_) logger_->log(step, m, line);
    const bool last = step == total_steps_;
    if (has_val && (last || (cfg_.trainer.test_freq > 0 && step % cfg_.trainer.test_freq == 0))) log_val(step);
    if (last || (cfg_.trainer.save_freq > 0 && step % cfg_.trainer.save_freq == 0)) {
      auto t0 = Clock::now();
      ErrorContext saving("saving the checkpoint of step ", step, " in ", run_dir_, "/checkpoints");
      const std::string checkpoint = save_checkpoint();
      if (console_) sum.final_checkpoint = checkpoint;
      if (!opt_.quiet)
        std::fprintf(stderr, "[train] saved %s (%.1fs)\n", sum.final_checkpoint.c_str(), seconds_since(t0));
    }
  }
  sum.steps = state_.global_step;
  sum.seconds = seconds_since(t_run);
  if (!console_) return sum;  // rank 0 writes the report and the trace
  finish_run(logger_.get(), run_dir_, cfg_, TrainingKind::Grpo);
  if (!opt_.profile_steps.empty()) {
    Profiler::write_chrome_trace(run_dir_ + "/trace.json");
    double step_ms = 0;
    for (const ScopeSummary& s : Profiler::summary())
      if (s.name == "step") step_ms = s.total_ms;
    std::fprintf(stderr, "[profile] %s/trace.json; share of the profiled steps:\n", run_dir_.c_str());
    for (const char* phase : {"gen", "reward", "adv", "old_log_prob", "ref", "update_actor", "update_weights"})
      for (const ScopeSummary& s : Profiler::summary())
        if (s.name == phase)
          std::fprintf(stderr, "  %-16s %8.1f ms  %5.1f%%\n", phase, s.total_ms, step_ms > 0 ? 100 * s.total_ms / step_ms : 0.0);
  }
  return sum;
}

}  // namespace grpo
