// The GRPO loop (see trainer.h).
#include "grpo/trainer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <numeric>

#include "core/files.h"
#include "core/profiler.h"
#include "core/rng.h"
#include "grpo/metrics.h"
#include "grpo/report.h"

namespace grpo {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Keeps the lines of metrics.jsonl up to `step` (resume: the run continues from its checkpoint).
void truncate_metrics(const std::string& path, int64_t step) {
  if (!file_exists(path)) return;
  std::string kept;
  for (const nlohmann::json& j : read_metrics(path))
    if (j.value("step", int64_t{0}) <= step) kept += j.dump() + "\n";
  write_file_atomic(path, kept);
}

}  // namespace

int64_t total_training_steps(const Config& c, int64_t train_examples) {
  if (c.trainer.total_training_steps > 0) return c.trainer.total_training_steps;
  const int64_t per_epoch = train_examples / c.data.train_batch_size;
  GRPO_CHECK(per_epoch > 0, "[config] data.train_batch_size ", c.data.train_batch_size, " is larger than the ",
             train_examples, " training prompts");
  return per_epoch * c.trainer.total_epochs;
}

GrpoTrainer::GrpoTrainer(const Config& config, const TrainOptions& opt) : cfg_(config), opt_(opt) {
  run_dir_ = opt.resume_dir.empty() ? cfg_.trainer.default_local_dir : opt.resume_dir;
  make_dirs(run_dir_);
  s_ = Session::open(cfg_, /*require_response=*/false);
  const ActorConfig& ac = cfg_.actor_rollout_ref.actor;
  DecoderOptions dopt;
  dopt.mode = s_->mode;
  dopt.checkpoint_activations = cfg_.actor_rollout_ref.model.enable_gradient_checkpointing;
  if (!cfg_.actor_rollout_ref.model.use_fused_kernels) dopt.kernels = &plain_kernels();
  dopt.logit_scale = static_cast<float>(1.0 / std::max(1e-6, cfg_.actor_rollout_ref.rollout.temperature));
  train::MicroBatching mb;
  mb.dynamic = ac.use_dynamic_bsz;
  mb.max_tokens = ac.ppo_max_token_len_per_gpu;
  mb.micro_batch_size = ac.ppo_micro_batch_size_per_gpu;
  mb.pad = !cfg_.actor_rollout_ref.model.use_remove_padding;
  train::AdamWConfig adam;
  adam.lr = static_cast<float>(ac.optim.lr);
  adam.beta1 = static_cast<float>(ac.optim.betas[0]);
  adam.beta2 = static_cast<float>(ac.optim.betas[1]);
  adam.eps = static_cast<float>(ac.optim.eps);
  adam.weight_decay = static_cast<float>(ac.optim.weight_decay);
  adam.grad_clip = static_cast<float>(ac.grad_clip);
  actor_ = std::make_unique<train::Actor>(*s_->weights, dopt, mb, adam, ac.freeze_vision_tower);
  if (ac.use_kl_loss && ac.kl_loss_coef != 0) {
    ref_weights_ = ModelWeights::load(cfg_.actor_rollout_ref.model.path);
    ref_decoder_ = std::make_unique<Decoder>(*ref_weights_, dopt);
  }
  rewards_ = make_rewards(cfg_.reward.functions);
  total_steps_ = total_training_steps(cfg_, s_->train.examples.size());
  steps_per_epoch_ = std::max<int64_t>(1, s_->train.examples.size() / cfg_.data.train_batch_size);

  if (!opt.resume_dir.empty()) {
    std::string ck = latest_run_checkpoint(run_dir_);
    GRPO_CHECK(!ck.empty(), "[resume] ", run_dir_, " has no checkpoint (checkpoints/latest is missing)");
    state_ = load_run_checkpoint(ck, *s_->weights, actor_->optimizer());
    s_->engine->clear_prefix_cache();
    truncate_metrics(run_dir_ + "/metrics.jsonl", state_.global_step);
    std::fprintf(stderr, "[train] resumed %s at step %lld\n", ck.c_str(), static_cast<long long>(state_.global_step));
  } else if (file_exists(run_dir_ + "/metrics.jsonl")) {
    std::filesystem::remove(run_dir_ + "/metrics.jsonl");
  }
  write_file_atomic(run_dir_ + "/config.yaml", config_to_yaml(cfg_));
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

nlohmann::json GrpoTrainer::validate() {
  GRPO_PROFILE("testing");
  EvalOptions eo;
  const ValKwargs& vk = cfg_.actor_rollout_ref.rollout.val_kwargs;
  eo.sampling.temperature = static_cast<float>(vk.temperature);
  eo.sampling.top_p = static_cast<float>(vk.top_p);
  eo.sampling.top_k = vk.top_k > 0 ? static_cast<int32_t>(vk.top_k) : 0;
  eo.max_new_tokens = static_cast<int32_t>(cfg_.data.max_response_length);
  eo.stop_ids = s_->stop_ids;
  eo.seed = static_cast<uint64_t>(cfg_.trainer.seed);
  eo.pictures = [this](const Example& ex) { return s_->pictures(ex, s_->val); };
  EvalResult r = evaluate(*s_->engine, s_->val.examples, eo, &rewards_);
  return {{"val/accuracy", r.accuracy}, {"val/reward/mean", r.reward_mean},
          {"val/response_length/mean", r.response_length}, {"timing_s/testing", r.seconds}};
}

TrainSummary GrpoTrainer::run() {
  const auto t_run = Clock::now();
  MetricsWriter metrics(run_dir_ + "/metrics.jsonl");
  TrainSummary sum;
  const bool has_val = !s_->val.examples.empty();
  auto log_val = [&](int64_t step) {
    nlohmann::json v = validate();
    sum.val_accuracy.push_back(v["val/accuracy"].get<double>());
    metrics.write(step, v);
    if (!opt_.quiet)
      std::fprintf(stderr, "[val] step %lld: accuracy %.3f, reward %.3f (%lld prompts, %.1fs)\n",
                   static_cast<long long>(step), v["val/accuracy"].get<double>(), v["val/reward/mean"].get<double>(),
                   static_cast<long long>(s_->val.examples.size()), v["timing_s/testing"].get<double>());
  };
  if (has_val && cfg_.trainer.val_before_train && state_.global_step == 0) log_val(0);
  while (state_.global_step < total_steps_) {
    const int64_t step = state_.global_step + 1;
    const bool profile = std::find(opt_.profile_steps.begin(), opt_.profile_steps.end(), step) != opt_.profile_steps.end();
    if (profile) Profiler::enable(true);
    nlohmann::json m = train_step(step);
    if (profile) Profiler::enable(false);
    state_.global_step = step;
    metrics.write(step, m);
    if (!opt_.quiet)
      std::fprintf(stderr,
                   "[train] step %lld/%lld | reward %.3f | len %.1f | gen %.2fs upd %.2fs step %.2fs | %.0f rollout tok/s"
                   " | packing %.2f | peak RSS %.2f GiB\n",
                   static_cast<long long>(step), static_cast<long long>(total_steps_),
                   m["critic/rewards/mean"].get<double>(), m["response_length/mean"].get<double>(),
                   m["timing_s/gen"].get<double>(), m["timing_s/update_actor"].get<double>(),
                   m["timing_s/step"].get<double>(), m["perf/rollout_tokens_per_s"].get<double>(),
                   m["perf/packing_efficiency"].get<double>(),
                   m["perf/peak_rss_bytes"].get<double>() / (1 << 30));
    const bool last = step == total_steps_;
    if (has_val && (last || (cfg_.trainer.test_freq > 0 && step % cfg_.trainer.test_freq == 0))) log_val(step);
    if (last || (cfg_.trainer.save_freq > 0 && step % cfg_.trainer.save_freq == 0)) {
      auto t0 = Clock::now();
      sum.final_checkpoint = save_run_checkpoint(run_dir_, *s_->weights, actor_->optimizer(), state_, DType::F32,
                                                 cfg_.actor_rollout_ref.model.path, cfg_.trainer.max_actor_ckpt_to_keep);
      if (!opt_.quiet)
        std::fprintf(stderr, "[train] saved %s (%.1fs)\n", sum.final_checkpoint.c_str(), since(t0));
    }
  }
  sum.steps = state_.global_step;
  sum.seconds = since(t_run);
  ReportInfo info;
  info.title = "grpo.cpp: " + cfg_.trainer.experiment_name;
  info.config_yaml = config_to_yaml(cfg_);
  write_report(run_dir_ + "/metrics.jsonl", run_dir_ + "/report.html", info);
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
