// Supervised fine-tuning (see sft.h).
#include "grpo/sft.h"

#include <chrono>
#include <cstdio>
#include <numeric>

#include "core/error_context.h"
#include "core/files.h"
#include "comm/communicator.h"
#include "core/rng.h"
#include "grpo/distributed.h"
#include "grpo/evaluate.h"
#include "report/metrics.h"
#include "data/prompting.h"
#include "report/report.h"
#include "grpo/run_folder.h"
#include "grpo/session.h"
#include "grpo/sft_conversation.h"
#include "report/step_logger.h"
#include "model/checkpoint.h"
#include "train/actor.h"

namespace grpo {

std::string sft_config_problem(const Config& c) {
  if (c.sft.stop_at_val_accuracy <= 0) return "";
  if (c.trainer.test_freq <= 0)
    return cat("[config] sft.stop_at_val_accuracy = ", c.sft.stop_at_val_accuracy,
               " is checked at each validation: it needs trainer.test_freq > 0 (validate every that many steps), got ",
               c.trainer.test_freq);
  if (c.data.val_files.empty())
    return cat("[config] sft.stop_at_val_accuracy = ", c.sft.stop_at_val_accuracy,
               " is checked on the held-out data: it needs data.val_files");
  return "";
}

SftSummary run_sft(const Config& cfg, bool quiet, bool overwrite) {
  using Clock = std::chrono::steady_clock;
  const auto t_run = Clock::now();
  ErrorContext what("setting up the SFT run");
  if (const std::string problem = sft_config_problem(cfg); !problem.empty()) throw Error(problem);
  // Several ranks: every rank takes the same batches and the actor splits each across them (train/actor.h);
  // rank 0 alone prints and writes the run folder.
  comm::Communicator& comm = comm::world();
  comm.set_timeout(cfg.trainer.comm_timeout_s);
  check_world(cfg, comm);
  const bool console = comm.rank() == 0;
  quiet = quiet || !console;
  const RunFolderPlan plan = plan_sft_run_folder(cfg, overwrite);  // changes nothing yet; the same on every rank
  comm.barrier();                                                  // every rank has looked before rank 0 changes it
  const std::string run_dir = plan.run_dir;
  auto s = Session::open(cfg, /*require_response=*/true, SessionRollout::ValidateOnly);
  if (console) {
    prepare_run_folder(plan);
    write_file_atomic(run_dir + "/config.yaml", config_to_yaml(cfg));
  }
  const SftConfig& sc = cfg.sft;
  const bool chat = cfg.data.apply_chat_template;

  std::vector<train::TrainSample> data;  // pictures loaded per batch (below), not held for the whole set
  std::vector<const Example*> data_examples;
  int64_t too_long = 0;
  for (const Example& ex : s->train.examples) {
    std::vector<train::TrainSample> samples;
    if (!ex.response_messages.is_null()) {  // a conversation with tool calls: one sample per assistant turn
      samples = conversation_samples(*s->tokenizer, ex, chat);
    } else {
      train::TrainSample t;
      t.tokens = ex.prompt_ids;
      t.prompt_len = t.tokens.size();
      std::vector<int32_t> r = encode_response(*s->tokenizer, ex.response, chat);
      t.tokens.insert(t.tokens.end(), r.begin(), r.end());
      samples.push_back(std::move(t));
    }
    for (auto& t : samples) {
      if (static_cast<int64_t>(t.tokens.size()) > sc.max_length) {
        ++too_long;
        continue;
      }
      data.push_back(std::move(t));
      data_examples.push_back(&ex);
    }
  }
  if (too_long && console)
    std::fprintf(stderr, "[sft] %lld sequences (each assistant turn of a conversation counts one) longer than "
                 "sft.max_length %lld filtered out\n",
                 static_cast<long long>(too_long), static_cast<long long>(sc.max_length));
  GRPO_CHECK(!data.empty(), "[sft] ", data_files_text(cfg.data.train_files), ": no usable example");

  DecoderOptions dopt;
  dopt.mode = s->mode;
  dopt.checkpoint_activations = cfg.actor_rollout_ref.model.enable_gradient_checkpointing;
  if (!cfg.actor_rollout_ref.model.use_fused_kernels) dopt.kernels = &plain_kernels();
  train::MicroBatching mb;
  mb.dynamic = true;
  mb.max_tokens = std::max(cfg.actor_rollout_ref.actor.ppo_max_token_len_per_gpu, sc.max_length);
  train::AdamWConfig adam;
  adam.lr = static_cast<float>(sc.lr);
  adam.weight_decay = static_cast<float>(sc.weight_decay);
  adam.grad_clip = static_cast<float>(sc.grad_clip);
  train::Actor actor(*s->weights, dopt, mb, adam, &comm, data_parallel_config(cfg),
                     cfg.actor_rollout_ref.actor.freeze_vision_tower || s->lora, s->lora.get());

  const int64_t N = data.size(), bs = std::min<int64_t>(sc.batch_size, N);
  const int64_t per_epoch = (N + bs - 1) / bs, total = per_epoch * sc.epochs;
  const int64_t warmup = static_cast<int64_t>(sc.lr_warmup_steps_ratio * total);
  std::unique_ptr<StepLogger> metrics;  // rank 0
  if (console) {
    StepLoggerOptions lo;
    lo.loggers = cfg.trainer.logger;
    lo.run_dir = run_dir;
    lo.project_name = cfg.trainer.project_name;
    lo.experiment_name = cfg.trainer.experiment_name;
    lo.truncate_jsonl = true;
    lo.quiet = quiet;
    metrics = std::make_unique<StepLogger>(lo);
  }
  // Held-out accuracy (greedy) of the model as it is now, logged at `at_step`. Collective. The actor's
  // activations are given back first and the rollout's KV cache after, so that validation adds to neither
  // phase's peak; with ZeRO-3 the rollout reads the whole model (training drops it again at its next forward).
  const bool has_val = !s->val.examples.empty();
  auto validate = [&](int64_t at_step) {
    actor.decoder().release_workspace();
    actor.gather_for_rollout();
    s->engine->clear_prefix_cache();
    EvalOptions eo;
    eo.sampling.temperature = 0;
    eo.max_new_tokens = static_cast<int32_t>(cfg.data.max_response_length);
    eo.stop_ids = s->stop_ids;
    eo.pictures = [&s](const Example& ex) { return s->pictures(ex, s->val); };
    if (s->tools) eo.turns = s->tools->options;
    ErrorContext validating("validation: ", s->val.examples.size(), " prompts");
    EvalResult r = evaluate(comm, *s->engine, s->val.examples, eo, nullptr);
    s->engine->release_memory();
    nlohmann::json v = {{"val/accuracy", r.accuracy}, {"val/response_length/mean", r.response_length},
                        {"timing_s/testing", r.seconds}};
    if (s->tools) v["val/tools/call_share"] = r.tool_call_share;
    if (metrics)
      metrics->log(at_step, v,
                   cat("[sft] held-out ", console_fields(v, {{"accuracy", "val/accuracy", "%.3f"}}), " on ",
                       r.examples, " prompts after step ", at_step));
    return r;
  };

  std::vector<int64_t> order(N);
  std::vector<train::TrainSample> batch;
  SftSummary sum;
  int64_t step = 0;
  int64_t validated_at = -1;  // the step of the latest validation
  EvalResult last_val;
  bool stop = false;  // sft.stop_at_val_accuracy reached
  for (int64_t epoch = 0; epoch < sc.epochs && !stop; ++epoch) {
    std::iota(order.begin(), order.end(), 0);
    Rng rng({static_cast<uint64_t>(cfg.trainer.seed), static_cast<uint64_t>(epoch), 0x5f7ull});
    for (int64_t i = N - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
    for (int64_t b = 0; b < per_epoch && !stop; ++b) {
      batch.clear();
      for (int64_t i = b * bs; i < std::min(N, (b + 1) * bs); ++i) batch.push_back(data[order[i]]);
      for (int64_t j : actor.share(batch))  // each rank decodes the pictures of its own share only
        batch[j].pictures = s->pictures(*data_examples[order[b * bs + j]], s->train);
      const float lr = train::scheduled_lr(static_cast<float>(sc.lr), step, total, warmup, "cosine", 0.1f);
      auto t0 = Clock::now();
      train::UpdateStats u;
      {
        ErrorContext updating("SFT step ", step + 1, " of ", total, ": ", batch.size(), " sequences");
        u = actor.update_sft(batch, lr);
      }
      const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
      ++step;
      sum.final_loss = u.loss;
      const double tokens_per_s = u.tokens / std::max(1e-9, secs * comm.size());
      const nlohmann::json m = {{"train/loss", u.loss}, {"train/lr", lr}, {"actor/grad_norm", u.grad_norm},
                                {"actor/entropy", u.entropy}, {"perf/throughput", tokens_per_s},
                                {"perf/packing_efficiency", u.packing_efficiency}, {"timing_s/step", secs},
                                {"training/epoch", epoch}};
      char line[160] = "";
      if (step % 10 == 0 || step == total)
        std::snprintf(line, sizeof line, "[sft] step %lld/%lld | loss %.4f | lr %.2e | %.0f tokens/s",
                      static_cast<long long>(step), static_cast<long long>(total), u.loss, lr, tokens_per_s);
      if (metrics) metrics->log(step, m, line);
      if (has_val && cfg.trainer.test_freq > 0 && step % cfg.trainer.test_freq == 0 && step < total) {
        last_val = validate(step);
        validated_at = step;
        stop = sc.stop_at_val_accuracy > 0 && last_val.accuracy >= sc.stop_at_val_accuracy;
        if (stop && console)
          std::fprintf(stderr, "[sft] held-out accuracy %.3f reached sft.stop_at_val_accuracy %.3f: stopping at "
                       "step %lld of %lld\n", last_val.accuracy, sc.stop_at_val_accuracy,
                       static_cast<long long>(step), static_cast<long long>(total));
      }
    }
  }
  sum.steps = step;
  sum.stopped_early = stop;
  sum.model_dir = run_dir + (s->lora ? "/adapter" : "/model");
  std::vector<std::string> extra;
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "preprocessor_config.json"}) {
    std::string p = cfg.actor_rollout_ref.model.path + "/" + f;
    if (file_exists(p)) extra.push_back(p);
  }
  actor.gather_weights();
  if (console && s->lora)  // the frozen base stays where it is; the adapter in PEFT's layout
    s->lora->save(sum.model_dir, cfg.actor_rollout_ref.model.path);
  else if (console)
    save_checkpoint(sum.model_dir, s->weights->config(), s->weights->named_tensors(), DType::F32, 0, extra);
  comm.barrier();
  if (has_val) {
    if (validated_at != step) last_val = validate(step);  // the saved model is the one validated last
    sum.val_accuracy = last_val.accuracy;
    if (s->tools) sum.val_tool_call_share = last_val.tool_call_share;
  }
  sum.seconds = std::chrono::duration<double>(Clock::now() - t_run).count();
  if (metrics && metrics->jsonl()) {  // the report is drawn from metrics.jsonl
    ReportInfo info;
    info.title = "grpo.cpp SFT: " + cfg.trainer.project_name + " / " + cfg.trainer.experiment_name;
    info.kind = ReportKind::Sft;
    info.config_yaml = config_to_yaml(cfg);
    write_report(metrics->jsonl_path(), run_dir + "/report.html", info);
  }
  return sum;
}

}  // namespace grpo
