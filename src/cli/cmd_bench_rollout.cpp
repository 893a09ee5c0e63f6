// `grpo bench rollout`: generation throughput for GRPO's shape (N prompts x G samples of exactly L new
// tokens) with the optimisations on and off, single-sequence decode against the memory-bandwidth bound
// (bytes of weights per token / DRAM bandwidth measured in the same run; decode1_tokens_per_s counts the
// decode steps, as llama.cpp's text-generation test does, decode1_run_tokens_per_s the whole run with its
// prompt's prefill). A shared VM's DRAM bandwidth moves from second to second, so the bandwidth and the
// single-sequence decode are measured in kDecodeRounds alternating rounds, each round's fraction from its
// own pair, and the medians reported. Also which kernel the decode matmuls take at each batch size of the
// run and, where the bf16 GEMV runs on AMX tiles, their crossover with the vector GEMV and oneDNN on the
// model's largest decode matmul (gate/up), measured in the same run; elsewhere, why the tiles are absent.
// And the roofline (rollout_bench.h): each measurement next to its bound, decode at batch 1 against the
// bandwidth, the batch run's decode against the larger of its two bounds, prefill against the GEMM peak.
// Prints one JSON object.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/profiler.h"
#include "core/rng.h"
#include "core/stats.h"
#include "core/threads.h"
#include "kernels/cpu/gemv_amx.h"
#include "kernels/measure.h"
#include "kernels/paged_ops.h"
#include "model/init.h"
#include "model/lora.h"
#include "model/presets.h"
#include "bench/rollout_bench.h"

namespace grpo::cli {
namespace {

constexpr int kDecodeRounds = 3;

struct Decode1 {
  double tokens_per_s = 0, run_tokens_per_s = 0, bandwidth = 0, fraction = 0;  // medians over the rounds
  nlohmann::json rounds = nlohmann::json::array();
};

// Single-sequence decode of the optimised engine against the bandwidth bound, kDecodeRounds rounds.
Decode1 measure_decode1(ModelWeights& w, const rollout::RolloutBenchOptions& o, int64_t weight_bytes) {
  rollout::RolloutBenchOptions one = o;
  one.prompts = 1;
  one.n = 1;
  one.max_new_tokens = std::max<int64_t>(o.max_new_tokens, 64);
  std::vector<double> tps, run_tps, bw, frac;
  Decode1 d;
  for (int r = 0; r < kDecodeRounds; ++r) {
    bw.push_back(measure_read_bandwidth());
    const rollout::RolloutBenchResult res = rollout::run_rollout_bench(w, one, true);
    tps.push_back(res.decode_tokens_per_s);
    run_tps.push_back(res.gen_tokens_per_s);
    frac.push_back(res.decode_tokens_per_s * static_cast<double>(weight_bytes) / bw.back());
    std::fprintf(stderr,
                 "[bench rollout] round %d/%d: %.1f GB/s, single-sequence decode %.0f tokens/s = %.0f%% of the "
                 "bound\n",
                 r + 1, kDecodeRounds, bw.back() / 1e9, tps.back(), 100 * frac.back());
    d.rounds.push_back({{"bandwidth_bytes_per_s", bw.back()}, {"decode1_tokens_per_s", tps.back()},
                        {"bandwidth_fraction", frac.back()}});
  }
  d.tokens_per_s = median(tps);
  d.run_tokens_per_s = median(run_tps);
  d.bandwidth = median(bw);
  d.fraction = median(frac);
  return d;
}

// Batch sizes 1, 2, 4, ... up to max_batch, and max_batch.
std::vector<int64_t> batch_sizes(int64_t max_batch) {
  std::vector<int64_t> out;
  for (int64_t b = 1; b < max_batch; b *= 2) out.push_back(b);
  out.push_back(max_batch);
  return out;
}

// The decode matmuls' kernel per batch size, and the tiles' crossover (see the top of this file).
void report_decode_kernels(nlohmann::json& j, const ModelConfig& c, const rollout::RolloutBenchOptions& o) {
  const DType wdt = o.mode == ComputeMode::BF16 ? DType::BF16 : DType::F32;
  const int64_t max_batch = o.prompts * o.n;
  nlohmann::json kernels = nlohmann::json::array();
  for (int64_t b : batch_sizes(max_batch))
    kernels.push_back({{"batch", b}, {"kernel", ops::decode_matmul_kernel(wdt, b, o.matmul)}});
  j["decode_kernels"] = kernels;
  const std::string absent = wdt == DType::BF16 ? ops::cpu_tiles::tiles_unavailable_reason()
                                                : std::string("f32 weights (the tiles multiply bf16)");
  if (!absent.empty()) {
    std::fprintf(stderr, "[bench rollout] AMX tiles absent: %s; no tile crossover to measure\n", absent.c_str());
    j["tile_crossover"] = {{"absent", absent}};
    return;
  }
  const int64_t N = 2 * c.intermediate_size, K = c.hidden_size;
  std::fprintf(stderr, "[bench rollout] decode matmul kernels on %lldx%lld bf16 weights, batch 1..%lld...\n",
               static_cast<long long>(N), static_cast<long long>(K), static_cast<long long>(max_batch));
  nlohmann::json rows = nlohmann::json::array(), beats_vector = nullptr, beats_onednn = nullptr;
  for (const DecodeKernelTimes& t : measure_decode_kernels(N, K, max_batch)) {
    rows.push_back({{"batch", t.batch}, {"tiles_s", t.gemv_s}, {"vector_s", t.vector_s}, {"onednn_s", t.onednn_s}});
    if (beats_vector.is_null() && t.gemv_s < t.vector_s) beats_vector = t.batch;
    if (t.gemv_s <= t.onednn_s) beats_onednn = t.batch;
  }
  j["tile_crossover"] = {{"N", N},
                         {"K", K},
                         {"rows", rows},
                         {"tiles_beat_vector_gemv_from_batch", beats_vector},
                         {"tiles_beat_onednn_up_to_batch", beats_onednn}};
}

// The run against the machine's roofline (rollout_bench.h): the GEMM peak measured here (a 2048^3 GEMM in
// the weights' dtype), the bandwidth from the single-sequence rounds (whose fraction of the bound is
// bandwidth_fraction); the batch run's decode at its batch (every sample at once) and its prefill.
void report_roofline(nlohmann::json& j, const ModelConfig& c, const rollout::RolloutBenchOptions& o,
                     const rollout::RolloutBenchResult& opt, const Decode1& d1, int64_t wbytes) {
  const DType wdt = o.mode == ComputeMode::BF16 ? DType::BF16 : DType::F32;
  std::fprintf(stderr, "[bench rollout] the %s GEMM peak (2048^3)...\n", std::string(dtype_name(wdt)).c_str());
  const double peak_gflops = measure_gemm_gflops(wdt, 2048, 2048, 2048);
  const double flops = rollout::matmul_flops_per_token(c);
  const int64_t batch = o.prompts * o.n;
  const rollout::Roofline r = rollout::generation_roofline(wbytes, flops, d1.bandwidth, peak_gflops * 1e9, batch);
  j["roofline"] = {{"gemm_peak_gflops", peak_gflops},
                   {"flops_per_token", flops},
                   {"decode_batch", batch},
                   {"decode_bound", r.decode_compute_bound ? "gemm_peak" : "bandwidth"},
                   {"decode_bound_tokens_per_s", r.decode_tokens_per_s},
                   {"decode_fraction", opt.decode_tokens_per_s / r.decode_tokens_per_s},
                   {"decode_gflops", opt.decode_tokens_per_s * flops / 1e9},
                   {"prefill_bound_tokens_per_s", r.prefill_tokens_per_s},
                   {"prefill_fraction", opt.prefill_tokens_per_s / r.prefill_tokens_per_s}};
  std::fprintf(stderr,
               "[bench rollout] roofline: GEMM peak %.0f GFLOP/s, %.1f GB/s; decode at batch 1 %.2f of the bandwidth "
               "bound; decode at batch %lld %.2f of its %s bound (%.0f tokens/s); prefill %.2f of the GEMM peak\n",
               peak_gflops, d1.bandwidth / 1e9, d1.fraction, static_cast<long long>(batch),
               opt.decode_tokens_per_s / r.decode_tokens_per_s, r.decode_compute_bound ? "GEMM-peak" : "bandwidth",
               r.decode_tokens_per_s, opt.prefill_tokens_per_s / r.prefill_tokens_per_s);
}

struct BenchRolloutArgs {
  std::string model, preset = "small", arch = "qwen3", dtype = "bf16", decode_matmul = "batch_invariant";
  rollout::RolloutBenchOptions o;
  int threads = 0;
  int64_t lora_rank = 0;
  bool skip_baseline = false, profile = false;
};

void run(const BenchRolloutArgs& a) {
  if (a.threads > 0) set_num_threads(a.threads);
  std::unique_ptr<ModelWeights> w;
  if (!a.model.empty()) {
    w = ModelWeights::load(a.model);
  } else {
    w = std::make_unique<ModelWeights>(preset_config(a.arch, a.preset));
    init_parameters(*w, 1234);
  }
  rollout::RolloutBenchOptions o = a.o;
  o.mode = parse_compute_mode(a.dtype);
  o.matmul = ops::parse_decode_matmul(a.decode_matmul);
  std::fprintf(stderr, "[bench rollout] DRAM read bandwidth and single-sequence decode, %d rounds...\n",
               kDecodeRounds);
  const int64_t wbytes = rollout::decode_weight_bytes(*w, o.mode);
  const Decode1 d1 = measure_decode1(*w, o, wbytes);
  std::fprintf(stderr, "[bench rollout] %lld prompts x %lld samples, optimised...\n", static_cast<long long>(o.prompts),
               static_cast<long long>(o.n));
  if (a.profile) Profiler::enable(true);
  rollout::RolloutBenchResult opt = rollout::run_rollout_bench(*w, o, true);
  auto print_profile = [&](const char* run) {
    if (!a.profile) return;
    Profiler::enable(false);
    std::fprintf(stderr, "[bench rollout] profile of the %s run (total ms, calls):\n", run);
    for (const ScopeSummary& s : Profiler::summary())
      std::fprintf(stderr, "  %-24s %9.1f %8lld\n", s.name.c_str(), s.total_ms, static_cast<long long>(s.calls));
    Profiler::clear();
  };
  print_profile("optimised");
  nlohmann::json j = {{"model", a.model.empty() ? a.arch + ":" + a.preset : a.model},
                      {"dtype", a.dtype},
                      {"decode_matmul", a.decode_matmul},
                      {"prompts", o.prompts},
                      {"n", o.n},
                      {"prompt_len", o.prompt_len},
                      {"max_new_tokens", o.max_new_tokens},
                      {"threads", num_threads()},
                      {"gen_tokens_per_s", opt.gen_tokens_per_s},
                      {"prefill_tokens_per_s", opt.prefill_tokens_per_s},
                      {"decode_tokens_per_s", opt.decode_tokens_per_s},
                      {"seconds", opt.seconds},
                      {"kv_bytes", opt.kv_bytes},
                      {"blocks_shared", opt.blocks_shared},
                      {"decode1_tokens_per_s", d1.tokens_per_s},
                      {"decode1_run_tokens_per_s", d1.run_tokens_per_s},
                      {"weight_bytes_per_token", wbytes},
                      {"bandwidth_bytes_per_s", d1.bandwidth},
                      {"bandwidth_bound_tokens_per_s", d1.bandwidth / static_cast<double>(wbytes)},
                      {"bandwidth_fraction", d1.fraction},
                      {"decode1_rounds", d1.rounds}};
  report_decode_kernels(j, w->config(), o);
  report_roofline(j, w->config(), o, opt, d1, wbytes);
  if (a.lora_rank > 0) {  // the same run with adapters on all linears, unmerged (random A and B, alpha 2r)
    LoraConfig lc;
    lc.rank = a.lora_rank;
    lc.alpha = 2.0 * static_cast<double>(a.lora_rank);
    lc.target = ModuleSelector::from_json("all-linear", "bench rollout");
    LoraAdapters lora(w->config(), lc, "bench rollout --lora-rank", /*vision_frozen=*/true);
    Rng rng(o.seed + 1);
    float* p = lora.params().flat().f32();
    for (int64_t i = 0; i < lora.params().numel(); ++i) p[i] = 0.02f * static_cast<float>(rng.normal());
    std::fprintf(stderr, "[bench rollout] LoRA rank %lld on all linears, unmerged...\n",
                 static_cast<long long>(a.lora_rank));
    rollout::RolloutBenchOptions lo = o;
    lo.lora = &lora;
    if (a.profile) Profiler::enable(true);
    rollout::RolloutBenchResult lr = rollout::run_rollout_bench(*w, lo, true);
    print_profile("LoRA");
    j["lora_rank"] = a.lora_rank;
    j["lora_gen_tokens_per_s"] = lr.gen_tokens_per_s;
    j["lora_decode_tokens_per_s"] = lr.decode_tokens_per_s;
    // The unmerged low-rank path's cost: the rollout's time with adapters over without, same run.
    j["lora_rollout_time_ratio"] = opt.gen_tokens_per_s / lr.gen_tokens_per_s;
  }
  if (!a.skip_baseline) {
    std::fprintf(stderr, "[bench rollout] baseline (static batch, own prefill per sample, f32 KV, no prefix cache, "
                         "oneDNN GEMM)...\n");
    rollout::RolloutBenchResult base = rollout::run_rollout_bench(*w, o, false);
    j["baseline_gen_tokens_per_s"] = base.gen_tokens_per_s;
    j["baseline_kv_bytes"] = base.kv_bytes;
    j["speedup"] = opt.gen_tokens_per_s / base.gen_tokens_per_s;
  } else {
    j["baseline_gen_tokens_per_s"] = nullptr;
    j["speedup"] = nullptr;
  }
  std::printf("%s\n", j.dump(2).c_str());
}

void setup_bench_rollout(CLI::App& app) {
  CLI::App* bench = group_command(app, "bench", "Benchmarks (print JSON)");
  auto a = std::make_shared<BenchRolloutArgs>();
  CLI::App* c = bench->add_subcommand("rollout", "Generation throughput, optimised vs baseline, and decode vs bandwidth");
  auto* model = c->add_option("--model", a->model, "Hugging Face model folder");
  c->add_option("--preset", a->preset, "Random model of this preset when no --model")
      ->check(CLI::IsMember(preset_names()))
      ->excludes(model);
  c->add_option("--arch", a->arch, "Architecture of the preset")->excludes(model);
  c->add_option("--prompts", a->o.prompts, "Prompts (N)");
  c->add_option("--n", a->o.n, "Samples per prompt (G)");
  c->add_option("--prompt-len", a->o.prompt_len, "Prompt tokens (P)");
  c->add_option("--max-new-tokens", a->o.max_new_tokens, "New tokens per sample (L), exactly");
  c->add_option("--dtype", a->dtype, "Weights read as f32 or bf16")->check(CLI::IsMember({"f32", "bf16"}));
  c->add_option("--decode-matmul", a->decode_matmul,
                 "Matmuls of the optimised run: batch_invariant (results independent of the batch), fastest "
                 "(oneDNN above the measured crossover) or onednn")
      ->check(CLI::IsMember({"batch_invariant", "fastest", "onednn"}))
      ->capture_default_str();
  c->add_option("--seed", a->o.seed, "Seed");
  c->add_flag("--skip-baseline", a->skip_baseline, "Do not run the baseline");
  c->add_flag("--profile", a->profile,
              "Print the time per kernel and phase of the optimised run (and of the LoRA run)");
  c->add_option("--threads", a->threads, "Threads (default: all cores)");
  c->add_option("--lora-rank", a->lora_rank, "Also time the optimised run with LoRA of this rank on all linears "
                "(unmerged), against the run without")->check(CLI::NonNegativeNumber);
  c->callback([a] { run(*a); });
}

GRPO_REGISTER_COMMAND(setup_bench_rollout);

}  // namespace
}  // namespace grpo::cli
