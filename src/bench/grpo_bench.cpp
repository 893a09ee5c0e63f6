// GRPO benchmark configurations and summaries (see grpo_bench.h).
#include "bench/grpo_bench.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "report/metrics.h"

namespace grpo {

const std::vector<GrpoBenchSwitch>& grpo_bench_switches() {
  static const std::vector<GrpoBenchSwitch> switches = {
      {"dynamic micro-batches", "actor_rollout_ref.actor.use_dynamic_bsz", "true", "false"},
      {"padding removed", "actor_rollout_ref.model.use_remove_padding", "true", "false"},
      {"fused kernels", "actor_rollout_ref.model.use_fused_kernels", "true", "false"},
      {"continuous batching", "actor_rollout_ref.rollout.continuous_batching", "true", "false"},
      {"shared group prompt", "actor_rollout_ref.rollout.share_group_prompt", "true", "false"},
      {"prefix cache", "actor_rollout_ref.rollout.enable_prefix_caching", "true", "false"},
      {"bf16 KV cache", "actor_rollout_ref.rollout.kv_cache_dtype", "bf16", "f32"},
      {"batch-invariant GEMV", "actor_rollout_ref.rollout.decode_matmul", "batch_invariant", "onednn"},
  };
  return switches;
}

GrpoBenchOptions grpo_bench_defaults(GrpoBenchOptions o, const char* command) {
  if (o.vl) o.arch = "qwen3-vl";
  if (o.max_prompt_length <= 0) o.max_prompt_length = o.vl ? 128 : 48;
  GRPO_CHECK(o.steps >= 1 && o.prompts >= 1 && o.n >= 1 && o.max_prompt_length >= 1 && o.max_response_length >= 1 &&
                 o.micro_batch >= 1,
             "[", command, "] --steps, --prompts, --n, --max-prompt-length, --max-response-length and --micro-batch "
             "must be >= 1");
  GRPO_CHECK(o.lengths == "fixed" || o.lengths == "long_tail", "[", command, "] --lengths must be fixed or long_tail, got \"",
             o.lengths, "\"");
  if (o.mini_batch_prompts <= 0) o.mini_batch_prompts = o.prompts;
  GRPO_CHECK(o.prompts % o.mini_batch_prompts == 0, "[", command, "] --mini-batch-prompts ", o.mini_batch_prompts,
             " must divide --prompts ", o.prompts, " (ppo_mini_batch_size divides data.train_batch_size)");
  return o;
}

int64_t memory_matched_token_budget(const GrpoBenchOptions& options) {
  const GrpoBenchOptions o = grpo_bench_defaults(options);
  return o.micro_batch * (o.max_prompt_length + o.max_response_length);
}

std::vector<std::string> grpo_bench_overrides(const GrpoBenchOptions& options, const std::string& model_dir,
                                              const std::string& train_file, const std::string& run_dir,
                                              const std::vector<std::string>& off) {
  const GrpoBenchOptions o = grpo_bench_defaults(options);
  GRPO_CHECK(o.dtype == "bf16" || o.dtype == "f32", "[bench grpo] --dtype must be bf16 or f32, got \"", o.dtype, "\"");
  std::vector<std::string> s = {
      "actor_rollout_ref.model.path=" + model_dir,
      "data.train_files=" + train_file,
      "data.val_files=''",
      "data.train_batch_size=" + std::to_string(o.prompts),
      "data.max_prompt_length=" + std::to_string(o.max_prompt_length),
      "data.max_response_length=" + std::to_string(o.max_response_length),
      "actor_rollout_ref.rollout.n=" + std::to_string(o.n),
      "actor_rollout_ref.rollout.ignore_eos=true",
      "actor_rollout_ref.rollout.response_lengths=" + std::string(o.lengths == "long_tail" ? "long_tail" : "off"),
      "actor_rollout_ref.actor.ppo_mini_batch_size=" + std::to_string(o.mini_batch_prompts),
      "actor_rollout_ref.actor.optim.lr=1e-6",
      "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=" + std::to_string(memory_matched_token_budget(o)),
      "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=" + std::to_string(o.micro_batch),
      "algorithm.filter_groups.enable=false",
      "reward.overlong_buffer.enable=false",  // lengths set by the benchmark: no length shaping
      std::string("mixed_precision.enabled=") + (o.dtype == "bf16" ? "true" : "false"),
      "trainer.total_training_steps=" + std::to_string(o.steps),
      "trainer.val_before_train=false",
      "trainer.test_freq=-1",
      "trainer.save_freq=-1",
      "trainer.seed=" + std::to_string(o.seed),
      "trainer.default_local_dir=" + run_dir,
  };
  for (const std::string& name : off) {
    const auto& sw = grpo_bench_switches();
    GRPO_CHECK(std::any_of(sw.begin(), sw.end(), [&](const GrpoBenchSwitch& x) { return x.name == name; }),
               "[bench grpo] no optimisation named \"", name, "\"");
  }
  for (const GrpoBenchSwitch& sw : grpo_bench_switches()) {
    const bool is_off = std::find(off.begin(), off.end(), sw.name) != off.end();
    s.push_back(sw.key + "=" + (is_off ? sw.off : sw.on));
  }
  return s;
}

GrpoBenchRun summarise_grpo_bench_run(const std::string& metrics_path) {
  std::vector<nlohmann::json> steps;
  for (nlohmann::json& m : read_metrics(metrics_path))
    if (m.contains("timing_s/step")) steps.push_back(std::move(m));
  GRPO_CHECK(!steps.empty(), "[bench grpo] ", metrics_path, " has no training step");
  GrpoBenchRun r;
  const size_t first = steps.size() > 1 ? 1 : 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const nlohmann::json& m = steps[i];
    r.peak_rss_bytes = std::max(r.peak_rss_bytes, m.value("perf/peak_rss_bytes", int64_t{0}));
    if (i < first) continue;
    const double step = m.at("timing_s/step").get<double>();
    r.step_time_s += step;
    r.rollout_tokens_per_s += m.value("perf/rollout_tokens_per_s", 0.0);
    r.packing_efficiency += m.value("perf/packing_efficiency", 0.0);
    r.rollout_share += m.value("timing_s/gen", 0.0) / std::max(1e-9, step);
    r.train_tokens_per_step += m.value("perf/train_tokens", 0.0);
    r.vision = r.vision || m.contains("timing_s/vision_gen");
    r.vision_gen_s += m.value("timing_s/vision_gen", 0.0);
    r.vision_train_s += m.value("timing_s/vision_train", 0.0);
    r.vision_gen_patches += m.value("perf/vision_gen_patches", 0.0);
    r.vision_train_patches += m.value("perf/vision_train_patches", 0.0);
    r.vision_train_flops += m.value("perf/vision_train_flops", 0.0);
    r.throughput += m.value("perf/throughput", 0.0);
    r.cpu_time_s += m.value("perf/cpu_time_s", 0.0);
    r.distributed = m.contains("perf/comm_share");
    r.comm_s += m.value("timing_s/comm", 0.0);
    r.comm_share += m.value("perf/comm_share", 0.0);
    r.comm_bytes += m.value("perf/comm_bytes", 0.0);
    r.steps_measured++;
  }
  const double n = static_cast<double>(r.steps_measured);
  r.step_time_s /= n;
  r.rollout_tokens_per_s /= n;
  r.packing_efficiency /= n;
  r.rollout_share /= n;
  r.train_tokens_per_step /= n;
  for (double* v : {&r.vision_gen_s, &r.vision_train_s, &r.vision_gen_patches, &r.vision_train_patches,
                    &r.vision_train_flops})
    *v /= n;
  r.throughput /= n;
  r.cpu_time_s /= n;
  r.comm_s /= n;
  r.comm_share /= n;
  r.comm_bytes /= n;
  return r;
}

std::string format_number(const char* printf_format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, printf_format, v);
  return buf;
}

namespace {

std::string row(const char* name, const std::string& base, const std::string& opt, const std::string& change,
                const char* reference) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "| %-28s | %12s | %12s | %10s | %-22s |\n", name, base.c_str(), opt.c_str(),
                change.c_str(), reference);
  return buf;
}

std::string relative(double opt, double base) { return format_number("%+.1f%%", 100.0 * (opt / base - 1.0)); }

}  // namespace

std::string grpo_bench_ablation_table(const std::vector<GrpoBenchRun>& runs) {
  GRPO_CHECK(!runs.empty(), "[bench grpo] no run to tabulate");
  const GrpoBenchRun& all_on = runs.front();
  char buf[320];
  std::snprintf(buf, sizeof buf, "| %-28s | %9s | %10s | %9s | %8s | %9s | %9s |\n", "run", "step (s)", "vs all on",
                "rollout/s", "packing", "peak MiB", "tokens");
  std::string t = buf;
  t += "|------------------------------|-----------|------------|-----------|----------|-----------|-----------|\n";
  for (const GrpoBenchRun& r : runs) {
    std::snprintf(buf, sizeof buf, "| %-28s | %9.2f | %10s | %9.0f | %7.1f%% | %9.0f | %9.0f |\n", r.label.c_str(),
                  r.step_time_s, &r == &all_on ? "" : relative(r.step_time_s, all_on.step_time_s).c_str(),
                  r.rollout_tokens_per_s, 100 * r.packing_efficiency, r.peak_rss_bytes / 1048576.0,
                  r.train_tokens_per_step);
    t += buf;
  }
  return t;
}

std::string grpo_bench_table(const GrpoBenchRun& o, const GrpoBenchRun& b) {
  std::string t = row("metric", "baseline", "optimised", "change", "reference run (8 GPUs)");
  t += "|------------------------------|--------------|--------------|------------|------------------------|\n";
  t += row("step time (s)", format_number("%.2f", b.step_time_s), format_number("%.2f", o.step_time_s),
           relative(o.step_time_s, b.step_time_s), "-31%");
  t += row("rollout tokens/s", format_number("%.0f", b.rollout_tokens_per_s), format_number("%.0f", o.rollout_tokens_per_s),
           relative(o.rollout_tokens_per_s, b.rollout_tokens_per_s), "+45.6%");
  t += row("packing efficiency", format_number("%.1f%%", 100 * b.packing_efficiency), format_number("%.1f%%", 100 * o.packing_efficiency),
           format_number("%+.1f pt", 100 * (o.packing_efficiency - b.packing_efficiency)), "68% -> 85%");
  t += row("peak RSS (MiB)", format_number("%.0f", b.peak_rss_bytes / 1048576.0), format_number("%.0f", o.peak_rss_bytes / 1048576.0),
           relative(static_cast<double>(o.peak_rss_bytes), static_cast<double>(b.peak_rss_bytes)), "");
  t += row("rollout share of the step", format_number("%.1f%%", 100 * b.rollout_share), format_number("%.1f%%", 100 * o.rollout_share),
           "", "58% before");
  t += row("communication share", "n/a", "n/a", "", "18% -> 9%");  // one process; see grpo bench dist
  t += row("training tokens per step", format_number("%.0f", b.train_tokens_per_step), format_number("%.0f", o.train_tokens_per_step),
           "", "");
  return t;
}

std::string grpo_bench_vision_table(const GrpoBenchRun& o, double peak) {
  const double gflops = o.vision_train_flops * 1e-9 / std::max(1e-9, o.vision_train_s);
  std::string t = row("vision tower (all on)", "per step", "share", "", "");
  t += "|------------------------------|--------------|--------------|------------|------------------------|\n";
  t += row("in rollout (s)", format_number("%.3f", o.vision_gen_s), format_number("%.1f%%", 100 * o.vision_gen_s / o.step_time_s), "",
           "once per prompt");
  t += row("in training (s)", format_number("%.3f", o.vision_train_s), format_number("%.1f%%", 100 * o.vision_train_s / o.step_time_s),
           "", "forward + backward");
  t += row("patch rows (rollout/train)", format_number("%.0f", o.vision_gen_patches), format_number("%.0f", o.vision_train_patches), "",
           "");
  t += row("training patches/s", format_number("%.0f", o.vision_train_patches / std::max(1e-9, o.vision_train_s)), "", "",
           "forward + backward");
  t += row("training GFLOP/s", format_number("%.1f", gflops), format_number("%.0f%%", 100 * gflops / std::max(1e-9, peak)), "",
           "of the GEMM peak");
  return t;
}

nlohmann::json grpo_bench_json(const GrpoBenchOptions& opt, const GrpoBenchRun& o, const GrpoBenchRun& b,
                               const std::vector<GrpoBenchRun>& runs, double peak) {
  nlohmann::json all = nlohmann::json::array();
  for (const GrpoBenchRun& r : runs)
    all.push_back({{"run", r.label},
                   {"step_time_s", r.step_time_s},
                   {"rollout_tokens_per_s", r.rollout_tokens_per_s},
                   {"packing_efficiency", r.packing_efficiency},
                   {"peak_rss_bytes", r.peak_rss_bytes},
                   {"train_tokens_per_step", r.train_tokens_per_step}});
  nlohmann::json vision = nullptr;
  if (o.vision) {
    const double gflops = o.vision_train_flops * 1e-9 / std::max(1e-9, o.vision_train_s);
    vision = {{"vision_gen_s", o.vision_gen_s},
              {"vision_train_s", o.vision_train_s},
              {"vision_gen_share", o.vision_gen_s / o.step_time_s},
              {"vision_train_share", o.vision_train_s / o.step_time_s},
              {"gen_patches", o.vision_gen_patches},
              {"train_patches", o.vision_train_patches},
              {"train_patches_per_s", o.vision_train_patches / std::max(1e-9, o.vision_train_s)},
              {"train_gflops", gflops},
              {"gemm_peak_gflops", peak},
              {"gemm_peak_fraction", peak > 0 ? gflops / peak : 0.0}};
  }
  return {{"model", opt.arch + ":" + opt.preset},
          {"dtype", opt.dtype},
          {"steps_measured", o.steps_measured},
          {"prompts", opt.prompts},
          {"n", opt.n},
          {"max_response_length", opt.max_response_length},
          {"lengths", opt.lengths},
          {"token_budget", memory_matched_token_budget(opt)},
          {"baseline_micro_batch", opt.micro_batch},
          {"step_time_s", o.step_time_s},
          {"baseline_step_time_s", b.step_time_s},
          {"step_time_change", o.step_time_s / b.step_time_s - 1.0},
          {"rollout_tokens_per_s", o.rollout_tokens_per_s},
          {"baseline_rollout_tokens_per_s", b.rollout_tokens_per_s},
          {"rollout_throughput_change", o.rollout_tokens_per_s / b.rollout_tokens_per_s - 1.0},
          {"packing_efficiency", o.packing_efficiency},
          {"baseline_packing_efficiency", b.packing_efficiency},
          {"peak_rss_bytes", o.peak_rss_bytes},
          {"baseline_peak_rss_bytes", b.peak_rss_bytes},
          {"rollout_share", o.rollout_share},
          {"baseline_rollout_share", b.rollout_share},
          {"train_tokens_per_step", o.train_tokens_per_step},
          {"baseline_train_tokens_per_step", b.train_tokens_per_step},
          {"comm_share", nullptr},
          {"vision", vision},
          {"runs", all}};
}

}  // namespace grpo
