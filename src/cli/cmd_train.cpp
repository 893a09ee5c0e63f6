// `grpo train` (GRPO post-training) and `grpo sft` (supervised warm start): an optional YAML config with
// verl's key names plus overrides, as `--set key=value` or bare `key=value` (verl's run scripts: Hydra's
// `+key=value` / `++key=value`, `--config-path` / `--config-name`); `--check` validates everything the run
// would read, and its memory plan, and trains nothing. See examples/, docs/verl.md and `grpo train --help-config`.
#include <cstdio>
#include <sstream>

#include "cli/command.h"
#include "comm/communicator.h"
#include "core/error.h"
#include "core/threads.h"
#include "config/config.h"
#include "plan/run_check.h"
#include "loop/sft.h"
#include "loop/trainer.h"

namespace grpo::cli {
namespace {

struct TrainArgs {
  std::vector<std::string> positional;  // [CONFIG.yaml] key=value ...
  std::vector<std::string> sets;
  std::string config_path, config_name;  // Hydra's, as verl's run scripts pass them
  std::string resume;
  std::vector<int64_t> profile_steps;
  bool profile = false, help_config = false, overwrite = false, check = false, ignore_memory_plan = false;
  int threads = 0;
};

// The YAML file and the overrides: a positional argument with '=' (or Hydra's +/++/~ prefix) is an
// override, the one without is the config file; --config-name adds its config's defaults first.
std::pair<std::string, std::vector<std::string>> config_source(const TrainArgs& a, const char* command) {
  std::string file;
  std::vector<std::string> overrides;
  if (!a.config_name.empty()) overrides = verl_config_name_overrides(a.config_name);
  for (const std::string& p : a.positional) {
    if (p.find('=') != std::string::npos || p.starts_with("+") || p.starts_with("~")) {
      overrides.push_back(p);
    } else if (file.empty()) {
      file = p;
    } else {
      fail("[", command, "] two config files given (", file, ", ", p, "); overrides are key=value");
    }
  }
  if (!file.empty() && !a.config_name.empty())
    fail("[", command, "] give a config file or --config-name ", a.config_name, ", not both");
  overrides.insert(overrides.end(), a.sets.begin(), a.sets.end());
  return {file, overrides};
}

// Loads the config; `notes` receives what was accepted without effect.
Config load_run_config(const TrainArgs& a, const char* command, ConfigNotes& notes) {
  const auto [file, overrides] = config_source(a, command);
  return load_config(file, overrides, &notes);
}

// --check: prints the run's summary and its problems; non-zero exit when it would not start.
void run_check_cmd(const Config& cfg, const ConfigNotes& notes, RunKind kind, const TrainArgs& a) {
  RunCheckOptions options;
  // The launch the config describes (trainer.nnodes x n_gpus_per_node), else the ranks started.
  const TrainerConfig& t = cfg.trainer;
  options.ranks =
      t.nnodes > 0 && t.n_gpus_per_node > 0 ? static_cast<int>(t.nnodes * t.n_gpus_per_node) : comm::world().size();
  options.ignore_memory_plan = a.ignore_memory_plan;
  const RunCheck check = check_run(cfg, notes, kind, options);
  std::printf("%s", describe(check).c_str());
  std::fflush(stdout);
  if (!check.ok()) fail("[check] ", check.problems.size(), " problem(s) listed above");
}

void print_notes(const Config& cfg, const ConfigNotes& notes) {
  if (comm::launch_rank() == 0) std::fprintf(stderr, "%s", notes.describe(cfg.trainer.default_local_dir).c_str());
}

void run_train(const TrainArgs& a) {
  if (a.help_config) {
    std::printf("%s", config_help().c_str());
    return;
  }
  if (a.threads > 0) set_num_threads(a.threads);
  ConfigNotes notes;
  Config cfg = load_run_config(a, "train", notes);
  if (a.check) return run_check_cmd(cfg, notes, RunKind::Grpo, a);
  print_notes(cfg, notes);
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
  ConfigNotes notes;
  Config cfg = load_run_config(a, "sft", notes);
  if (a.check) return run_check_cmd(cfg, notes, RunKind::Sft, a);
  print_notes(cfg, notes);
  SftSummary s = run_sft(cfg, /*quiet=*/false, a.overwrite);
  if (comm::launch_rank() == 0)
    std::fprintf(stderr, "[sft] %lld steps in %.1fs; model saved to %s\n", static_cast<long long>(s.steps), s.seconds,
                 s.model_dir.c_str());
}

// The options verl's launcher takes too: overrides, and Hydra's config selection.
void add_config_options(CLI::App* c, TrainArgs& a, const char* example) {
  c->add_option("args", a.positional,
                cat("[CONFIG.yaml] key=value ...: an optional YAML config (e.g. ", example,
                    ") and overrides as verl's run scripts pass them (+key=value and ++key=value too); without a "
                    "config every default is verl's ppo_trainer.yaml default"));
  c->add_option("--set", a.sets, "Override a key: --set actor_rollout_ref.actor.optim.lr=1e-5 (repeatable)");
  c->add_option("--config-name", a.config_name,
                "Hydra: the verl config the overrides apply to (ppo_trainer, ppo_megatron_trainer, dapo_trainer)");
  c->add_option("--config-path", a.config_path, "Hydra: where verl finds --config-name (read and not needed here)");
  c->add_flag("--check", a.check,
              "Validate config, data, model (config.json, tokenizer; no weights), the memory plan and rewards, print "
              "the run's plan, and train nothing (exit status 0 when the run would start)");
  c->add_option("--threads", a.threads, "Threads (default: all cores)");
}

void setup_train(CLI::App& app) {
  auto a = std::make_shared<TrainArgs>();
  CLI::App* t = app.add_subcommand("train", "GRPO post-training from a YAML config and/or verl-style overrides");
  add_config_options(t, *a, "examples/arith-grpo.yaml");
  t->add_option("--resume", a->resume, "Resume the run in this folder from its latest checkpoint");
  t->add_flag("--overwrite", a->overwrite,
              "The run folder holds an earlier run: delete its outputs (metrics, checkpoints, report) and start over");
  t->add_flag("--profile", a->profile, "Write a Chrome trace of step 2 (or --profile-steps) to <run>/trace.json");
  t->add_option("--profile-steps", a->profile_steps, "Steps to profile (1-based)")->delimiter(',');
  t->add_flag("--ignore-memory-plan", a->ignore_memory_plan,
              "Run even when the memory plan (grpo plan) says the run does not fit this machine's memory");
  t->add_flag("--help-config", a->help_config, "Print every config key with its type, default and allowed values");
  t->callback([a] { run_train(*a); });

  auto b = std::make_shared<TrainArgs>();
  CLI::App* s = app.add_subcommand("sft", "Supervised fine-tuning on prompt/response JSONL (loss on responses)");
  add_config_options(s, *b, "examples/arith-sft.yaml");
  s->add_flag("--overwrite", b->overwrite,
              "The run folder holds an earlier run: delete its outputs (model, metrics, report) and start over");
  s->callback([b] { run_sft_cmd(*b); });
}

GRPO_REGISTER_COMMAND(setup_train);

}  // namespace
}  // namespace grpo::cli
