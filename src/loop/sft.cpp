// Supervised fine-tuning (see sft.h).
#include "loop/sft.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <numeric>

#include "core/error_context.h"
#include "core/files.h"
#include "comm/communicator.h"
#include "core/rng.h"
#include "loop/distributed.h"
#include "loop/evaluate.h"
#include "loop/flat_shards.h"
#include "loop/rank_model_files.h"
#include "report/metrics.h"
#include "data/prompting.h"
#include "report/report.h"
#include "config/part_options.h"
#include "loop/run_setup.h"
#include "loop/session.h"
#include "loop/sft_conversation.h"
#include "report/step_logger.h"
#include "model/checkpoint.h"
#include "train/actor.h"

namespace grpo {

namespace {

using Clock = std::chrono::steady_clock;

// The training sequences of the SFT data: prompt + response tokens (a conversation with tool calls gives one
// per assistant turn), those longer than sft.max_length filtered out with a count. Pictures are loaded per
// batch, not held for the whole set.
struct SftData {
  std::vector<train::TrainSample> samples;
  std::vector<const Example*> examples;  // [samples] the example each comes from (its pictures)
};

SftData sft_data(const Config& cfg, const Session& s, bool console) {
  const bool chat = cfg.data.apply_chat_template;
  SftData d;
  int64_t too_long = 0;
  for (const Example& ex : s.train.examples) {
    std::vector<train::TrainSample> samples;
    if (!ex.response_messages.is_null()) {  // a conversation with tool calls: one sample per assistant turn
      samples = conversation_samples(*s.tokenizer, ex, chat);
    } else {
      train::TrainSample t;
      t.tokens = ex.prompt_ids;
      t.prompt_len = t.tokens.size();
      std::vector<int32_t> r = encode_response(*s.tokenizer, ex.response, chat);
      t.tokens.insert(t.tokens.end(), r.begin(), r.end());
      samples.push_back(std::move(t));
    }
    for (auto& t : samples) {
      if (static_cast<int64_t>(t.tokens.size()) > cfg.sft.max_length) {
        ++too_long;
        continue;
      }
      d.samples.push_back(std::move(t));
      d.examples.push_back(&ex);
    }
  }
  if (too_long && console)
    std::fprintf(stderr,
                 "[sft] %lld sequences (each assistant turn of a conversation counts one) longer than "
                 "sft.max_length %lld filtered out\n",
                 static_cast<long long>(too_long), static_cast<long long>(cfg.sft.max_length));
  GRPO_CHECK(!d.samples.empty(), "[sft] ", data_files_text(cfg.data.train_files), ": no usable example");
  return d;
}

// One SFT run's loop: its set-up, its data and actor, and the phases of a step (train, validate, save).
class SftLoop {
 public:
  SftLoop(const Config& cfg, RunSetup& run, train::Actor& actor, SftData& data)
      : cfg_(cfg), run_(run), s_(*run.session), actor_(actor), data_(data) {
    N_ = static_cast<int64_t>(data_.samples.size());
    bs_ = std::min<int64_t>(cfg_.sft.batch_size, N_);
    per_epoch_ = (N_ + bs_ - 1) / bs_;
    total_ = per_epoch_ * cfg_.sft.epochs;
    warmup_ = static_cast<int64_t>(cfg_.sft.lr_warmup_steps_ratio * total_);
  }

  // Trains every epoch (or until sft.stop_at_val_accuracy), saves the model, validates it.
  SftSummary run() {
    SftSummary sum;
    const bool has_val = !s_.val.examples.empty();
    std::vector<int64_t> order(N_);
    for (int64_t epoch = 0; epoch < cfg_.sft.epochs && !stopped_; ++epoch) {
      std::iota(order.begin(), order.end(), 0);
      Rng rng({static_cast<uint64_t>(cfg_.trainer.seed), static_cast<uint64_t>(epoch), 0x5f7ull});
      for (int64_t i = N_ - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
      for (int64_t b = 0; b < per_epoch_ && !stopped_; ++b) {
        sum.final_loss = train_step(order, b, epoch);
        if (has_val && cfg_.trainer.test_freq > 0 && step_ % cfg_.trainer.test_freq == 0 && step_ < total_)
          validate_and_maybe_stop();
      }
    }
    sum.steps = step_;
    sum.stopped_early = stopped_;
    sum.model_dir = save_model();
    if (has_val) {
      if (validated_at_ != step_) last_val_ = validate(step_);  // the saved model is the one validated last
      sum.val_accuracy = last_val_.accuracy;
      if (s_.tools) sum.val_tool_call_share = last_val_.tool_call_share;
    }
    return sum;
  }

 private:
  // Step step_ + 1: batch b of the epoch's order. Returns the loss.
  double train_step(const std::vector<int64_t>& order, int64_t b, int64_t epoch) {
    batch_.clear();
    for (int64_t i = b * bs_; i < std::min(N_, (b + 1) * bs_); ++i) batch_.push_back(data_.samples[order[i]]);
    for (int64_t j : actor_.share(batch_))  // each rank decodes the pictures of its own share only
      batch_[j].pictures = s_.pictures(*data_.examples[order[b * bs_ + j]], s_.train);
    const float lr =
        train::scheduled_lr(static_cast<float>(cfg_.sft.lr), step_, total_, warmup_, train::WarmupStyle::Cosine, 0.1f);
    const auto t0 = Clock::now();
    train::UpdateStats u;
    {
      ErrorContext updating("SFT step ", step_ + 1, " of ", total_, ": ", batch_.size(), " sequences");
      u = actor_.update_sft(batch_, lr);
    }
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    ++step_;
    const double tokens_per_s = u.tokens / std::max(1e-9, secs * run_.comm->size());
    const nlohmann::json m = {{"train/loss", u.loss},
                              {"train/lr", lr},
                              {"actor/grad_norm", u.grad_norm},
                              {"actor/entropy", u.entropy},
                              {"perf/throughput", tokens_per_s},
                              {"perf/packing_efficiency", u.packing_efficiency},
                              {"timing_s/step", secs},
                              {"training/epoch", epoch}};
    char line[160] = "";
    if (step_ % 10 == 0 || step_ == total_)
      std::snprintf(line, sizeof line, "[sft] step %lld/%lld | loss %.4f | lr %.2e | %.0f tokens/s",
                    static_cast<long long>(step_), static_cast<long long>(total_), u.loss, lr, tokens_per_s);
    if (run_.logger) run_.logger->log(step_, m, line);
    return u.loss;
  }

  void validate_and_maybe_stop() {
    last_val_ = validate(step_);
    validated_at_ = step_;
    const double target = cfg_.sft.stop_at_val_accuracy;
    stopped_ = target > 0 && last_val_.accuracy >= target;
    if (stopped_ && run_.console)
      std::fprintf(stderr,
                   "[sft] held-out accuracy %.3f reached sft.stop_at_val_accuracy %.3f: stopping at "
                   "step %lld of %lld\n",
                   last_val_.accuracy, target, static_cast<long long>(step_), static_cast<long long>(total_));
  }

  // Held-out accuracy (greedy) of the model as it is now, logged at `at_step`. Collective. The actor's
  // activations are given back first and the rollout's KV cache after, so that validation adds to neither
  // phase's peak; with ZeRO-3 the rollout reads the whole model (training drops it again at its next forward).
  EvalResult validate(int64_t at_step) {
    actor_.decoder().release_workspace();
    actor_.gather_for_rollout();
    s_.engine->clear_prefix_cache();
    EvalOptions eo;
    eo.sampling.temperature = 0;
    eo.max_new_tokens = static_cast<int32_t>(cfg_.data.max_response_length);
    eo.stop_ids = s_.stop_ids;
    eo.pictures = [this](const Example& ex) { return s_.pictures(ex, s_.val); };
    if (s_.tools) eo.turns = s_.tools->options;
    ErrorContext validating("validation: ", s_.val.examples.size(), " prompts");
    EvalResult r = evaluate(*run_.comm, *s_.engine, s_.val.examples, eo, nullptr);
    s_.engine->release_memory();
    nlohmann::json v = {
        {"val/accuracy", r.accuracy}, {"val/response_length/mean", r.response_length}, {"timing_s/testing", r.seconds}};
    if (s_.tools) v["val/tools/call_share"] = r.tool_call_share;
    if (run_.logger)
      run_.logger->log(at_step, v,
                       cat("[sft] held-out ", console_fields(v, {{"accuracy", "val/accuracy", "%.3f"}}), " on ",
                           r.examples, " prompts after step ", at_step));
    return r;
  }

  // <run>/model (Hugging Face folder with the base's tokenizer and preprocessor files), or with LoRA
  // <run>/adapter in PEFT's layout (the frozen base stays where it is), written by rank 0. On several ranks
  // the model is written by every rank at once, nothing gathered (rank_model_files.h): its files in parts,
  // and under mixed precision the f32 masters in master/ (a GRPO run started from it reads them). Collective.
  std::string save_model() {
    const std::string dir = run_.run_dir() + (s_.lora ? "/adapter" : "/model");
    std::vector<std::string> extra;
    for (const char* f : {"tokenizer.json", "tokenizer_config.json", "preprocessor_config.json"}) {
      std::string p = cfg_.actor_rollout_ref.model.path + "/" + f;
      if (file_exists(p)) extra.push_back(p);
    }
    if (run_.comm->size() > 1 && !s_.lora) {  // every rank writes its part, nothing gathered on rank 0
      const ShardedCheckpoint ck = stage_rank_model_files(dir + ".stage", *s_.weights, actor_, *run_.comm);
      run_.comm->barrier();  // every rank's files are staged before rank 0 assembles the folder
      if (run_.console) {
        save_checkpoint_from_parts(dir, s_.weights->config(), ck.model_dtype, ck.parts, ck.stage_dir + "/model", extra,
                                   [&](const std::string& partial) {
                                     if (!ck.masters.empty())
                                       place_flat_shards(master_shards(), ck.stage_dir, partial, ck.masters,
                                                         ck.layout_numel);
                                   });
        std::error_code ec;
        std::filesystem::remove_all(ck.stage_dir, ec);
      }
    } else {
      actor_.with_whole_weights([&] {
        if (run_.console && s_.lora)
          s_.lora->save(dir, cfg_.actor_rollout_ref.model.path);
        else if (run_.console)
          save_checkpoint(dir, s_.weights->config(), s_.weights->named_tensors(), DType::F32, 0, extra);
      });
    }
    run_.comm->barrier();
    return dir;
  }

  const Config& cfg_;
  RunSetup& run_;
  Session& s_;
  train::Actor& actor_;
  SftData& data_;
  int64_t N_ = 0, bs_ = 0, per_epoch_ = 0, total_ = 0, warmup_ = 0;
  std::vector<train::TrainSample> batch_;
  int64_t step_ = 0;
  int64_t validated_at_ = -1;  // the step of the latest validation
  EvalResult last_val_;
  bool stopped_ = false;  // sft.stop_at_val_accuracy reached
};

}  // namespace

SftSummary run_sft(const Config& cfg, bool quiet, bool overwrite) {
  const auto t_run = Clock::now();
  if (const std::string problem = sft_config_problem(cfg); !problem.empty()) throw Error(problem);
  // Several ranks: every rank takes the same batches and the actor splits each across them (train/actor.h);
  // rank 0 alone prints and writes the run folder.
  RunStartOptions start;
  start.overwrite = overwrite;
  start.quiet = quiet;
  RunSetup run = open_run(cfg, TrainingKind::Sft, start);
  Session& s = *run.session;
  std::unique_ptr<train::Actor> actor;
  SftData data;
  {
    ErrorContext what("setting up the SFT run");
    data = sft_data(cfg, s, run.console);
    actor = std::make_unique<train::Actor>(*s.weights, decoder_options(cfg), sft_micro_batching(cfg),
                                           sft_adamw_config(cfg), run.comm, data_parallel_config(cfg),
                                           cfg.actor_rollout_ref.actor.freeze_vision_tower || s.lora, s.lora.get());
  }
  start_run(run, cfg, TrainingKind::Sft);
  SftSummary sum = SftLoop(cfg, run, *actor, data).run();
  sum.seconds = std::chrono::duration<double>(Clock::now() - t_run).count();
  finish_run(run.logger.get(), run.run_dir(), cfg, TrainingKind::Sft);
  return sum;
}

}  // namespace grpo
