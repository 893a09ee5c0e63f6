// `grpo bench dist --np N [--vl]`: the communication table (bench/dist_bench.h). Writes a random preset model
// and arithmetic prompts (--vl: a Qwen3-VL model and the shapes task's pictures and questions) into a work
// folder, runs `grpo train` on them with one rank and, through mpirun (one
// thread per rank, --oversubscribe), with N ranks in the baseline and optimised ways; prints each command,
// the table and, as the last stdout line, a JSON object.

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "bench/bench_folder.h"
#include "cli/child_process.h"
#include "cli/command.h"
#include "core/error.h"
#include "core/files.h"
#include "bench/dist_bench.h"

namespace grpo::cli {
namespace {

struct BenchDistArgs {
  GrpoBenchOptions o;
  int ranks = 2, repeats = 1;
  std::string out, mpirun = "mpirun";
};

// One run of `r` into run_dir (grpo train, through mpirun for several ranks); its summary joins r.results.
void run_one(const BenchDistArgs& a, const GrpoBenchOptions& o, const std::string& out, const std::string& yaml,
             const std::string& train_path, DistBenchRun& r, const std::string& run_dir) {
  std::vector<std::string> argv;
  if (r.ranks > 1) {
    std::istringstream launcher(a.mpirun);  // the launcher and its own arguments, split at spaces
    for (std::string word; launcher >> word;) argv.push_back(word);
    argv.insert(argv.end(), {"-np", std::to_string(r.ranks), "--oversubscribe", "-x", "OMP_NUM_THREADS=1"});
    if (geteuid() == 0) argv.push_back("--allow-run-as-root");  // Open MPI refuses root otherwise
  }
  // --overwrite: the run folders are this benchmark's own, so a re-run into the same --out starts them over
  argv.insert(argv.end(), {self_executable(), "train", yaml, "--threads", "1", "--overwrite"});
  for (const std::string& s : grpo_bench_overrides(o, out + "/model", train_path, run_dir, {}))
    argv.insert(argv.end(), {"--set", s});
  for (const std::string& s : r.overrides) argv.insert(argv.end(), {"--set", s});
  std::string line;
  for (const std::string& s : argv) line += " " + s;
  std::fprintf(stderr, "[bench dist] %s (round %zu):%s\n", r.name.c_str(), r.results.size() + 1, line.c_str());
  run_child(argv, r.name);
  r.results.push_back(summarise_grpo_bench_run(run_dir + "/metrics.jsonl"));
}

void run(const BenchDistArgs& a) {
  namespace fs = std::filesystem;
  const GrpoBenchOptions o = grpo_bench_defaults(a.o, "bench dist");
  std::vector<DistBenchRun> runs = dist_bench_runs(a.ranks);
  const BenchFolder folder = prepare_bench_folder(o, a.out, "bench dist");
  const std::string& out = folder.out;
  const std::string& train_path = folder.train_path;
  const std::string& yaml = folder.yaml;
  for (int rep = 0; rep < a.repeats; ++rep)
    for (size_t i = 0; i < runs.size(); ++i) {
      DistBenchRun& r = runs[i];
      run_one(a, o, out, yaml, train_path, r,
              out + "/run" + std::to_string(i) + (rep ? "-" + std::to_string(rep) : ""));
    }
  std::printf("%s", dist_bench_table(runs).c_str());
  std::printf("%s\n", dist_bench_json(o, runs).dump().c_str());
  if (a.out.empty()) fs::remove_all(out);
}

void setup_bench_dist(CLI::App& app) {
  CLI::App* bench = group_command(app, "bench", "Benchmarks (print JSON)");
  auto a = std::make_shared<BenchDistArgs>();
  CLI::App* c = bench->add_subcommand(
      "dist", "The communication table: GRPO steps on 1 rank and on N ranks (mpirun), comm overlap + bf16 on/off");
  c->add_option("--np", a->ranks, "Ranks of the distributed runs (>= 2)")->capture_default_str();
  c->add_option("--preset", a->o.preset, "Model preset (random init)")->capture_default_str();
  c->add_flag("--vl", a->o.vl,
              "Qwen3-VL (--arch qwen3-vl) on the shapes task's pictures: adds the vision tower's share of the step");
  c->add_option("--arch", a->o.arch, "Architecture of the preset")->capture_default_str();
  c->add_option("--steps", a->o.steps, "Training steps per run; the first is a warm-up")->capture_default_str();
  c->add_option("--prompts", a->o.prompts, "Prompts per step (data.train_batch_size)")->capture_default_str();
  c->add_option("--mini-batch-prompts", a->o.mini_batch_prompts,
                "Prompts per optimizer update (ppo_mini_batch_size; default: --prompts, one update per step)");
  c->add_option("--repeats", a->repeats, "Rounds of the four runs, in turn (medians, ratios paired per round)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  c->add_option("--n", a->o.n, "Samples per prompt (rollout.n)")->capture_default_str();
  c->add_option("--max-prompt-length", a->o.max_prompt_length, "Prompt tokens at most (default 48)");
  c->add_option("--max-response-length", a->o.max_response_length,
                "Response tokens (every response is this long: stop tokens are ignored)")
      ->capture_default_str();
  c->add_option("--micro-batch", a->o.micro_batch,
                "Sets the micro-batch token budget per rank: this many full-length sequences")
      ->capture_default_str();
  c->add_option("--dtype", a->o.dtype, "bf16 (mixed precision) or f32, the same in every run")
      ->check(CLI::IsMember({"bf16", "f32"}))
      ->capture_default_str();
  c->add_option("--seed", a->o.seed, "Seed")->capture_default_str();
  c->add_option("--mpirun", a->mpirun,
                "The MPI launcher, with arguments of its own split at spaces (between hosts of the network-namespace "
                "bed: 'scripts/netns_bed.sh mpirun')")
      ->capture_default_str();
  c->add_option("--out", a->out, "Work folder, kept (default: a temporary folder, removed)");
  c->callback([a] { run(*a); });
}

GRPO_REGISTER_COMMAND(setup_bench_dist);

}  // namespace
}  // namespace grpo::cli
