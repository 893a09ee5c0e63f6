// The communication table behind `grpo bench dist`: the same GRPO steps as `grpo bench grpo`'s optimised
// run (a random preset model on the arithmetic prompts) with one rank, then with N ranks started by
// mpirun, one thread per rank, in three ways:
//   baseline        fp32 gradients, reduced once after the last backward (no overlap)
//   overlap + bf16  bf16 gradients (opt-in), each bucket reduced as soon as the backward finished it, once per
//                   mini-batch
//   per micro-batch overlap + bf16, reducing after every micro-batch (the default schedule, as FSDP's)
// Columns: step time, communication on the critical path (timing_s/comm and its share of the step),
// bytes sent per step (all ranks), throughput per rank and scaling efficiency = N-rank tokens/s /
// (N x 1-rank tokens/s), i.e. the ratio of perf/throughput, and the CPU seconds per step of all ranks with
// their ratio to one rank's (on a machine shared with other work, wall-clock scaling measures the
// neighbours too; CPU time measures what distributing costs). The first step of each run is a warm-up.
// With R repeats the four runs go round R times in turn; each value is the median over the repeats, and the
// ratios (scaling, comm share against the baseline) are medians of the ratios within each round, so that a
// machine whose speed drifts between rounds moves both sides of a ratio.
// With --vl (a Qwen3-VL model on the shapes task's pictures) the table adds the vision tower's share of the
// step (rank 0's tower seconds, rollout and training, over the step time).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/grpo_bench.h"

namespace grpo {

struct DistBenchRun {
  std::string name;
  int ranks = 1;
  std::vector<std::string> overrides;  // on top of grpo_bench_overrides(optimised)
  std::vector<GrpoBenchRun> results;   // one per repeat, in the order they ran
  GrpoBenchRun median() const;         // step time, comm, share, bytes, throughput, CPU time: medians
};

// The runs above for N ranks, results empty.
std::vector<DistBenchRun> dist_bench_runs(int ranks);

// Median over the repeats of a.results[i].*num / b.results[i].*den (0 where a denominator is 0).
double paired_ratio(const DistBenchRun& a, double GrpoBenchRun::*num, const DistBenchRun& b,
                    double GrpoBenchRun::*den);

// The human table and the JSON object (per run: step_time_s, comm_s, comm_share, comm_bytes, throughput,
// scaling_efficiency, medians, and the step times of every repeat, with --vl vision_gen_s, vision_train_s and
// vision_share; and the two targets: comm share of
// overlap + bf16 at most half the baseline's, scaling efficiency of overlap + bf16 at least 0.9).
std::string dist_bench_table(const std::vector<DistBenchRun>& runs);
nlohmann::json dist_bench_json(const GrpoBenchOptions& o, const std::vector<DistBenchRun>& runs);

}  // namespace grpo
