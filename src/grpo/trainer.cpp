// The GRPO loop (see trainer.h).
#include "grpo/trainer.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>

#include "core/files.h"
#include "core/profiler.h"
#include "core/rng.h"
#include "grpo/metrics.h"
#include "grpo/report.h"
#include "train/advantages.h"

namespace grpo {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

int64_t peak_rss_bytes() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;
}

double mean(const std::vector<double>& v) { return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / v.size(); }

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

struct GrpoTrainer::StepData {
  std::vector<train::TrainSample> samples;  // group by group
  std::vector<int64_t> group_sizes;
  std::vector<float> scores;                // reward per sample (before shaping)
  std::vector<float> rewards;               // after overlong shaping
  std::vector<std::vector<float>> per_function;  // [function][sample]
  std::vector<std::string> function_names;
  int64_t truncated = 0, prompts = 0, gen_tokens = 0, prompt_tokens = 0, gen_batches = 0, groups_dropped = 0;
  double gen_s = 0, reward_s = 0;
};

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
  mb.pad_fixed = !cfg_.actor_rollout_ref.model.use_remove_padding;
  train::AdamWConfig adam;
  adam.lr = static_cast<float>(ac.optim.lr);
  adam.beta1 = static_cast<float>(ac.optim.betas[0]);
  adam.beta2 = static_cast<float>(ac.optim.betas[1]);
  adam.eps = static_cast<float>(ac.optim.eps);
  adam.weight_decay = static_cast<float>(ac.optim.weight_decay);
  adam.grad_clip = static_cast<float>(ac.grad_clip);
  actor_ = std::make_unique<train::Actor>(*s_->weights, dopt, mb, adam);
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

void GrpoTrainer::generate_groups(const std::vector<const Example*>& prompts, StepData& d, int64_t step,
                                  int64_t batch_index) {
  const RolloutConfig& rc = cfg_.actor_rollout_ref.rollout;
  // Shared: one request of n samples per prompt. Not shared (the baseline): n requests of one sample.
  const int64_t requests_per_prompt = rc.share_group_prompt ? 1 : rc.n;
  std::vector<rollout::Request> reqs;
  for (size_t r = 0; r < prompts.size() * requests_per_prompt; ++r) {
    const size_t i = r / requests_per_prompt;
    rollout::Request q;
    q.prompt = prompts[i]->prompt_ids;
    q.n = static_cast<int32_t>(rc.n / requests_per_prompt);
    q.sampling.temperature = static_cast<float>(rc.temperature);
    q.sampling.top_p = static_cast<float>(rc.top_p);
    q.sampling.top_k = rc.top_k > 0 ? static_cast<int32_t>(rc.top_k) : 0;
    q.sampling.min_p = static_cast<float>(rc.min_p);
    q.stop_token_ids = s_->stop_ids;
    q.max_new_tokens = static_cast<int32_t>(cfg_.data.max_response_length);
    q.seed = static_cast<uint64_t>(cfg_.trainer.seed);
    q.id = static_cast<uint64_t>(step) * 1000003ull + static_cast<uint64_t>(batch_index) * 10007ull + r;
    reqs.push_back(std::move(q));
  }
  auto t0 = Clock::now();
  std::vector<rollout::RequestResult> out;
  {
    GRPO_PROFILE("gen");
    out = s_->engine->generate(reqs);
  }
  d.gen_s += since(t0);
  t0 = Clock::now();
  GRPO_PROFILE("reward");
  std::vector<RewardInput> inputs;
  StepData part;
  for (size_t i = 0; i < prompts.size(); ++i) {
    std::vector<const rollout::SampleResult*> group;
    for (int64_t k = 0; k < requests_per_prompt; ++k)
      for (const rollout::SampleResult& r : out[i * requests_per_prompt + k].samples) group.push_back(&r);
    for (const rollout::SampleResult* rp : group) {
      const rollout::SampleResult& r = *rp;
      train::TrainSample ts;
      ts.tokens = prompts[i]->prompt_ids;
      ts.prompt_len = ts.tokens.size();
      ts.tokens.insert(ts.tokens.end(), r.tokens.begin(), r.tokens.end());
      ts.rollout_logprobs = r.logprobs;
      const bool truncated = r.finish_reason == rollout::FinishReason::Length;
      ts.loss_masked = truncated && cfg_.algorithm.mask_truncated_completions;
      part.truncated += truncated;
      part.gen_tokens += r.tokens.size();
      part.prompt_tokens += ts.prompt_len;
      part.samples.push_back(std::move(ts));
      inputs.push_back({prompts[i]->id, prompts[i]->prompt, r.text, prompts[i]->answer});
    }
    part.group_sizes.push_back(group.size());
  }
  RewardScores sc = score_batch(rewards_, inputs);
  part.scores = sc.total;
  part.rewards = sc.total;
  part.per_function = sc.per_function;
  const OverlongBufferConfig& ob = cfg_.reward.overlong_buffer;
  if (ob.enable)
    for (size_t i = 0; i < part.samples.size(); ++i)
      part.rewards[i] += train::overlong_penalty(part.samples[i].response_len(), cfg_.data.max_response_length, ob.len,
                                                 static_cast<float>(ob.penalty_factor));
  d.reward_s += since(t0);
  d.function_names = sc.names;
  d.gen_batches++;
  d.prompts += prompts.size();

  // DAPO dynamic sampling: keep only groups whose rewards differ.
  std::vector<bool> keep(part.group_sizes.size(), true);
  if (cfg_.algorithm.filter_groups.enable) keep = train::groups_with_signal(part.rewards, part.group_sizes);
  if (d.per_function.empty()) d.per_function.resize(sc.names.size());
  for (size_t g = 0, off = 0; g < part.group_sizes.size(); off += part.group_sizes[g++]) {
    if (!keep[g]) {
      d.groups_dropped++;
      continue;
    }
    for (int64_t k = 0; k < part.group_sizes[g]; ++k) {
      d.samples.push_back(std::move(part.samples[off + k]));
      d.scores.push_back(part.scores[off + k]);
      d.rewards.push_back(part.rewards[off + k]);
      for (size_t f = 0; f < sc.names.size(); ++f) d.per_function[f].push_back(part.per_function[f][off + k]);
    }
    d.group_sizes.push_back(part.group_sizes[g]);
  }
  d.truncated += part.truncated;
  d.gen_tokens += part.gen_tokens;
  d.prompt_tokens += part.prompt_tokens;
}

nlohmann::json GrpoTrainer::train_step(int64_t step) {
  GRPO_PROFILE("step");
  const auto t_step = Clock::now();
  const ActorConfig& ac = cfg_.actor_rollout_ref.actor;
  const int64_t B = cfg_.data.train_batch_size;
  StepData d;
  std::vector<const Example*> prompts;
  const FilterGroupsConfig& fg = cfg_.algorithm.filter_groups;
  for (int64_t gb = 0;; ++gb) {
    next_prompts(&prompts);
    generate_groups(prompts, d, step, gb);
    if (!fg.enable || static_cast<int64_t>(d.group_sizes.size()) >= B) break;
    if (fg.max_num_gen_batches > 0 && gb + 1 >= fg.max_num_gen_batches) break;
  }
  if (fg.enable && static_cast<int64_t>(d.group_sizes.size()) > B) {  // keep exactly B groups
    int64_t n = 0;
    for (int64_t g = 0; g < B; ++g) n += d.group_sizes[g];
    d.group_sizes.resize(B);
    d.samples.resize(n);
    d.scores.resize(n);
    d.rewards.resize(n);
    for (auto& f : d.per_function) f.resize(n);
  }

  // Advantages.
  auto t0 = Clock::now();
  std::vector<float> adv;
  {
    GRPO_PROFILE("adv");
    adv = train::grpo_advantages(d.rewards, d.group_sizes, advantage_scaling(cfg_), 1e-6);
    for (size_t i = 0; i < d.samples.size(); ++i) d.samples[i].advantage = adv[i];
  }
  const double adv_s = since(t0) + d.reward_s;

  // Mini-batches of ppo_mini_batch_size prompts (x n responses), group by group.
  std::vector<std::vector<train::TrainSample>> minibatches;
  {
    const int64_t groups_per_mb = std::max<int64_t>(1, std::min(ac.ppo_mini_batch_size, B));
    for (size_t g = 0, off = 0; g < d.group_sizes.size();) {
      std::vector<train::TrainSample> mb;
      for (int64_t k = 0; k < groups_per_mb && g < d.group_sizes.size(); ++k, ++g)
        for (int64_t j = 0; j < d.group_sizes[g]; ++j) mb.push_back(std::move(d.samples[off++]));
      minibatches.push_back(std::move(mb));
    }
  }
  const bool need_old = ac.ppo_epochs > 1 || minibatches.size() > 1;
  const float tis_cap = static_cast<float>(ac.tis_imp_ratio_cap);
  double old_s = 0, ref_s = 0;
  std::vector<std::vector<float>> lp;
  if (need_old || tis_cap > 0) {
    GRPO_PROFILE("old_log_prob");
    t0 = Clock::now();
    for (auto& mb : minibatches) {
      train::response_logprobs(actor_->decoder(), mb, actor_->micro_batching(), &lp, nullptr);
      for (size_t i = 0; i < mb.size(); ++i) mb[i].old_logprobs = std::move(lp[i]);
    }
    old_s = since(t0);
  }
  if (ref_decoder_) {
    GRPO_PROFILE("ref");
    t0 = Clock::now();
    for (auto& mb : minibatches) {
      train::response_logprobs(*ref_decoder_, mb, actor_->micro_batching(), &lp, nullptr);
      for (size_t i = 0; i < mb.size(); ++i) mb[i].ref_logprobs = std::move(lp[i]);
    }
    ref_s = since(t0);
  }

  // Updates.
  t0 = Clock::now();
  const ops::PolicyLossConfig lcfg = policy_loss_config(cfg_);
  const train::LossAggMode agg = loss_agg_mode(cfg_);
  const int64_t updates_per_step = ac.ppo_epochs * static_cast<int64_t>(minibatches.size());
  const int64_t total_updates = total_steps_ * updates_per_step;
  const int64_t warmup = ac.optim.lr_warmup_steps >= 0
                             ? ac.optim.lr_warmup_steps
                             : static_cast<int64_t>(ac.optim.lr_warmup_steps_ratio * total_updates);
  std::vector<double> pg, kl, ent, clip, pkl, gn, eff;
  double update_weights_s = 0;
  int64_t skipped = 0, train_tokens = 0;
  float lr = 0;
  {
    GRPO_PROFILE("update_actor");
    for (int64_t e = 0; e < ac.ppo_epochs; ++e)
      for (auto& mb : minibatches) {
        if (mb.empty()) continue;
        lr = train::scheduled_lr(static_cast<float>(ac.optim.lr), actor_->optimizer().steps(), total_updates, warmup,
                                 ac.optim.warmup_style, static_cast<float>(ac.optim.min_lr_ratio));
        train::UpdateStats u = actor_->update_policy(mb, lcfg, agg, static_cast<float>(ac.loss_scale_factor), tis_cap, lr);
        skipped += u.skipped;
        pg.push_back(u.pg_loss);
        kl.push_back(u.kl);
        ent.push_back(u.entropy);
        clip.push_back(u.pg_clipfrac);
        pkl.push_back(u.ppo_kl);
        gn.push_back(u.grad_norm);
        eff.push_back(u.packing_efficiency);
        update_weights_s += u.update_weights_s;
        train_tokens += u.tokens;
      }
  }
  const double update_s = since(t0) - update_weights_s;
  {
    GRPO_PROFILE("update_weights");
    auto tw = Clock::now();
    s_->engine->clear_prefix_cache();  // cached k/v belong to the old weights
    update_weights_s += since(tw);
  }
  state_.skipped_steps += skipped;
  state_.consecutive_skips = skipped > 0 ? state_.consecutive_skips + 1 : 0;
  GRPO_CHECK(state_.consecutive_skips < 5, "[train] ", state_.consecutive_skips,
             " steps in a row had a non-finite loss or gradient and were skipped; stopping. Lower "
             "actor_rollout_ref.actor.optim.lr or check the data and rewards.");

  // Metrics (verl names).
  nlohmann::json m;
  std::vector<double> lens, rew, sc, advs;
  for (size_t i = 0; i < d.rewards.size(); ++i) {
    rew.push_back(d.rewards[i]);
    sc.push_back(d.scores[i]);
    advs.push_back(adv[i]);
  }
  for (auto& mb : minibatches)
    for (auto& s : mb) lens.push_back(static_cast<double>(s.response_len()));
  add_summary(m, "critic/rewards", rew);
  add_summary(m, "critic/score", sc);
  add_summary(m, "critic/advantages", advs);
  add_summary(m, "response_length", lens);
  m["response_length/clip_ratio"] =
      d.truncated / std::max(1.0, static_cast<double>(d.prompts * cfg_.actor_rollout_ref.rollout.n));
  for (size_t f = 0; f < d.function_names.size(); ++f) {
    std::vector<double> v(d.per_function[f].begin(), d.per_function[f].end());
    m["reward/" + d.function_names[f] + "/mean"] = mean(v);
  }
  m["actor/pg_loss"] = mean(pg);
  m["actor/kl_loss"] = mean(kl);
  m["actor/entropy"] = mean(ent);
  m["actor/pg_clipfrac"] = mean(clip);
  m["actor/ppo_kl"] = mean(pkl);
  m["actor/grad_norm"] = mean(gn);
  m["actor/lr"] = lr;
  m["perf/packing_efficiency"] = mean(eff);
  const double step_s = since(t_step);
  m["timing_s/gen"] = d.gen_s;
  m["timing_s/reward"] = d.reward_s;
  m["timing_s/adv"] = adv_s;
  m["timing_s/old_log_prob"] = old_s;
  m["timing_s/ref"] = ref_s;
  m["timing_s/update_actor"] = update_s;
  m["timing_s/update_weights"] = update_weights_s;
  m["timing_s/step"] = step_s;
  m["perf/throughput"] = (d.gen_tokens + d.prompt_tokens) / std::max(1e-9, step_s);
  m["perf/rollout_tokens_per_s"] = d.gen_tokens / std::max(1e-9, d.gen_s);
  m["perf/train_tokens"] = train_tokens;
  m["perf/peak_rss_bytes"] = peak_rss_bytes();
  m["training/epoch"] = state_.epoch;
  m["training/skipped_steps"] = state_.skipped_steps;
  m["training/gen_batches"] = d.gen_batches;
  m["training/groups_dropped"] = d.groups_dropped;
  return m;
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
                   " | packing %.2f\n",
                   static_cast<long long>(step), static_cast<long long>(total_steps_),
                   m["critic/rewards/mean"].get<double>(), m["response_length/mean"].get<double>(),
                   m["timing_s/gen"].get<double>(), m["timing_s/update_actor"].get<double>(),
                   m["timing_s/step"].get<double>(), m["perf/rollout_tokens_per_s"].get<double>(),
                   m["perf/packing_efficiency"].get<double>());
    const bool last = step == total_steps_;
    if (has_val && (last || (cfg_.trainer.test_freq > 0 && step % cfg_.trainer.test_freq == 0))) log_val(step);
    if (last || (cfg_.trainer.save_freq > 0 && step % cfg_.trainer.save_freq == 0)) {
      auto t0 = Clock::now();
      sum.final_checkpoint = save_run_checkpoint(run_dir_, *s_->weights, actor_->optimizer(), state_, DType::F32,
                                                 cfg_.actor_rollout_ref.model.path);
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
