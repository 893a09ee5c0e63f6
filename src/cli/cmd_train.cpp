// `grpo train` (GRPO post-training) and `grpo sft` (supervised warm start): one YAML config with verl's
// key names plus --set overrides; see examples/ and `grpo train --help-config`.
#include <cstdio>
#include <sstream>

#include "cli/command.h"
#include "comm/communicator.h"
#include "core/threads.h"
#include "grpo/config.h"
#include "grpo/sft.h"
#include "grpo/trainer.h"

namespace grpo::cli {
namespace {

struct TrainArgs {
  std::string config;
  std::vector<std::string> sets;
  std::string resume;
  std::vector<int64_t> profile_steps;
  bool profile = false, help_config = false, overwrite = false, ignore_memory_plan = false;
  int threads = 0;
};

void run_train(const TrainArgs& a) {
  if (a.help_config) {
    std::printf("%s", config_help().c_str());
    return;
  }
  GRPO_CHECK(!a.config.empty(), "[train] a config file is required (see examples/arith-grpo.yaml)");
  if (a.threads > 0) set_num_threads(a.threads);
  Config cfg = load_config(a.config, a.sets);
  TrainOptions opt;
  opt.resume_dir = a.resume;
  opt.overwrite = a.overwrite;
  opt.ignore_memory_plan = a.ignore_memory_plan;
  opt.profile_steps = a.profile_steps;
  if (a.profile && opt.profile_steps.empty()) opt.profile_steps = {2};
  GrpoTrainer trainer(cfg, opt);
  TrainSummary s = trainer.run();
  if (comm::launch_rank() == 0)
    std::fprintf(stderr, "[train] %lld steps in %.1fs; run folder %s\n", static_cast<long long>(s.steps), s.seconds,
                 opt.resume_dir.empty() ? cfg.trainer.default_local_dir.c_str() : opt.resume_dir.c_str());
}

void run_sft_cmd(const TrainArgs& a) {
  if (a.threads > 0) set_num_threads(a.threads);
  Config cfg = load_config(a.config, a.sets);
  SftSummary s = run_sft(cfg, /*quiet=*/false, a.overwrite);
  if (comm::launch_rank() == 0)
    std::fprintf(stderr, "[sft] %lld steps in %.1fs; model saved to %s\n", static_cast<long long>(s.steps), s.seconds,
                 s.model_dir.c_str());
}

void setup_train(CLI::App& app) {
  auto a = std::make_shared<TrainArgs>();
  CLI::App* t = app.add_subcommand("train", "GRPO post-training from a YAML config (verl key names)");
  t->add_option("config", a->config, "YAML config (e.g. examples/arith-grpo.yaml)");
  t->add_option("--set", a->sets, "Override a key: --set actor_rollout_ref.actor.optim.lr=1e-5 (repeatable)");
  t->add_option("--resume", a->resume, "Resume the run in this folder from its latest checkpoint");
  t->add_flag("--overwrite", a->overwrite,
              "The run folder holds an earlier run: delete its outputs (metrics, checkpoints, report) and start over");
  t->add_flag("--profile", a->profile, "Write a Chrome trace of step 2 (or --profile-steps) to <run>/trace.json");
  t->add_option("--profile-steps", a->profile_steps, "Steps to profile (1-based)")->delimiter(',');
  t->add_flag("--ignore-memory-plan", a->ignore_memory_plan,
              "Run even when the memory plan (grpo plan) says the run does not fit this machine's memory");
  t->add_flag("--help-config", a->help_config, "Print every config key with its type, default and allowed values");
  t->add_option("--threads", a->threads, "Threads (default: all cores)");
  t->callback([a] { run_train(*a); });

  auto b = std::make_shared<TrainArgs>();
  CLI::App* s = app.add_subcommand("sft", "Supervised fine-tuning on prompt/response JSONL (loss on responses)");
  s->add_option("config", b->config, "YAML config (e.g. examples/arith-sft.yaml)")->required();
  s->add_option("--set", b->sets, "Override a key (repeatable)");
  s->add_flag("--overwrite", b->overwrite,
              "The run folder holds an earlier run: delete its outputs (model, metrics, report) and start over");
  s->add_option("--threads", b->threads, "Threads (default: all cores)");
  s->callback([b] { run_sft_cmd(*b); });
}

GRPO_REGISTER_COMMAND(setup_train);

}  // namespace
}  // namespace grpo::cli
