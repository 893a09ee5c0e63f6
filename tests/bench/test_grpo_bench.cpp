// Tests of `grpo bench grpo`'s pieces: the runs' overrides load as valid configs that switch exactly the
// named optimisations off, with the same work (fixed-length responses) and memory-matched micro-batches in
// every run; the summary of a metrics file (warm-up step left out, peak RSS the maximum) feeds the tables
// and the JSON keys the ablation table needs; `bench dist`'s repeats give medians and per-round ratios.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"
#include "core/files.h"
#include "config/config.h"
#include "config/part_options.h"
#include "bench/dist_bench.h"
#include "bench/grpo_bench.h"
#include "rollout/response_lengths.h"
#include "report/metrics.h"
#include "temp_dir.h"

using namespace grpo;

namespace {

Config bench_config(const GrpoBenchOptions& o, const std::vector<std::string>& off) {
  const std::string yaml = std::string(GRPO_SOURCE_DIR) + (o.vl ? "/examples/shapes-grpo.yaml" : "/examples/arith-grpo.yaml");
  return load_config(yaml, grpo_bench_overrides(o, "m", "t.jsonl", "runs/x", off));
}

}  // namespace

TEST(GrpoBench, OverridesSwitchEveryOptimisation) {
  GrpoBenchOptions o = grpo_bench_defaults({});
  EXPECT_EQ(o.max_prompt_length, 48);
  std::vector<std::string> all;
  for (const GrpoBenchSwitch& sw : grpo_bench_switches()) all.push_back(sw.name);
  const Config on = bench_config(o, {}), off = bench_config(o, all);
  for (const Config* c : {&on, &off}) {
    EXPECT_EQ(c->data.train_batch_size, o.prompts);
    EXPECT_EQ(c->actor_rollout_ref.rollout.n, o.n);
    EXPECT_EQ(c->trainer.total_training_steps, o.steps);
    EXPECT_TRUE(c->data.val_files.empty());
    EXPECT_FALSE(c->algorithm.filter_groups.enable);
    EXPECT_TRUE(c->mixed_precision.enabled);  // same precision in every run
    EXPECT_TRUE(c->actor_rollout_ref.rollout.ignore_eos);  // the same work: every response full length
    EXPECT_EQ(c->data.max_response_length, o.max_response_length);
    // Memory-matched: the fixed micro-batch of full-length sequences holds the optimised token budget.
    EXPECT_EQ(c->actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu, o.micro_batch);
    EXPECT_EQ(c->actor_rollout_ref.actor.ppo_max_token_len_per_gpu,
              o.micro_batch * (o.max_prompt_length + o.max_response_length));
    EXPECT_EQ(c->data.max_prompt_length, o.max_prompt_length);
    // The same KV sizing rule: nothing run-specific about memory.
    EXPECT_EQ(c->actor_rollout_ref.rollout.gpu_memory_utilization, on.actor_rollout_ref.rollout.gpu_memory_utilization);
    EXPECT_EQ(c->actor_rollout_ref.rollout.max_num_seqs, on.actor_rollout_ref.rollout.max_num_seqs);
  }
  EXPECT_TRUE(on.actor_rollout_ref.actor.use_dynamic_bsz);
  EXPECT_FALSE(off.actor_rollout_ref.actor.use_dynamic_bsz);
  EXPECT_TRUE(on.actor_rollout_ref.model.use_remove_padding);
  EXPECT_FALSE(off.actor_rollout_ref.model.use_remove_padding);
  EXPECT_TRUE(on.actor_rollout_ref.model.use_fused_kernels);
  EXPECT_FALSE(off.actor_rollout_ref.model.use_fused_kernels);
  EXPECT_TRUE(on.actor_rollout_ref.rollout.share_group_prompt && on.actor_rollout_ref.rollout.enable_prefix_caching &&
              on.actor_rollout_ref.rollout.continuous_batching);
  EXPECT_FALSE(off.actor_rollout_ref.rollout.share_group_prompt || off.actor_rollout_ref.rollout.enable_prefix_caching ||
               off.actor_rollout_ref.rollout.continuous_batching);
  EXPECT_EQ(on.actor_rollout_ref.rollout.decode_matmul, ops::DecodeMatmul::BatchInvariant);
  EXPECT_EQ(off.actor_rollout_ref.rollout.decode_matmul, ops::DecodeMatmul::OneDnn);
  EXPECT_EQ(on.actor_rollout_ref.rollout.kv_cache_dtype, KvCacheDtype::BF16);
  EXPECT_EQ(off.actor_rollout_ref.rollout.kv_cache_dtype, KvCacheDtype::F32);
  EXPECT_EQ(off.trainer.default_local_dir, "runs/x");

  // One switch off alone changes its key only.
  const Config no_prefix = bench_config(o, {"prefix cache"});
  EXPECT_FALSE(no_prefix.actor_rollout_ref.rollout.enable_prefix_caching);
  EXPECT_TRUE(no_prefix.actor_rollout_ref.rollout.share_group_prompt);
  EXPECT_TRUE(no_prefix.actor_rollout_ref.actor.use_dynamic_bsz);
  EXPECT_EQ(bench_config(o, {"bf16 KV cache"}).actor_rollout_ref.rollout.kv_cache_dtype, KvCacheDtype::F32);
  EXPECT_THROW(bench_config(o, {"no such optimisation"}), Error);
  o.dtype = "f32";
  EXPECT_FALSE(bench_config(o, {}).mixed_precision.enabled);
  o.dtype = "fp8";
  EXPECT_THROW(bench_config(o, {}), Error);
}

TEST(GrpoBench, SummaryLeavesOutTheWarmUpStep) {
  test::TempDir dir;
  const std::string path = dir.path() + "/metrics.jsonl";
  {
    MetricsWriter w(path, true);
    w.write(0, {{"val/accuracy", 0.5}});  // validation lines are not steps
    w.write(1, {{"timing_s/step", 10.0}, {"timing_s/gen", 5.0}, {"perf/rollout_tokens_per_s", 1.0},
                {"perf/packing_efficiency", 0.1}, {"perf/peak_rss_bytes", 300}, {"perf/train_tokens", 1}});
    w.write(2, {{"timing_s/step", 2.0}, {"timing_s/gen", 1.0}, {"perf/rollout_tokens_per_s", 100.0},
                {"perf/packing_efficiency", 0.8}, {"perf/peak_rss_bytes", 200}, {"perf/train_tokens", 1000}});
    w.write(3, {{"timing_s/step", 4.0}, {"timing_s/gen", 1.0}, {"perf/rollout_tokens_per_s", 300.0},
                {"perf/packing_efficiency", 0.9}, {"perf/peak_rss_bytes", 250}, {"perf/train_tokens", 3000}});
  }
  const GrpoBenchRun r = summarise_grpo_bench_run(path);
  EXPECT_EQ(r.steps_measured, 2);
  EXPECT_DOUBLE_EQ(r.step_time_s, 3.0);
  EXPECT_DOUBLE_EQ(r.rollout_tokens_per_s, 200.0);
  EXPECT_DOUBLE_EQ(r.packing_efficiency, 0.85);
  EXPECT_DOUBLE_EQ(r.rollout_share, (0.5 + 0.25) / 2);
  EXPECT_DOUBLE_EQ(r.train_tokens_per_step, 2000.0);
  EXPECT_EQ(r.peak_rss_bytes, 300);  // the maximum over every step, warm-up included

  GrpoBenchRun base = r;
  base.step_time_s = 6.0;
  GrpoBenchRun on = r, no_cache = r;
  on.label = "all on";
  no_cache.label = "no prefix cache";
  no_cache.step_time_s = 3.3;
  const nlohmann::json j = grpo_bench_json(GrpoBenchOptions{}, r, base, {on, no_cache});
  for (const char* key : {"step_time_s", "baseline_step_time_s", "rollout_tokens_per_s", "baseline_rollout_tokens_per_s",
                          "packing_efficiency", "baseline_packing_efficiency", "peak_rss_bytes",
                          "baseline_peak_rss_bytes", "comm_share"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_TRUE(j["comm_share"].is_null());
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["runs"][1]["run"], "no prefix cache");
  const std::string ablation = grpo_bench_ablation_table({on, no_cache});
  EXPECT_NE(ablation.find("no prefix cache"), std::string::npos) << ablation;
  EXPECT_NE(ablation.find("+10.0%"), std::string::npos) << ablation;
  EXPECT_DOUBLE_EQ(j["step_time_change"].get<double>(), -0.5);
  const std::string table = grpo_bench_table(r, base);
  EXPECT_NE(table.find("-50.0%"), std::string::npos) << table;
  EXPECT_NE(table.find("85.0%"), std::string::npos) << table;
  EXPECT_THROW(grpo_bench_ablation_table({}), Error);

  EXPECT_THROW(summarise_grpo_bench_run(dir.path() + "/missing.jsonl"), Error);
}

// --vl: the shapes config with the same switches, prompts long enough for a chat turn with a picture; the
// vision tower's metrics summarised per step and reported against the GEMM peak.
TEST(GrpoBench, VisionRunsAndTheirTowerRows) {
  GrpoBenchOptions o;
  o.vl = true;
  EXPECT_EQ(grpo_bench_defaults(o).arch, "qwen3-vl");
  EXPECT_EQ(grpo_bench_defaults(o).max_prompt_length, 128);
  const Config c = bench_config(o, {});
  EXPECT_EQ(c.data.max_prompt_length, 128);
  EXPECT_TRUE(c.data.apply_chat_template);
  EXPECT_EQ(c.actor_rollout_ref.rollout.decode_matmul,
            ops::DecodeMatmul::BatchInvariant);  // the switch, not the yaml's value
  EXPECT_EQ(bench_config(o, {"batch-invariant GEMV"}).actor_rollout_ref.rollout.decode_matmul,
            ops::DecodeMatmul::OneDnn);

  test::TempDir dir;
  const std::string path = dir.path() + "/metrics.jsonl";
  {
    MetricsWriter w(path, true);
    for (int step = 1; step <= 3; ++step)
      w.write(step, {{"timing_s/step", 4.0}, {"timing_s/gen", 2.0}, {"timing_s/vision_gen", 0.2 * step},
                     {"timing_s/vision_train", 0.5}, {"perf/vision_gen_patches", 64},
                     {"perf/vision_train_patches", 512}, {"perf/vision_train_flops", 2e9}});
  }
  const GrpoBenchRun r = summarise_grpo_bench_run(path);
  EXPECT_TRUE(r.vision);
  EXPECT_DOUBLE_EQ(r.vision_gen_s, 0.5);  // steps 2 and 3
  EXPECT_DOUBLE_EQ(r.vision_train_patches, 512);
  const nlohmann::json j = grpo_bench_json(o, r, r, {}, /*gemm_peak_gflops=*/8.0);
  EXPECT_DOUBLE_EQ(j["vision"]["train_patches_per_s"].get<double>(), 1024.0);
  EXPECT_DOUBLE_EQ(j["vision"]["train_gflops"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(j["vision"]["gemm_peak_fraction"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["vision"]["vision_train_share"].get<double>(), 0.125);
  const std::string table = grpo_bench_vision_table(r, 8.0);
  EXPECT_NE(table.find("1024"), std::string::npos) << table;
  EXPECT_NE(table.find("50%"), std::string::npos) << table;
  EXPECT_TRUE(grpo_bench_json(GrpoBenchOptions{}, GrpoBenchRun{}, GrpoBenchRun{})["vision"].is_null());
}

TEST(GrpoBench, MiniBatchPromptsSetPpoMiniBatchSizeAndMustDivideThePrompts) {
  GrpoBenchOptions o;
  o.prompts = 16;
  EXPECT_EQ(bench_config(grpo_bench_defaults(o), {}).actor_rollout_ref.actor.ppo_mini_batch_size, 16);  // one update
  o.mini_batch_prompts = 4;
  EXPECT_EQ(bench_config(grpo_bench_defaults(o), {}).actor_rollout_ref.actor.ppo_mini_batch_size, 4);
  o.mini_batch_prompts = 5;
  EXPECT_THROW(grpo_bench_defaults(o, "bench dist"), Error);
}

TEST(DistBench, RepeatsGiveMediansAndRatiosPairedWithinEachRound) {
  std::vector<DistBenchRun> runs = dist_bench_runs(2);
  ASSERT_EQ(runs.size(), 4u);
  // Three rounds on a machine whose speed drifts: the 1-rank run's throughput 100, 50, 200 tokens/s; the
  // 2-rank runs reach 0.9x of it in every round, so the paired scaling is 0.9 whatever the drift.
  const double one[] = {100, 50, 200};
  const double share_base[] = {0.10, 0.02, 0.04}, share_best[] = {0.04, 0.01, 0.03};
  for (int round = 0; round < 3; ++round)
    for (size_t i = 0; i < runs.size(); ++i) {
      GrpoBenchRun x;
      x.steps_measured = 2;
      x.distributed = runs[i].ranks > 1;
      x.throughput = i == 0 ? one[round] : 0.9 * one[round];
      x.step_time_s = 10.0 + round;
      x.cpu_time_s = i == 0 ? 10 : 11;
      x.comm_share = i == 1 ? share_base[round] : i == 2 ? share_best[round] : 0;
      runs[i].results.push_back(x);
    }
  EXPECT_DOUBLE_EQ(runs[0].median().throughput, 100);
  EXPECT_DOUBLE_EQ(runs[1].median().step_time_s, 11);
  EXPECT_DOUBLE_EQ(paired_ratio(runs[2], &GrpoBenchRun::throughput, runs[0], &GrpoBenchRun::throughput), 0.9);
  // Per-round share ratios 0.4, 0.5, 0.75: median 0.5 (the ratio of the medians would be 0.75).
  EXPECT_DOUBLE_EQ(paired_ratio(runs[2], &GrpoBenchRun::comm_share, runs[1], &GrpoBenchRun::comm_share), 0.5);
  const nlohmann::json j = dist_bench_json(grpo_bench_defaults({}, "bench dist"), runs);
  EXPECT_EQ(j["repeats"], 3);
  EXPECT_DOUBLE_EQ(j["comm_share_ratio"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["scaling_efficiency"].get<double>(), 0.9);
  EXPECT_TRUE(j["targets_met"].get<bool>());
  EXPECT_EQ(j["runs"][1]["step_time_s_each"].size(), 3u);
  const std::string t = dist_bench_table(runs);
  EXPECT_NE(t.find("11.00 (10.00-12.00)"), std::string::npos) << t;
  EXPECT_NE(t.find("3 rounds"), std::string::npos) << t;
  runs[3].results.pop_back();
  EXPECT_THROW(paired_ratio(runs[3], &GrpoBenchRun::throughput, runs[0], &GrpoBenchRun::throughput), Error);
}

// The long-tailed lengths: a function of the seed and the sample's identity only (the same in every run),
// and the founding case's shape: median limit / 20, 5% past half the limit, a few at the limit.
TEST(GrpoBench, LongTailLengthsAreSeededAndLongTailed) {
  const int32_t L = 1024;
  std::vector<int32_t> lengths;
  int64_t past_half = 0, at_limit = 0;
  for (int64_t step = 1; step <= 40; ++step)
    for (int64_t prompt = 0; prompt < 32; ++prompt)
      for (int64_t k = 0; k < 8; ++k) {
        const int32_t n = long_tail_response_length(7, step, 0, prompt, k, L);
        EXPECT_EQ(n, long_tail_response_length(7, step, 0, prompt, k, L));
        ASSERT_GE(n, 1);
        ASSERT_LE(n, L);
        lengths.push_back(n);
        past_half += n > L / 2;
        at_limit += n == L;
      }
  const double count = static_cast<double>(lengths.size());  // 10,240 draws
  std::nth_element(lengths.begin(), lengths.begin() + lengths.size() / 2, lengths.end());
  EXPECT_NEAR(lengths[lengths.size() / 2], L / 20, 6);
  EXPECT_NEAR(past_half / count, 0.05, 0.01);
  EXPECT_NEAR(at_limit / count, 0.016, 0.006);
  int64_t differ = 0;  // other seeds, samples and steps draw other lengths
  for (int64_t k = 0; k < 64; ++k)
    differ += long_tail_response_length(7, 1, 0, 0, k, L) != long_tail_response_length(8, 1, 0, 0, k, L);
  EXPECT_GT(differ, 48);
  EXPECT_EQ(long_tail_response_length(7, 3, 0, 5, 2, 1), 1);  // a limit of one token
}

TEST(GrpoBench, LongTailLengthsInEveryRun) {
  GrpoBenchOptions o;
  o.lengths = "long_tail";
  std::vector<std::string> all;
  for (const GrpoBenchSwitch& sw : grpo_bench_switches()) all.push_back(sw.name);
  for (const Config& c : {bench_config(o, {}), bench_config(o, all)}) {
    EXPECT_EQ(c.actor_rollout_ref.rollout.response_lengths, ResponseLengths::LongTail);
    EXPECT_TRUE(c.actor_rollout_ref.rollout.ignore_eos);  // only the drawn lengths end responses
  }
  EXPECT_EQ(bench_config(GrpoBenchOptions{}, {}).actor_rollout_ref.rollout.response_lengths, ResponseLengths::Off);
  o.lengths = "uniform";
  EXPECT_THROW(grpo_bench_defaults(o), Error);
}

// --vl: the tower's share of the step (its rollout and training seconds over the step) joins each row.
TEST(DistBench, VisionRunsShowTheTowersShareOfTheStep) {
  std::vector<DistBenchRun> runs = dist_bench_runs(2);
  for (size_t i = 0; i < runs.size(); ++i) {
    GrpoBenchRun x;
    x.steps_measured = 1;
    x.distributed = runs[i].ranks > 1;
    x.throughput = 100;
    x.step_time_s = 8;
    x.vision = true;
    x.vision_gen_s = 1;
    x.vision_train_s = i == 0 ? 1 : 0.5;  // 25% of the step on one rank, 18.75% on two
    runs[i].results.push_back(x);
  }
  const std::string t = dist_bench_table(runs);
  EXPECT_NE(t.find("tower share"), std::string::npos) << t;
  EXPECT_NE(t.find("25.0%"), std::string::npos) << t;
  EXPECT_NE(t.find("18.8%"), std::string::npos) << t;
  GrpoBenchOptions o;
  o.vl = true;
  const nlohmann::json j = dist_bench_json(grpo_bench_defaults(o, "bench dist"), runs);
  EXPECT_EQ(j["task"], "shapes");
  EXPECT_DOUBLE_EQ(j["runs"][1]["vision_share"].get<double>(), 0.1875);
  for (DistBenchRun& r : runs) r.results[0].vision = false;
  EXPECT_EQ(dist_bench_table(runs).find("tower share"), std::string::npos) << "text runs have no tower column";
}
