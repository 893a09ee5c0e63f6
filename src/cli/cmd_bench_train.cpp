// `grpo bench train`: a full training step (forward, backward, AdamW) on packed sequences, optimised
// (fused kernels, chunked output layer) against the plain path (unfused kernels, full [T x V] logits) on
// the same batch. Each path runs in its own child process so that its peak RSS is its own. Prints one
// JSON object: tokens/s, GFLOP/s, the fraction of the GEMM peak measured in the same run, peak RSS of
// both paths, and the ratios. --lora-rank R also times LoRA (frozen base, adapters on all linears) against
// full fine-tuning of the same model in the same run.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/threads.h"
#include "kernels/measure.h"
#include "model/init.h"
#include "model/presets.h"
#include "bench/train_bench.h"

namespace grpo::cli {
namespace {

struct BenchTrainArgs {
  std::string model, preset = "small", arch = "qwen3", dtype = "bf16";
  int64_t tokens = 4096, seq_len = 512, lora_rank = 0;
  int steps = 3, threads = 0;
  bool checkpoint = false, skip_baseline = false, profile = false;
};

std::unique_ptr<ModelWeights> make_weights(const BenchTrainArgs& a) {
  if (!a.model.empty()) return ModelWeights::load(a.model);
  auto w = std::make_unique<ModelWeights>(preset_config(a.arch, a.preset));
  init_parameters(*w, 1234);
  return w;
}

// Runs `work` in a child process and returns its JSON with "peak_rss_bytes" (the child's own peak)
// added. Everything that computes runs in children: GNU OpenMP is not usable after fork() in a process
// whose parent already started OpenMP threads.
nlohmann::json run_in_child(const std::string& what, const std::function<nlohmann::json()>& work) {
  int fds[2];
  GRPO_CHECK(pipe(fds) == 0, "[bench train] pipe failed");
  std::fflush(nullptr);
  pid_t pid = fork();
  GRPO_CHECK(pid >= 0, "[bench train] fork failed");
  if (pid == 0) {
    close(fds[0]);
    nlohmann::json j;
    try {
      j = work();
    } catch (const std::exception& e) {
      j = {{"error", e.what()}};
    }
    std::string s = j.dump();
    if (write(fds[1], s.data(), s.size()) < 0) _exit(2);
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, n);
  close(fds[0]);
  int status = 0;
  struct rusage ru {};
  wait4(pid, &status, 0, &ru);
  GRPO_CHECK(WIFEXITED(status) && !out.empty(), "[bench train] the process of ", what, " died (status ", status, ")");
  nlohmann::json j = nlohmann::json::parse(out);
  if (j.contains("error")) fail("[bench train] ", what, ": ", j["error"].get<std::string>());
  j["peak_rss_bytes"] = static_cast<int64_t>(ru.ru_maxrss) * 1024;
  return j;
}

nlohmann::json train_path(const BenchTrainArgs& a, bool plain, int64_t lora_rank = 0) {
  auto w = make_weights(a);
  train::TrainBenchOptions o;
  o.tokens = a.tokens;
  o.seq_len = a.seq_len;
  o.steps = a.steps;
  o.decoder.mode = parse_compute_mode(a.dtype);
  o.decoder.checkpoint_activations = a.checkpoint;
  o.decoder.kernels = plain ? &plain_kernels() : &fused_kernels();
  o.lora_rank = lora_rank;
  o.profile = a.profile;
  train::TrainBenchResult r = train::run_train_bench(*w, o);
  nlohmann::json profile = nlohmann::json::object();  // scope -> ms per step
  for (const ScopeSummary& s : r.profile) profile[s.name] = s.total_ms / std::max(1, a.steps);
  return {{"profile", profile},
          {"tokens_per_s", r.tokens_per_s},         {"gflops", r.gflops},
          {"seconds_per_step", r.seconds_per_step}, {"flop_per_step", r.flop_per_step},
          {"loss_first", r.first_loss},             {"loss_last", r.last_loss},
          {"activation_bytes", r.activation_bytes}, {"parameters", w->num_parameters()},
          {"threads", num_threads()}};
}

// The profiler's scopes of the full fine-tuning step, and of the LoRA step beside them when `lora` is an
// object (ms per step), to stderr.
void print_profiles(const nlohmann::json& full, const nlohmann::json& lora) {
  const bool two = lora.is_object();
  std::fprintf(stderr, "[bench train] profile, ms per step (nested scopes overlap):\n  %-28s %10s %10s\n", "scope",
               "full", two ? "lora" : "");
  auto row = [](const std::string& name, double a, const nlohmann::json* b) {
    if (b)
      std::fprintf(stderr, "  %-28s %10.1f %10.1f\n", name.c_str(), a, b->get<double>());
    else
      std::fprintf(stderr, "  %-28s %10.1f\n", name.c_str(), a);
  };
  const nlohmann::json zero = 0.0;
  for (const auto& [name, ms] : full.items())
    row(name, ms.get<double>(), two ? (lora.contains(name) ? &lora[name] : &zero) : nullptr);
  if (two)
    for (const auto& [name, ms] : lora.items())
      if (!full.contains(name)) row(name, 0.0, &ms);
}

void run_bench_train(const BenchTrainArgs& a) {
  if (a.threads > 0) set_num_threads(a.threads);
  const DType gemm_dtype = parse_compute_mode(a.dtype) == ComputeMode::BF16 ? DType::BF16 : DType::F32;
  std::fprintf(stderr, "[bench train] measuring the %s GEMM peak (2048^3)...\n", a.dtype.c_str());
  const double peak = run_in_child("the GEMM peak", [&] {
                        return nlohmann::json{{"gflops", measure_gemm_gflops(gemm_dtype, 2048, 2048, 2048)}};
                      })["gflops"].get<double>();
  std::fprintf(stderr, "[bench train] GEMM peak %.1f GFLOP/s; optimised path...\n", peak);
  nlohmann::json opt = run_in_child("the optimised path", [&] { return train_path(a, false); });
  std::fprintf(stderr, "[bench train] optimised: %.0f tokens/s, %.1f GFLOP/s\n", opt["tokens_per_s"].get<double>(),
               opt["gflops"].get<double>());
  nlohmann::json out = {{"model", a.model.empty() ? a.arch + ":" + a.preset : a.model},
                        {"dtype", a.dtype},
                        {"tokens", a.tokens},
                        {"seq_len", a.seq_len},
                        {"threads", opt["threads"]},
                        {"parameters", opt["parameters"]},
                        {"tokens_per_s", opt["tokens_per_s"]},
                        {"gflops", opt["gflops"]},
                        {"gemm_peak_gflops", peak},
                        {"peak_fraction", opt["gflops"].get<double>() / peak},
                        {"peak_rss_bytes", opt["peak_rss_bytes"]},
                        {"activation_bytes", opt["activation_bytes"]},
                        {"loss_first", opt["loss_first"]},
                        {"loss_last", opt["loss_last"]}};
  if (a.lora_rank > 0) {
    std::fprintf(stderr, "[bench train] LoRA rank %lld on all linears (frozen base)...\n",
                 static_cast<long long>(a.lora_rank));
    nlohmann::json lora = run_in_child("the LoRA path", [&] { return train_path(a, false, a.lora_rank); });
    out["lora_rank"] = a.lora_rank;
    out["lora_tokens_per_s"] = lora["tokens_per_s"];
    out["lora_seconds_per_step"] = lora["seconds_per_step"];
    out["lora_peak_rss_bytes"] = lora["peak_rss_bytes"];
    // The target: a LoRA step at most 0.75x the full fine-tuning step of the same model.
    out["lora_step_ratio"] = lora["seconds_per_step"].get<double>() / opt["seconds_per_step"].get<double>();
    if (a.profile) print_profiles(opt["profile"], lora["profile"]);
  } else if (a.profile) {
    print_profiles(opt["profile"], nullptr);
  }
  if (!a.skip_baseline) {
    std::fprintf(stderr, "[bench train] plain path (unfused kernels, full logits)...\n");
    nlohmann::json base = run_in_child("the plain path", [&] { return train_path(a, true); });
    out["baseline_tokens_per_s"] = base["tokens_per_s"];
    out["baseline_peak_rss_bytes"] = base["peak_rss_bytes"];
    out["baseline_activation_bytes"] = base["activation_bytes"];
    out["speedup"] = opt["tokens_per_s"].get<double>() / base["tokens_per_s"].get<double>();
    out["peak_rss_ratio"] = base["peak_rss_bytes"].get<double>() / opt["peak_rss_bytes"].get<double>();
  } else {
    out["baseline_tokens_per_s"] = nullptr;
    out["baseline_peak_rss_bytes"] = nullptr;
    out["speedup"] = nullptr;
  }
  std::printf("%s\n", out.dump(2).c_str());
}

void setup_bench_train(CLI::App& app) {
  CLI::App* bench = group_command(app, "bench", "Benchmarks (print JSON)");
  auto a = std::make_shared<BenchTrainArgs>();
  CLI::App* c = bench->add_subcommand("train", "Training step (forward, backward, AdamW): optimised vs plain path");
  auto* model = c->add_option("--model", a->model, "Hugging Face model folder");
  c->add_option("--preset", a->preset, "Random model of this preset when no --model")
      ->check(CLI::IsMember(preset_names()))
      ->excludes(model);
  c->add_option("--arch", a->arch, "Architecture of the preset (qwen3, qwen2, llama)")->excludes(model);
  c->add_option("--tokens", a->tokens, "Tokens per step");
  c->add_option("--seq-len", a->seq_len, "Tokens per sequence (tokens / seq-len sequences)");
  c->add_option("--dtype", a->dtype, "Compute mode: f32 or bf16")->check(CLI::IsMember({"f32", "bf16"}));
  c->add_option("--steps", a->steps, "Timed steps (after one warm-up step)");
  c->add_flag("--checkpoint-activations", a->checkpoint, "Recompute each layer during backward");
  c->add_flag("--skip-baseline", a->skip_baseline, "Do not run the plain path");
  c->add_option("--lora-rank", a->lora_rank, "Also time LoRA of this rank on all linears against full fine-tuning")
      ->check(CLI::NonNegativeNumber);
  c->add_option("--threads", a->threads, "Threads (default: all cores)");
  c->add_flag("--profile", a->profile, "Profile the timed steps (with --lora-rank: both steps' scopes side by side)");
  c->callback([a] { run_bench_train(*a); });
}

GRPO_REGISTER_COMMAND(setup_bench_train);

}  // namespace
}  // namespace grpo::cli
