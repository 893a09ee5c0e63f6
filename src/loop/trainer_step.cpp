// One GRPO step of GrpoTrainer, phase by phase (see step_phases.h): generate, score, advantages,
// log-probs, update, sync weights, metrics. The loop around it (checkpoints, validation, resume) is in
// trainer.cpp.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>

#include "core/checked.h"
#include "core/clock.h"
#include "core/error_context.h"
#include "core/profiler.h"
#include "loop/distributed.h"
#include "config/part_options.h"
#include "rollout/response_lengths.h"
#include "report/metrics.h"
#include "loop/trainer.h"
#include "model/vision.h"
#include "train/advantages.h"
#include "train/kl_penalty.h"

namespace grpo {

namespace {

int64_t peak_rss_bytes() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;
}

// Progress of a long generation on the console: a line every 30 s (plain lines, readable in a log file),
// none for the short generations of small runs.
rollout::ProgressFn generation_progress(int64_t step, bool quiet) {
  if (quiet) return {};
  auto last = std::make_shared<Clock::time_point>(Clock::now());
  return [step, last](const rollout::Progress& p) {
    if (seconds_since(*last) >= 30.0) {
      std::fprintf(stderr, "[train] step %lld: generating, %lld/%lld requests done, %lld tokens, %.0f tokens/s\n",
                   static_cast<long long>(step), static_cast<long long>(p.requests_done),
                   static_cast<long long>(p.requests_total), static_cast<long long>(p.tokens_generated),
                   p.tokens_per_second);
      *last = Clock::now();
    }
    return true;
  };
}

// CPU time (user + system) of this process so far: what a step costs whatever else runs on the machine.
double cpu_seconds() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

double mean(const std::vector<double>& v) { return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / v.size(); }

// Moves sample i of a generation batch (with its scores) to the end of the step's batch.
void append_sample(StepBatch& b, GenerationResult& gen, const ScoreResult& sc, size_t i) {
  b.samples.push_back(std::move(gen.samples[i]));
  b.scores.push_back(sc.scores[i]);
  b.rewards.push_back(sc.rewards[i]);
  b.truncated.push_back(gen.truncated[i]);
  if (!gen.turns.empty()) b.turns.push_back(gen.turns[i]);
  if (!sc.reward_baselines.empty()) b.reward_baselines.push_back(sc.reward_baselines[i]);
  for (size_t f = 0; f < sc.function_names.size(); ++f) b.per_function[f].push_back(sc.per_function[f][i]);
}

// The vision tower's share of the step (Qwen3-VL): its time inside gen (once per prompt and picture) and
// inside old_log_prob + update_actor (forward and backward), the patch rows it went over (forward) and the
// training FLOPs (model/vision.h).
void add_vision_metrics(nlohmann::json& m, const VisionWork& gen, const VisionWork& train) {
  m["timing_s/vision_gen"] = gen.forward_s;
  m["timing_s/vision_train"] = train.forward_s + train.backward_s;
  m["perf/vision_gen_patches"] = gen.forward_patches;
  m["perf/vision_train_patches"] = train.forward_patches;
  m["perf/vision_train_flops"] = train.forward_flops + train.backward_flops;
}

}  // namespace

GenerationResult GrpoTrainer::generate(const std::vector<const Example*>& prompts, const std::vector<int64_t>& index,
                                       int64_t step, int64_t batch_index) {
  GRPO_PROFILE("gen");
  comm::WaitLabel label(&comm_, "gen");
  const auto t0 = Clock::now();
  const RolloutConfig& rc = cfg_.actor_rollout_ref.rollout;
  ErrorContext what("generating: batch ", batch_index + 1, " of at most ", max_gen_batches_, ", ", prompts.size(),
                    " prompts x ", rc.n, " responses of at most ", cfg_.data.max_response_length, " tokens");
  // Shared: one request of n samples per prompt. Not shared (the baseline): n requests of one sample.
  const int64_t requests_per_prompt = rc.share_group_prompt ? 1 : rc.n;
  // remax: one more request per prompt, greedy, whose reward is the prompt's baseline.
  const bool greedy_baseline = cfg_.algorithm.adv_estimator == train::AdvEstimator::Remax;
  const int64_t slots_per_prompt = requests_per_prompt + (greedy_baseline ? 1 : 0);
  // Each prompt's pictures, decoded once and shared by its requests and samples (empty for text).
  std::vector<std::vector<PicturePtr>> pictures;
  for (const Example* ex : prompts) pictures.push_back(s_->pictures(*ex, s_->train));
  const int64_t requests_per_batch = cfg_.data.train_batch_size * slots_per_prompt;
  std::vector<rollout::Request> reqs;
  for (size_t r = 0; r < prompts.size() * slots_per_prompt; ++r) {
    const size_t i = r / slots_per_prompt;
    const bool greedy = greedy_baseline && static_cast<int64_t>(r % slots_per_prompt) == requests_per_prompt;
    rollout::Request q;
    q.prompt = prompts[i]->prompt_ids;
    q.pictures = pictures[i];
    q.n = greedy ? 1 : static_cast<int32_t>(rc.n / requests_per_prompt);
    q.sampling.temperature = greedy ? 0.0f : static_cast<float>(rc.temperature);
    q.sampling.top_p = static_cast<float>(rc.top_p);
    q.sampling.top_k = rc.top_k > 0 ? static_cast<int32_t>(rc.top_k) : 0;
    q.sampling.min_p = static_cast<float>(rc.min_p);
    if (!rc.ignore_eos) q.stop_token_ids = s_->stop_ids;
    q.max_new_tokens = static_cast<int32_t>(cfg_.data.max_response_length);
    q.seed = static_cast<uint64_t>(cfg_.trainer.seed);
    // Benchmarks: each sample stops at its drawn length (sample k of the prompt's group, however requested).
    if (rc.response_lengths == ResponseLengths::LongTail && !greedy)
      for (int32_t k = 0; k < q.n; ++k)
        q.stop_lengths.push_back(long_tail_response_length(
            static_cast<uint64_t>(cfg_.trainer.seed), step, batch_index, index[i],
            rc.share_group_prompt ? k : static_cast<int64_t>(r % slots_per_prompt), q.max_new_tokens));
    // Request ids are global (the prompt's place in the batch), so samples do not depend on the rank.
    const int64_t in_batch = index[i] * slots_per_prompt + static_cast<int64_t>(r) % slots_per_prompt;
    q.id = rollout_request_id(step, batch_index, in_batch, max_gen_batches_, requests_per_batch);
    reqs.push_back(std::move(q));
  }
  const rollout::MultiTurn turns = s_->tools ? s_->tools->options : rollout::MultiTurn{};
  const std::vector<rollout::RequestResult> out =
      s_->engine->generate(reqs, generation_progress(step, opt_.quiet), turns);

  GenerationResult g;
  g.prompts = prompts;
  for (size_t i = 0; i < prompts.size(); ++i) {
    int64_t group_size = 0;
    if (greedy_baseline) {
      const rollout::SampleResult& r = out[i * slots_per_prompt + requests_per_prompt].samples.at(0);
      g.greedy_texts.push_back(r.text);
      g.greedy_lengths.push_back(static_cast<int64_t>(r.tokens.size()));
      g.gen_tokens += static_cast<int64_t>(r.tokens.size());
    }
    for (int64_t k = 0; k < requests_per_prompt; ++k)
      for (const rollout::SampleResult& r : out[i * slots_per_prompt + k].samples) {
        train::TrainSample ts;
        ts.tokens = prompts[i]->prompt_ids;
        ts.prompt_len = ts.tokens.size();
        ts.pictures = pictures[i];
        ts.tokens.insert(ts.tokens.end(), r.tokens.begin(), r.tokens.end());
        ts.rollout_logprobs = r.logprobs;
        ts.response_mask = r.response_mask;
        if (turns.handler) g.turns.push_back(r.turns);
        const bool truncated = r.finish_reason == rollout::FinishReason::Length;
        ts.loss_masked = truncated && cfg_.algorithm.mask_truncated_completions;
        g.truncated.push_back(truncated);
        g.gen_tokens += r.tokens.size();
        g.prompt_tokens += ts.prompt_len;
        g.samples.push_back(std::move(ts));
        g.texts.push_back(r.text);
        ++group_size;
      }
    g.group_sizes.push_back(group_size);
  }
  g.seconds = seconds_since(t0);
  return g;
}

ScoreResult GrpoTrainer::score(const GenerationResult& gen) {
  GRPO_PROFILE("reward");
  comm::WaitLabel label(&comm_, "reward");
  const auto t0 = Clock::now();
  std::vector<RewardInput> inputs;
  for (size_t g = 0, i = 0; g < gen.group_sizes.size(); ++g) {
    const Example& ex = *gen.prompts[g];
    const nlohmann::json extra_info = ex.extra.value("extra_info", nlohmann::json());
    for (int64_t k = 0; k < gen.group_sizes[g]; ++k, ++i)
      inputs.push_back({ex.id, ex.prompt, gen.texts[i], ex.answer, ex.data_source, extra_info});
  }
  const size_t sampled = inputs.size();
  for (size_t g = 0; g < gen.greedy_texts.size(); ++g) {  // remax: the greedy baselines after the samples
    const Example& ex = *gen.prompts[g];
    inputs.push_back({ex.id, ex.prompt, gen.greedy_texts[g], ex.answer, ex.data_source,
                      ex.extra.value("extra_info", nlohmann::json())});
  }
  ErrorContext what("scoring ", inputs.size(), " responses");
  RewardScores rs = score_batch(rewards_, inputs);
  std::vector<float> greedy_rewards(rs.total.begin() + sampled, rs.total.end());
  rs.total.resize(sampled);
  for (auto& f : rs.per_function) f.resize(sampled);
  ScoreResult sc;
  sc.scores = rs.total;
  sc.rewards = rs.total;
  sc.per_function = std::move(rs.per_function);
  sc.function_names = std::move(rs.names);
  sc.failures = std::move(rs.failures);
  sc.extras = std::move(rs.extras);
  const OverlongBufferConfig& ob = cfg_.reward.overlong_buffer;
  if (ob.enable)
    for (size_t i = 0; i < gen.samples.size(); ++i)
      sc.rewards[i] += train::overlong_penalty(gen.samples[i].response_len(), cfg_.data.max_response_length, ob.len,
                                               static_cast<float>(ob.penalty_factor));
  for (size_t g = 0; g < gen.greedy_texts.size(); ++g) {
    if (ob.enable)
      greedy_rewards[g] += train::overlong_penalty(gen.greedy_lengths[g], cfg_.data.max_response_length, ob.len,
                                                   static_cast<float>(ob.penalty_factor));
    for (int64_t k = 0; k < gen.group_sizes[g]; ++k) sc.reward_baselines.push_back(greedy_rewards[g]);
  }
  sc.seconds = seconds_since(t0);
  return sc;
}

StepBatch GrpoTrainer::collect_batch(int64_t step) {
  const int64_t B = cfg_.data.train_batch_size;
  const FilterGroupsConfig& fg = cfg_.algorithm.filter_groups;
  StepBatch b;
  std::vector<const Example*> prompts;
  for (int64_t gb = 0;; ++gb) {
    next_prompts(&prompts);
    std::vector<int64_t> index(prompts.size());
    std::iota(index.begin(), index.end(), 0);
    GenerationResult gen;
    ScoreResult sc;
    if (comm_.size() == 1) {
      gen = generate(prompts, index, step, gb);
      sc = score(gen);
      b.gen_s += gen.seconds;
      b.reward_s += sc.seconds;
    } else {  // this rank's share of the prompts, then every rank's groups
      const std::vector<std::vector<int64_t>> shares =
          prompt_shares(prompts, cfg_.actor_rollout_ref.rollout.n, expected_response_tokens_, comm_.size());
      std::vector<const Example*> mine;
      for (int64_t i : shares[comm_.rank()]) mine.push_back(prompts[i]);
      gen = generate(mine, shares[comm_.rank()], step, gb);
      sc = score(gen);
      b.reward_s += sc.seconds;
      const auto t_gather = Clock::now();
      const double own_gen_s = gen.seconds;
      {
        comm::WaitLabel label(&comm_, "gen");
        gather_groups(comm_, shares, prompts, gen, sc);  // gen.seconds becomes the slowest rank's
      }
      b.gen_s += own_gen_s + seconds_since(t_gather);
    }
    b.slowest_gen_s += gen.seconds;
    b.function_names = sc.function_names;
    b.per_function.resize(sc.function_names.size());
    b.reward_failures.resize(sc.failures.size());
    for (size_t f = 0; f < sc.failures.size(); ++f) b.reward_failures[f] += sc.failures[f];
    for (const RewardExtra& e : sc.extras)
      for (float v : e.values)
        if (!std::isnan(v)) b.reward_extras[e.key].first += v, b.reward_extras[e.key].second += 1;
    b.scored += static_cast<int64_t>(gen.samples.size());
    check_reward_failures(rewards_, b.function_names, b.reward_failures, b.scored, cfg_.reward.max_failure_fraction,
                          cat("step ", step));
    b.gen_batches++;
    b.prompts += prompts.size();
    b.gen_tokens += gen.gen_tokens;
    for (int64_t n : gen.greedy_lengths) b.greedy_tokens += n;
    b.prompt_tokens += gen.prompt_tokens;
    // DAPO dynamic sampling: keep only groups whose rewards differ.
    std::vector<bool> keep(gen.group_sizes.size(), true);
    if (fg.enable) keep = train::groups_with_signal(sc.rewards, gen.group_sizes);
    for (size_t g = 0, off = 0; g < gen.group_sizes.size(); off += gen.group_sizes[g++]) {
      if (!keep[g]) {
        b.groups_dropped++;
        continue;
      }
      for (int64_t k = 0; k < gen.group_sizes[g]; ++k) append_sample(b, gen, sc, off + k);
      b.group_sizes.push_back(gen.group_sizes[g]);
    }
    if (!fg.enable || static_cast<int64_t>(b.group_sizes.size()) >= B) break;
    if (gb + 1 >= max_gen_batches_) break;
    if (logger_ && logger_->console())
      std::fprintf(stderr, "[train] step %lld: %lld of %lld groups with a reward signal after %lld generation batches "
                   "(at most %lld); generating more\n", static_cast<long long>(step),
                   static_cast<long long>(b.group_sizes.size()), static_cast<long long>(B),
                   static_cast<long long>(gb + 1), static_cast<long long>(max_gen_batches_));
  }
  if (fg.enable && static_cast<int64_t>(b.group_sizes.size()) > B) {  // keep exactly B groups
    int64_t n = 0;
    for (int64_t g = 0; g < B; ++g) n += b.group_sizes[g];
    b.group_sizes.resize(B);
    b.samples.resize(n);
    b.scores.resize(n);
    b.rewards.resize(n);
    b.truncated.resize(n);
    if (!b.reward_baselines.empty()) b.reward_baselines.resize(n);
    for (auto& f : b.per_function) f.resize(n);
  }
  return b;
}

// The chosen estimator over the step's samples (in mini-batch order, which is the batch's): verl's [B, T]
// layout with each response's reward on its last token, minus kl_ctrl's coefficient x the per-token KL
// between the old and the reference log-probs when algorithm.use_kl_in_reward is on.
AdvantageResult GrpoTrainer::compute_advantages(const StepBatch& batch,
                                                std::vector<std::vector<train::TrainSample>>& minibatches) {
  GRPO_PROFILE("adv");
  comm::WaitLabel label(&comm_, "adv");
  const auto t0 = Clock::now();
  const AlgorithmConfig& alg = cfg_.algorithm;
  std::vector<train::TrainSample*> samples;
  for (auto& mb : minibatches)
    for (auto& smp : mb) samples.push_back(&smp);
  const int64_t B = static_cast<int64_t>(samples.size());
  GRPO_CHECK(B == static_cast<int64_t>(batch.rewards.size()), "[train] ", B, " samples for ", batch.rewards.size(),
             " rewards");
  int64_t T = 1;
  for (const auto* smp : samples) T = std::max(T, smp->response_len());
  std::vector<double> rewards(B * T, 0.0), mask(B * T, 0.0);
  std::vector<int64_t> group(B);
  for (int64_t g = 0, i = 0; g < static_cast<int64_t>(batch.group_sizes.size()); ++g)
    for (int64_t k = 0; k < batch.group_sizes[g]; ++k) group[i++] = g;
  AdvantageResult a;
  if (alg.use_kl_in_reward) {
    if (state_.reward_kl_coef < 0) state_.reward_kl_coef = alg.kl_ctrl.kl_coef;
    const train::KlPenaltyType kl_type = alg.kl_penalty;
    double seq_kl_sum = 0;
    for (int64_t i = 0; i < B; ++i) {
      const train::TrainSample& smp = *samples[i];
      const int64_t n = smp.response_len();
      GRPO_CHECK(static_cast<int64_t>(smp.old_logprobs.size()) == n && static_cast<int64_t>(smp.ref_logprobs.size()) == n,
                 "[train] the KL penalty in the reward needs old and reference log-probs of sample ", i);
      double kl_sum = 0;
      for (int64_t t = 0; t < n; ++t) {
        if (!smp.response_mask.empty() && !smp.response_mask[t]) continue;  // tool tokens: no penalty (verl)
        const double kl = train::kl_penalty(smp.old_logprobs[t], smp.ref_logprobs[t], kl_type).value;
        rewards[i * T + t] -= state_.reward_kl_coef * kl;
        kl_sum += kl;
      }
      seq_kl_sum += kl_sum / (static_cast<double>(smp.model_tokens()) + 1e-8);
    }
    a.kl_in_reward = true;
    a.reward_kl_penalty = seq_kl_sum / static_cast<double>(std::max<int64_t>(B, 1));
    a.reward_kl_coeff = state_.reward_kl_coef;
    if (alg.kl_ctrl.type ==
        train::KlController::Adaptive) {  // verl's AdaptiveKLController, n_steps = the batch's responses
      const double error = std::clamp(a.reward_kl_penalty / alg.kl_ctrl.target_kl - 1.0, -0.2, 0.2);
      state_.reward_kl_coef *= 1.0 + error * static_cast<double>(B) / static_cast<double>(alg.kl_ctrl.horizon);
    }
  }
  for (int64_t i = 0; i < B; ++i) {
    const int64_t n = samples[i]->response_len();
    const std::vector<uint8_t>& rm = samples[i]->response_mask;
    for (int64_t t = 0; t < n; ++t) mask[i * T + t] = rm.empty() || rm[t] ? 1.0 : 0.0;
    if (n > 0) rewards[i * T + n - 1] += batch.rewards[i];
  }
  std::vector<double> baselines(batch.reward_baselines.begin(), batch.reward_baselines.end());
  train::AdvantageInputs in;
  in.B = B, in.T = T;
  in.token_level_rewards = rewards;
  in.response_mask = mask;
  in.group = group;
  in.reward_baselines = baselines;
  const train::TokenAdvantages ta = train::estimate_advantages(advantage_options(cfg_), in);
  for (int64_t i = 0; i < B; ++i) {
    train::TrainSample& smp = *samples[i];
    const int64_t n = smp.response_len();
    smp.token_advantages.assign(ta.advantages.begin() + i * T, ta.advantages.begin() + i * T + n);
    smp.advantage = n > 0 ? smp.token_advantages[0] : 0.0f;
    a.token_advantages.insert(a.token_advantages.end(), ta.advantages.begin() + i * T, ta.advantages.begin() + i * T + n);
  }
  a.seconds = seconds_since(t0);
  return a;
}

// Mini-batches of ppo_mini_batch_size prompts (x n responses), group by group.
std::vector<std::vector<train::TrainSample>> GrpoTrainer::split_minibatches(StepBatch& batch) {
  const int64_t groups_per_mb =
      std::max<int64_t>(1, std::min(cfg_.actor_rollout_ref.actor.ppo_mini_batch_size, cfg_.data.train_batch_size));
  std::vector<std::vector<train::TrainSample>> minibatches;
  for (size_t g = 0, off = 0; g < batch.group_sizes.size();) {
    std::vector<train::TrainSample> mb;
    for (int64_t k = 0; k < groups_per_mb && g < batch.group_sizes.size(); ++k, ++g)
      for (int64_t j = 0; j < batch.group_sizes[g]; ++j) mb.push_back(std::move(batch.samples[off++]));
    minibatches.push_back(std::move(mb));
  }
  return minibatches;
}

// Old log-probs only when they can differ from the current policy's (several updates per step), or when the
// rollout importance weights or the KL penalty in the reward read them; reference log-probs when a KL term
// (loss or reward) is used.
LogProbResult GrpoTrainer::compute_log_probs(std::vector<std::vector<train::TrainSample>>& minibatches) {
  const ActorConfig& ac = cfg_.actor_rollout_ref.actor;
  const bool need_old = ac.ppo_epochs > 1 || minibatches.size() > 1;
  LogProbResult r;
  std::vector<std::vector<float>> lp;
  int64_t sequences = 0;
  for (const auto& mb : minibatches) sequences += static_cast<int64_t>(mb.size());
  const RolloutCorrectionConfig& rc = cfg_.algorithm.rollout_correction;
  if (need_old || rc.rollout_is != train::RolloutIsLevel::Off || !rc.rollout_rs.empty() ||
      cfg_.algorithm.use_kl_in_reward) {
    GRPO_PROFILE("old_log_prob");
    comm::WaitLabel label(&comm_, "old_log_prob");
    ErrorContext what("computing old log-probs of ", sequences, " sequences");
    const auto t0 = Clock::now();
    for (auto& mb : minibatches) {  // each rank: the samples its updates train on
      actor_->share_logprobs(actor_->decoder(), mb, &lp);
      for (size_t i = 0; i < mb.size(); ++i) mb[i].old_logprobs = std::move(lp[i]);
    }
    // Several ranks: the KL penalty in the reward and rollout_rs read every sample's, as one process does.
    if (comm_.size() > 1 && (!rc.rollout_rs.empty() || cfg_.algorithm.use_kl_in_reward))
      all_gather_logprobs(comm_, minibatches, &train::TrainSample::old_logprobs);
    r.old_s = seconds_since(t0);
  }
  if (ref_decoder_) {
    GRPO_PROFILE("ref");
    comm::WaitLabel label(&comm_, "ref");
    ErrorContext what("computing reference log-probs of ", sequences, " sequences");
    const auto t0 = Clock::now();
    for (auto& mb : minibatches) {
      actor_->share_logprobs(*ref_decoder_, mb, &lp, &ref_micro_batching_);
      for (size_t i = 0; i < mb.size(); ++i) mb[i].ref_logprobs = std::move(lp[i]);
    }
    if (comm_.size() > 1 && cfg_.algorithm.use_kl_in_reward)
      all_gather_logprobs(comm_, minibatches, &train::TrainSample::ref_logprobs);
    ref_decoder_->release_workspace();  // its activations are not read again this step
    r.ref_s = seconds_since(t0);
  }
  return r;
}

UpdateResult GrpoTrainer::update(std::vector<std::vector<train::TrainSample>>& minibatches) {
  GRPO_PROFILE("update_actor");
  comm::WaitLabel label(&comm_, "update_actor");  // the actor labels its weight refresh "update_weights"
  const auto t0 = Clock::now();
  const ActorConfig& ac = cfg_.actor_rollout_ref.actor;
  const train::PolicyObjectiveConfig lcfg = policy_loss_config(cfg_);
  const train::LossAggMode agg = loss_agg_mode(cfg_);
  train::RolloutCorrection correction;
  correction.level = cfg_.algorithm.rollout_correction.rollout_is;
  correction.threshold = cfg_.algorithm.rollout_correction.rollout_is_threshold;
  correction.rejection = train::parse_rollout_rs(cfg_.algorithm.rollout_correction.rollout_rs,
                                                 cfg_.algorithm.rollout_correction.rollout_rs_threshold);
  const int64_t updates_per_step = ac.ppo_epochs * static_cast<int64_t>(minibatches.size());
  const int64_t total_updates = checked_mul(total_steps_, updates_per_step, "[config] optimizer steps of the run");
  const int64_t warmup = ac.optim.lr_warmup_steps >= 0
                             ? ac.optim.lr_warmup_steps
                             : static_cast<int64_t>(ac.optim.lr_warmup_steps_ratio * total_updates);
  int64_t sequences = 0, tokens = 0;
  for (const auto& mb : minibatches)
    for (const auto& s : mb) ++sequences, tokens += static_cast<int64_t>(s.tokens.size());
  ErrorContext what("updating the actor: ", minibatches.size(), " mini-batches x ", ac.ppo_epochs, " epochs, ",
                    sequences, " sequences, ", tokens, " tokens");
  UpdateResult r;
  for (int64_t e = 0; e < ac.ppo_epochs; ++e)
    for (auto& mb : minibatches) {
      if (mb.empty()) continue;
      r.lr = train::scheduled_lr(static_cast<float>(ac.optim.lr), actor_->optimizer().steps(), total_updates, warmup,
                                 ac.optim.warmup_style, static_cast<float>(ac.optim.min_lr_ratio));
      const train::UpdateStats u =
          actor_->update_policy(mb, lcfg, agg, static_cast<float>(ac.loss_scale_factor), correction, r.lr);
      if (e == 0) {  // the rollout mismatch of every trained token, once
        r.rollout.tokens += u.rollout.tokens;
        r.rollout.diff_sum += u.rollout.diff_sum;
        r.rollout.diff_sq += u.rollout.diff_sq;
        r.rollout.diff_max = std::max(r.rollout.diff_max, u.rollout.diff_max);
        r.rollout.is_sum += u.rollout.is_sum;
        r.rollout.is_min = r.pg_loss.empty() ? u.rollout.is_min : std::min(r.rollout.is_min, u.rollout.is_min);
        r.rollout.is_max = std::max(r.rollout.is_max, u.rollout.is_max);
        r.rollout.rs_tokens += u.rollout.rs_tokens;
        r.rollout.rs_rejected += u.rollout.rs_rejected;
      }
      r.skipped += u.skipped;
      r.pg_loss.push_back(u.pg_loss);
      r.kl_loss.push_back(u.kl);
      r.entropy.push_back(u.entropy);
      r.pg_clipfrac.push_back(u.pg_clipfrac);
      r.pg_clipfrac_lower.push_back(u.pg_clipfrac_lower);
      r.ppo_kl.push_back(u.ppo_kl);
      r.grad_norm.push_back(u.grad_norm);
      r.update_weights_s += u.update_weights_s;
      r.train_tokens += u.tokens;
      r.useful_tokens += u.useful_tokens;
    }
  // The next rollout does not hold the training activations.
  actor_->decoder().release_workspace();
  r.seconds = seconds_since(t0) - r.update_weights_s;
  return r;
}

// The rollout engine reads the actor's own weights (the bf16 shadow is refreshed by each optimizer step),
// so what is left to sync is the prefix cache: its k/v belong to the old weights. With ZeRO-3 the layers'
// parameters were sharded during training: the rollout needs them whole again.
SyncResult GrpoTrainer::sync_weights() {
  GRPO_PROFILE("update_weights");
  comm::WaitLabel label(&comm_, "update_weights");
  const auto t0 = Clock::now();
  actor_->gather_for_rollout();
  s_->engine->clear_prefix_cache();
  return {seconds_since(t0)};
}

nlohmann::json GrpoTrainer::train_step(int64_t step) {
  GRPO_PROFILE("step");
  ErrorContext what("step ", step, " of ", total_steps_);
  const auto t_step = Clock::now();
  const VisionWork vision_start = vision_work();
  const double cpu0 = cpu_seconds();
  const comm::CommStats comm0 = comm_.stats();
  comm_.forget_waits();                         // from here: this step's waits
  comm::WaitLabel outside(&comm_, "other");     // the phases label theirs
  StepBatch batch = collect_batch(step);
  // The step's rollouts are over (DAPO's generation batches shared the prefix cache until here): the KV
  // cache and the rollout's workspaces return their memory, so that the update does not hold it.
  s_->engine->release_memory();
  const VisionWork vision_gen = vision_work() - vision_start;
  if (batch.group_sizes.empty()) {
    const double step_s = seconds_since(t_step);
    nlohmann::json m = skipped_step_metrics(batch, step_s);
    add_step_costs(m, {{"gen", batch.gen_s}, {"reward", batch.reward_s}}, step_s, comm0, cpu0);
    return m;
  }
  const size_t generated = batch.samples.size();
  std::vector<std::vector<train::TrainSample>> minibatches = split_minibatches(batch);
  if (!opt_.quiet && seconds_since(t_step) >= 30.0)  // a long step: say where it is
    std::fprintf(stderr, "[train] step %lld: %zu samples generated and scored in %.0f s; log-probs and update...\n",
                 static_cast<long long>(step), generated, seconds_since(t_step));
  const LogProbResult lp = compute_log_probs(minibatches);
  const AdvantageResult adv = compute_advantages(batch, minibatches);
  const UpdateResult up = update(minibatches);
  const VisionWork vision_train = vision_work() - vision_start - vision_gen;
  const SyncResult sync = sync_weights();

  state_.skipped_steps += up.skipped;
  state_.consecutive_skips = up.skipped > 0 ? state_.consecutive_skips + 1 : 0;
  GRPO_CHECK(state_.consecutive_skips < 5, "[train] ", state_.consecutive_skips,
             " steps in a row had a non-finite loss or gradient and were skipped; stopping. Lower "
             "actor_rollout_ref.actor.optim.lr or check the data and rewards.");
  const double step_s = seconds_since(t_step);
  nlohmann::json m = step_metrics(batch, adv, minibatches, up, step_s);
  if (s_->weights->config().has_vision()) add_vision_metrics(m, vision_gen, vision_train);
  expected_response_tokens_ = std::max<int64_t>(1, static_cast<int64_t>(m.value("response_length/mean", 1.0)));
  // Disjoint phases; the actor's weight refresh after each optimizer step is update_weights, not update_actor.
  add_step_costs(m,
                 {{"gen", batch.gen_s},
                  {"reward", batch.reward_s},
                  {"adv", adv.seconds},
                  {"old_log_prob", lp.old_s},
                  {"ref", lp.ref_s},
                  {"update_actor", up.seconds},
                  {"update_weights", up.update_weights_s + sync.seconds}},
                 step_s, comm0, cpu0);
  return m;
}

void GrpoTrainer::add_step_costs(nlohmann::json& m, const std::map<std::string, double>& phase_s, double step_s,
                                 const comm::CommStats& comm_start, double cpu_start) {
  // Communication on the critical path, by the phase whose wait it was (labels: comm::WaitLabel above);
  // the waits outside the phases are under the label "other".
  std::map<std::string, double> comm_s;
  if (comm_.size() > 1) comm_s = comm_.take_critical_path_waits();
  // Each phase without its communication. A phase's share of communication is at most the phase's time:
  // an operation is filed under rank 0's last wait for it, so waits for one operation in two phases (a
  // prefetch waited for early, then again) can put more under a label than that phase lasted. What does
  // not fit there, and the waits outside the phases, fill at most the rest of the step; `other` is what
  // remains (prompt sampling, gathering the groups, batching, metrics). So the parts add up to the step,
  // none negative, however loaded the ranks are.
  double in_phases = 0, comm_unplaced = 0, comm_total = 0;
  for (const auto& [label, s] : comm_s)
    if (!phase_s.count(label)) comm_unplaced += s;
  for (const auto& [phase, s] : phase_s) {
    const auto c = comm_s.find(phase);
    const double waited = c != comm_s.end() ? c->second : 0.0;
    const double comm_in_phase = std::min(waited, s);
    comm_unplaced += waited - comm_in_phase;
    comm_total += comm_in_phase;
    m["timing_s/" + phase] = s - comm_in_phase;
    in_phases += s;
  }
  const double rest = std::max(0.0, step_s - in_phases);
  comm_unplaced = std::min(comm_unplaced, rest);
  comm_total += comm_unplaced;
  m["timing_s/other"] = rest - comm_unplaced;
  m["timing_s/step"] = step_s;
  // [bytes sent, CPU seconds] of this rank during the step, summed over the ranks.
  const comm::CommStats c = comm_.stats();
  double v[] = {static_cast<double>(c.bytes_sent - comm_start.bytes_sent), cpu_seconds() - cpu_start};
  if (comm_.size() > 1) {
    comm_.all_reduce_sum(v, 2);
    m["timing_s/comm"] = comm_total;
    m["perf/comm_share"] = comm_total / std::max(1e-9, step_s);
    m["perf/comm_bytes"] = v[0];
  }
  m["perf/cpu_time_s"] = v[1];  // all ranks
}

// verl's metric names (grpo-math.md).
nlohmann::json GrpoTrainer::step_metrics(const StepBatch& batch, const AdvantageResult& adv,
                                         const std::vector<std::vector<train::TrainSample>>& minibatches,
                                         const UpdateResult& up, double step_s) {
  nlohmann::json m;
  const std::vector<double> rew(batch.rewards.begin(), batch.rewards.end());
  const std::vector<double> sc(batch.scores.begin(), batch.scores.end());
  const std::vector<double>& advs = adv.token_advantages;
  std::vector<double> lens;
  for (const auto& mb : minibatches)
    for (const auto& s : mb) lens.push_back(static_cast<double>(s.model_tokens()));  // verl: response_mask's sum
  add_summary(m, "critic/rewards", rew);
  add_summary(m, "critic/score", sc);
  add_summary(m, "critic/advantages", advs);
  add_summary(m, "response_length", lens);
  if (!batch.turns.empty()) add_turn_metrics(m, batch.turns);
  // Over the samples trained on (groups dropped by dynamic sampling are not counted).
  m["response_length/clip_ratio"] = static_cast<double>(std::accumulate(batch.truncated.begin(), batch.truncated.end(), 0)) /
                                    std::max<double>(1.0, static_cast<double>(batch.truncated.size()));
  for (size_t f = 0; f < batch.function_names.size(); ++f) {
    const std::vector<double> v(batch.per_function[f].begin(), batch.per_function[f].end());
    m["reward/" + batch.function_names[f] + "/mean"] = mean(v);
  }
  for (const auto& [key, sum_count] : batch.reward_extras)
    m["reward/" + key + "/mean"] = sum_count.first / static_cast<double>(std::max<int64_t>(1, sum_count.second));
  m["actor/pg_loss"] = mean(up.pg_loss);
  m["actor/kl_loss"] = mean(up.kl_loss);
  m["actor/entropy"] = mean(up.entropy);
  m["actor/pg_clipfrac"] = mean(up.pg_clipfrac);
  m["actor/pg_clipfrac_lower"] = mean(up.pg_clipfrac_lower);
  if (adv.kl_in_reward) {
    m["actor/reward_kl_penalty"] = adv.reward_kl_penalty;
    m["actor/reward_kl_penalty_coeff"] = adv.reward_kl_coeff;
  }
  // Rollout vs training probabilities of the same tokens (verl's names), and the rollout importance weights.
  const train::RolloutMismatch& rm = up.rollout;
  if (rm.tokens > 0) {
    const double diff_mean = rm.diff_sum / rm.tokens;
    m["training/rollout_probs_diff_mean"] = diff_mean;
    m["training/rollout_probs_diff_max"] = rm.diff_max;
    m["training/rollout_probs_diff_std"] = std::sqrt(std::max(0.0, rm.diff_sq / rm.tokens - diff_mean * diff_mean));
    if (cfg_.algorithm.rollout_correction.rollout_is != train::RolloutIsLevel::Off) {
      m["rollout_corr/rollout_is_mean"] = rm.is_sum / rm.tokens;
      m["rollout_corr/rollout_is_min"] = rm.is_min;
      m["rollout_corr/rollout_is_max"] = rm.is_max;
    }
    if (!cfg_.algorithm.rollout_correction.rollout_rs.empty())
      m["rollout_corr/rollout_rs_masked_fraction"] = rm.rs_tokens > 0 ? rm.rs_rejected / rm.rs_tokens : 0.0;
  }
  m["actor/ppo_kl"] = mean(up.ppo_kl);
  m["actor/grad_norm"] = mean(up.grad_norm);
  m["actor/lr"] = up.lr;
  // Useful / computed tokens over every update of the step (train/packing.h).
  m["perf/packing_efficiency"] =
      up.train_tokens > 0 ? static_cast<double>(up.useful_tokens) / static_cast<double>(up.train_tokens) : 1.0;
  m["perf/throughput"] = (batch.gen_tokens + batch.prompt_tokens) / std::max(1e-9, step_s * comm_.size());
  m["perf/rollout_tokens_per_s"] = batch.gen_tokens / std::max(1e-9, batch.slowest_gen_s);
  m["perf/train_tokens"] = up.train_tokens;
  m["perf/peak_rss_bytes"] = peak_rss_bytes();
  m["training/epoch"] = state_.epoch;
  m["training/skipped_steps"] = state_.skipped_steps;
  m["training/gen_batches"] = batch.gen_batches;
  m["training/groups_dropped"] = batch.groups_dropped;
  m["training/groups_kept"] = batch.group_sizes.size();
  if (!batch.reward_baselines.empty()) {  // remax: the greedy responses generated as baselines
    const std::vector<double> base(batch.reward_baselines.begin(), batch.reward_baselines.end());
    m["critic/reward_baselines/mean"] = mean(base);
    m["response_length/greedy_baseline_tokens"] = batch.greedy_tokens;
  }
  for (size_t f = 0; f < batch.function_names.size(); ++f)
    m["reward/" + batch.function_names[f] + "/failures"] = batch.reward_failures[f];
  return m;
}

// A step whose DAPO filtering kept no group within its generation batches: nothing to train on, so no
// advantages, no update and no actor metrics; what was generated and how long it took is still logged.
nlohmann::json GrpoTrainer::skipped_step_metrics(const StepBatch& batch, double step_s) {
  nlohmann::json m;
  for (size_t f = 0; f < batch.function_names.size(); ++f)
    m["reward/" + batch.function_names[f] + "/failures"] = batch.reward_failures[f];
  m["perf/throughput"] = (batch.gen_tokens + batch.prompt_tokens) / std::max(1e-9, step_s);
  m["perf/rollout_tokens_per_s"] = batch.gen_tokens / std::max(1e-9, batch.slowest_gen_s);
  m["perf/train_tokens"] = 0;
  m["perf/peak_rss_bytes"] = peak_rss_bytes();
  m["training/epoch"] = state_.epoch;
  m["training/skipped_steps"] = state_.skipped_steps;
  m["training/gen_batches"] = batch.gen_batches;
  m["training/groups_dropped"] = batch.groups_dropped;
  m["training/groups_kept"] = 0;
  return m;
}

}  // namespace grpo
