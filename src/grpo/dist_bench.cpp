// The communication table of `grpo bench dist` (see dist_bench.h).
#include "grpo/dist_bench.h"

#include <cstdio>

#include "core/error.h"

namespace grpo {

namespace {

const char* kReduce = "actor_rollout_ref.actor.fsdp_config.mixed_precision.reduce_dtype=";
const char* kOverlap = "actor_rollout_ref.actor.fsdp_config.overlap_comm=";
const char* kPerMicro = "actor_rollout_ref.actor.fsdp_config.reduce_per_micro_batch=";

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

double efficiency(const DistBenchRun& r, const DistBenchRun& one) {
  return one.result.throughput > 0 ? r.result.throughput / one.result.throughput : 0.0;
}

// The same work's CPU seconds on one rank over those of all N ranks: 1 when distributing costs nothing
// extra (communication, polling, duplicated bookkeeping), whatever else the machine runs.
double cpu_efficiency(const DistBenchRun& r, const DistBenchRun& one) {
  return r.result.cpu_time_s > 0 ? one.result.cpu_time_s / r.result.cpu_time_s : 0.0;
}

}  // namespace

std::vector<DistBenchRun> dist_bench_runs(int ranks) {
  GRPO_CHECK(ranks >= 2, "[bench dist] --np must be at least 2, got ", ranks);
  return {
      {"1 rank", 1, {}, {}},
      {"baseline (fp32, no overlap)", ranks,
       {std::string(kReduce) + "fp32", std::string(kOverlap) + "false", std::string(kPerMicro) + "false"}, {}},
      {"overlap + bf16", ranks,
       {std::string(kReduce) + "bf16", std::string(kOverlap) + "true", std::string(kPerMicro) + "false"}, {}},
      {"overlap + bf16, per micro-batch", ranks,
       {std::string(kReduce) + "bf16", std::string(kOverlap) + "true", std::string(kPerMicro) + "true"}, {}},
  };
}

std::string dist_bench_table(const std::vector<DistBenchRun>& runs) {
  char buf[512];
  std::string t;
  std::snprintf(buf, sizeof buf, "| %-32s | %5s | %8s | %8s | %10s | %9s | %13s | %7s | %9s | %11s |\n", "run",
                "ranks", "step (s)", "comm (s)", "comm share", "MB / step", "tokens/s/rank", "scaling", "CPU s/step",
                "CPU scaling");
  t += buf;
  t += "|----------------------------------|-------|----------|----------|------------|-----------|---------------|"
       "---------|-----------|-------------|\n";
  for (const DistBenchRun& r : runs) {
    const GrpoBenchRun& x = r.result;
    std::snprintf(buf, sizeof buf, "| %-32s | %5d | %8.2f | %8s | %10s | %9s | %13.0f | %7s | %9.2f | %11s |\n",
                  r.name.c_str(), r.ranks, x.step_time_s, x.distributed ? fmt("%.3f", x.comm_s).c_str() : "-",
                  x.distributed ? fmt("%.1f%%", 100 * x.comm_share).c_str() : "-",
                  x.distributed ? fmt("%.1f", x.comm_bytes / 1e6).c_str() : "-", x.throughput,
                  r.ranks > 1 ? fmt("%.2f", efficiency(r, runs[0])).c_str() : "1", x.cpu_time_s,
                  r.ranks > 1 ? fmt("%.2f", cpu_efficiency(r, runs[0])).c_str() : "1");
    t += buf;
  }
  t += "targets: overlap + bf16 comm share <= half the baseline's (the mission: 18% -> 9%); scaling efficiency "
       ">= 0.9.\nscaling: N-rank tokens/s / (N x 1-rank tokens/s), wall clock; CPU scaling: the 1-rank run's CPU "
       "seconds per step / all N ranks' (what distributing costs, whatever else the machine runs)\n";
  return t;
}

nlohmann::json dist_bench_json(const GrpoBenchOptions& o, const std::vector<DistBenchRun>& runs) {
  nlohmann::json j = {{"model", o.arch + ":" + o.preset},
                      {"prompts", o.prompts},
                      {"n", o.n},
                      {"max_response_length", o.max_response_length},
                      {"ranks", runs.back().ranks},
                      {"steps_measured", runs[0].result.steps_measured}};
  nlohmann::json rows = nlohmann::json::array();
  for (const DistBenchRun& r : runs) {
    const GrpoBenchRun& x = r.result;
    rows.push_back({{"name", r.name},
                    {"ranks", r.ranks},
                    {"step_time_s", x.step_time_s},
                    {"comm_s", x.distributed ? nlohmann::json(x.comm_s) : nlohmann::json()},
                    {"comm_share", x.distributed ? nlohmann::json(x.comm_share) : nlohmann::json()},
                    {"comm_bytes", x.distributed ? nlohmann::json(x.comm_bytes) : nlohmann::json()},
                    {"throughput", x.throughput},
                    {"scaling_efficiency", efficiency(r, runs[0])},
                    {"cpu_time_s", x.cpu_time_s},
                    {"cpu_efficiency", cpu_efficiency(r, runs[0])}});
  }
  j["runs"] = rows;
  const GrpoBenchRun& base = runs[1].result;
  const GrpoBenchRun& best = runs[2].result;
  j["comm_share_ratio"] = base.comm_share > 0 ? best.comm_share / base.comm_share : 0.0;
  j["scaling_efficiency"] = efficiency(runs[2], runs[0]);
  j["targets_met"] = best.comm_share <= 0.5 * base.comm_share && efficiency(runs[2], runs[0]) >= 0.9;
  return j;
}

}  // namespace grpo
