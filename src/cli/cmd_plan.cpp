// `grpo plan CONFIG [--np N] [--set k=v ...]`: the memory plan of a GRPO run per rank (plan/memory_plan.h)
// before anything is allocated: from the config, the model's config.json and the data's lengths. Says
// whether it fits this machine's memory (or --machine-memory), and if not, the cheapest change that does
// (and exits with status 1).
#include <cstdio>

#include "cli/command.h"
#include "core/error.h"
#include "core/units.h"
#include "config/config.h"
#include "plan/memory_plan.h"
#include "loop/session.h"
#include "model/checkpoint.h"

namespace grpo::cli {
namespace {

struct PlanArgs {
  std::string config;
  std::vector<std::string> sets;
  int ranks = 1, ranks_per_machine = 0;
  double machine_gib = 0;
  int64_t lora_rank = -1, prompt_patches = 0;  // lora_rank -1: the config's actor_rollout_ref.model.lora_rank
  bool no_data = false;
};

void run_plan(const PlanArgs& a) {
  const Config cfg = load_config(a.config, a.sets);
  MemoryPlanInputs in;
  if (a.no_data) {
    in.config = cfg;
    in.model = read_model_folder_config(cfg.actor_rollout_ref.model.path);
    in.data = config_lengths(cfg);
    in.data.max_prompt_patches = a.prompt_patches;
    in.ranks = a.ranks;
    in.ranks_per_machine = a.ranks;
    in.available_bytes = rollout::available_memory_bytes();
    in.fixed_bytes = measured_fixed_overhead_bytes();
  } else {
    const std::unique_ptr<Session> s = Session::open_data(cfg, /*require_response=*/false);
    in = memory_plan_inputs(s->config, s->model_config, s->train, s->val, a.ranks);
  }
  if (a.ranks_per_machine > 0) in.ranks_per_machine = a.ranks_per_machine;
  if (a.machine_gib > 0) in.available_bytes = static_cast<int64_t>(a.machine_gib * (1 << 30));
  in.lora_rank = a.lora_rank >= 0 ? a.lora_rank : cfg.actor_rollout_ref.model.lora_rank;
  const MemoryPlan p = plan_memory(in);
  std::printf("%s", explain_memory_plan(p).c_str());
  std::fflush(stdout);
  GRPO_CHECK(p.fits(), "[plan] the run does not fit: ", human_bytes(p.machine_bytes()), " needed, ",
             human_bytes(in.available_bytes), " available",
             p.kv_holds_a_sample ? "" : ", and what is left gives the KV cache no room for one whole sample");
}

void setup_plan(CLI::App& app) {
  auto a = std::make_shared<PlanArgs>();
  CLI::App* c = app.add_subcommand("plan", "Memory plan of a GRPO run per rank: does it fit, and if not, what would");
  c->add_option("config", a->config, "YAML config (as for grpo train)")->required();
  c->add_option("--set", a->sets, "Override a key (repeatable)");
  c->add_option("--np", a->ranks, "Ranks (mpirun -np)")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  c->add_option("--ranks-per-machine", a->ranks_per_machine,
                "Ranks sharing one machine's memory (default: trainer.n_gpus_per_node, or all --np ranks)")
      ->check(CLI::Range(1, 1 << 20));
  c->add_option("--machine-memory", a->machine_gib, "Memory of the machine in GiB (default: this one's MemAvailable)")
      ->check(CLI::PositiveNumber);
  c->add_option("--lora-rank", a->lora_rank, "Plan LoRA adapters of this rank (0: full fine-tuning; default: the config's lora_rank)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 16));
  c->add_flag("--no-data", a->no_data,
              "Do not read the data (nor the tokenizer): prompts of the config's max_prompt_length tokens");
  c->add_option("--prompt-patches", a->prompt_patches,
                "With --no-data: vision patch rows of each prompt's pictures (Qwen3-VL; 0: no pictures)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  c->callback([a] { run_plan(*a); });
}

GRPO_REGISTER_COMMAND(setup_plan);

}  // namespace
}  // namespace grpo::cli
