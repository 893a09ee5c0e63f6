// `grpo bench grpo [--vl]`: the ablation table (every optimisation on, each off alone, all off). Writes a random preset
// model and arithmetic prompts (--vl: a Qwen3-VL model and the shapes task's pictures and questions) into a work
// folder, runs `grpo train` on them in child processes (every optimisation on, each one off alone, all off; see
// bench/grpo_bench.h), prints the tables (--vl: also the vision tower's time in rollout and training, its patches/s and
// the fraction of the GEMM peak, measured afterwards in this process on a 2048^3 GEMM with the runs' threads) and, as
// the last stdout line, a JSON object.

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "bench/bench_folder.h"
#include "cli/child_process.h"
#include "cli/command.h"
#include "core/error.h"
#include "core/files.h"
#include "bench/grpo_bench.h"
#include "kernels/measure.h"
#include "core/threads.h"

namespace grpo::cli {
namespace {

struct BenchGrpoArgs {
  GrpoBenchOptions o;
  std::string out;
  int threads = 0;
};

void run(const BenchGrpoArgs& a) {
  namespace fs = std::filesystem;
  const GrpoBenchOptions o = grpo_bench_defaults(a.o, "bench grpo");
  if (o.lengths == "long_tail")
    std::fprintf(stderr, "[bench grpo] long-tailed response lengths: median %lld, 5%% past %lld, a few at the limit %lld\n",
                 static_cast<long long>(o.max_response_length / 20), static_cast<long long>(o.max_response_length / 2),
                 static_cast<long long>(o.max_response_length));
  // before any run: the baseline's fixed micro-batches split the step's sequences
  GRPO_CHECK((o.prompts * o.n) % o.micro_batch == 0, "[bench grpo] --micro-batch ", o.micro_batch,
             " must divide --prompts x --n = ", o.prompts * o.n, " (the baseline's ppo_micro_batch_size_per_gpu)");
  const BenchFolder folder = prepare_bench_folder(o, a.out, "bench grpo");
  const std::string& out = folder.out;
  const std::string& train_path = folder.train_path;
  const std::string& yaml = folder.yaml;
  // (label, switches off): all on first, each switch off alone, all off last.
  std::vector<std::pair<std::string, std::vector<std::string>>> plan = {{"all on", {}}};
  std::vector<std::string> all;
  for (const GrpoBenchSwitch& sw : grpo_bench_switches()) {
    all.push_back(sw.name);
    if (o.ablation) plan.push_back({"no " + sw.name, {sw.name}});
  }
  plan.push_back({"all off (baseline)", all});
  std::vector<GrpoBenchRun> runs;
  for (size_t i = 0; i < plan.size(); ++i) {
    const auto& [label, off] = plan[i];
    std::fprintf(stderr, "[bench grpo] run %zu/%zu, %s: %lld steps of %lld prompts x %lld samples\n", i + 1, plan.size(),
                 label.c_str(), static_cast<long long>(o.steps), static_cast<long long>(o.prompts),
                 static_cast<long long>(o.n));
    const std::string run_dir = out + "/run" + std::to_string(i);
    // --overwrite: the run folders are this benchmark's own, so a re-run into the same --out starts them over
    std::vector<std::string> args = {self_executable(), "train", yaml, "--overwrite"};
    if (a.threads > 0) args.insert(args.end(), {"--threads", std::to_string(a.threads)});
    for (const std::string& s : grpo_bench_overrides(o, out + "/model", train_path, run_dir, off))
      args.insert(args.end(), {"--set", s});
    run_child(args, label);
    runs.push_back(summarise_grpo_bench_run(run_dir + "/metrics.jsonl"));
    runs.back().label = label;
  }
  double peak = 0;
  if (o.vl) {  // after every child (OpenMP starts in this process only now), with the children's threads
    if (a.threads > 0) set_num_threads(a.threads);
    std::fprintf(stderr, "[bench grpo] GEMM peak (2048^3, %s)\n", o.dtype.c_str());
    peak = measure_gemm_gflops(o.dtype == "bf16" ? DType::BF16 : DType::F32, 2048, 2048, 2048);
  }
  std::printf("%s\n", grpo_bench_ablation_table(runs).c_str());
  std::printf("%s", grpo_bench_table(runs.front(), runs.back()).c_str());
  if (o.vl) std::printf("\n%s", grpo_bench_vision_table(runs.front(), peak).c_str());
  std::printf("%s\n", grpo_bench_json(o, runs.front(), runs.back(), runs, peak).dump().c_str());
  if (a.out.empty()) fs::remove_all(out);
}

void setup_bench_grpo(CLI::App& app) {
  CLI::App* bench = group_command(app, "bench", "Benchmarks (print JSON)");
  auto a = std::make_shared<BenchGrpoArgs>();
  CLI::App* c = bench->add_subcommand(
      "grpo", "The ablation table: GRPO steps with every optimisation on, each off alone, all off");
  c->add_flag("--vl", a->o.vl,
              "Qwen3-VL (--arch qwen3-vl) on the shapes task's pictures: adds the vision tower's time in rollout and "
              "training, patches/s and the fraction of the GEMM peak");
  c->add_option("--preset", a->o.preset, "Model preset (random init)")->capture_default_str();
  c->add_option("--arch", a->o.arch, "Architecture of the preset")->capture_default_str();
  c->add_option("--steps", a->o.steps, "Training steps per run; the first is a warm-up")->capture_default_str();
  c->add_option("--prompts", a->o.prompts, "Prompts per step (data.train_batch_size)")->capture_default_str();
  c->add_option("--n", a->o.n, "Samples per prompt (rollout.n)")->capture_default_str();
  c->add_option("--max-prompt-length", a->o.max_prompt_length,
                "Prompt tokens at most (default: 48 for arithmetic, 128 with --vl)");
  CLI::Option* limit = c->add_option("--max-response-length", a->o.max_response_length,
                                     "Response tokens at most (stop tokens are ignored; default 256 with fixed lengths, "
                                     "1024 with --lengths long_tail)");
  c->add_option("--lengths", a->o.lengths,
                "fixed (every response max-response-length long) or long_tail (each response as long as drawn for "
                "it from a seeded long-tailed distribution: median limit / 20, 5% past half the limit, ~2% at it; the "
                "same lengths in every run)")
      ->check(CLI::IsMember({"fixed", "long_tail"}))
      ->capture_default_str();
  c->add_option("--micro-batch", a->o.micro_batch,
                "Sequences per fixed micro-batch of the baseline (divides prompts x n); the optimised run's token "
                "budget is as many full-length sequences")
      ->capture_default_str();
  c->add_option("--dtype", a->o.dtype, "bf16 (mixed precision) or f32, the same in every run")
      ->check(CLI::IsMember({"bf16", "f32"}))
      ->capture_default_str();
  c->add_flag("!--no-ablation", a->o.ablation, "Only the all-on and all-off runs (no run per optimisation)");
  c->add_option("--seed", a->o.seed, "Seed")->capture_default_str();
  c->add_option("--out", a->out, "Work folder, kept (default: a temporary folder, removed)");
  c->add_option("--threads", a->threads, "Threads of the runs (default: all cores)");
  c->callback([a, limit] {
    if (a->o.lengths == "long_tail" && limit->count() == 0) a->o.max_response_length = 1024;
    run(*a);
  });
}

GRPO_REGISTER_COMMAND(setup_bench_grpo);

}  // namespace
}  // namespace grpo::cli
