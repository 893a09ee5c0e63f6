// In-process tests of the GRPO loop (GrpoTrainer) and of SFT (run_sft) on a `tiny` random-initialised
// qwen3 model with the byte tokenizer and 16 hand-written prompts: GRPO raises a reward the model can
// learn in a few steps, metrics.jsonl has one line per step with verl's names, the resolved config and the
// report are written, a run is reproducible from its seed, an external reward command scores inside the
// loop, SFT lowers its loss, and steps with a non-finite gradient are skipped, counted and stop the run
// after five in a row. Kernels run on one thread: results are deterministic for a given thread count, and
// one thread keeps the runtimes steady on a loaded machine.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <numeric>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/files.h"
#include "core/profiler.h"
#include "core/threads.h"
#include "data/byte_model.h"
#include "config/config.h"
#include "config/part_options.h"
#include "report/metrics.h"
#include "report/report.h"
#include "run_metrics.h"
#include "loop/sft.h"
#include "temp_dir.h"
#include "loop/tool_turns.h"
#include "loop/trainer.h"
#include "tokenizer/tokenizer.h"
#include "model/checkpoint.h"
#include "error_of.h"

using namespace grpo;
using Json = nlohmann::json;
using test::without_machine_dependent;

namespace {

// Rewarded when the response starts with a lowercase letter: about 26 of the 384 tokens at random
// initialisation (~7%), and learnable by the tiny model in a few steps.
const char* kLetterPattern = "^[a-z]";

// The same reward as an external command: the request's last key is "response" (nlohmann orders keys).
const char* kLetterWorker =
    "while IFS= read -r line; do\n"
    "  case \"$line\" in\n"
    "    *'\"response\":\"'[a-z]*) echo '{\"reward\": 1}' ;;\n"
    "    *) echo '{\"reward\": 0}' ;;\n"
    "  esac\n"
    "done\n";

// 16 addition prompts with answers and worked responses (GRPO uses the prompts, SFT the responses).
std::string prompts_jsonl() {
  std::string out;
  for (int i = 0; i < 16; ++i) {
    const int a = i % 7 + 1, b = i * 3 % 5 + 2, c = a + b;
    const std::string sum = std::to_string(a) + "+" + std::to_string(b);
    out += Json{{"prompt", "Compute " + sum + "."},
                {"answer", std::to_string(c)},
                {"response", sum + "=" + std::to_string(c) + ". \\boxed{" + std::to_string(c) + "}"}}
               .dump() +
           "\n";
  }
  return out;
}

std::vector<double> series(const std::vector<Json>& lines, const std::string& key) {
  std::vector<double> v;
  for (const Json& j : lines) v.push_back(j.at(key).get<double>());
  return v;
}

double mean_of(const std::vector<double>& v, size_t begin, size_t end) {
  return std::accumulate(v.begin() + begin, v.begin() + end, 0.0) / static_cast<double>(end - begin);
}

class GrpoLoop : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { set_num_threads(1); }

  void SetUp() override {
    write_byte_model(model_, "qwen3", "tiny", /*seed=*/1);
    dir_.write("prompts.jsonl", prompts_jsonl());
  }

  std::string run_dir(const std::string& name) const { return dir_.path() + "/" + name; }

  // 4 prompts x 8 samples of at most 8 tokens per step, one optimizer step per step, rewarded by kLetterPattern.
  Config config(const std::string& run, const std::vector<std::string>& extra) const {
    std::vector<std::string> sets = {
        "data.train_files=" + dir_.path() + "/prompts.jsonl",
        "data.train_batch_size=4",
        "data.max_prompt_length=32",
        "data.max_response_length=8",
        "data.apply_chat_template=false",
        "actor_rollout_ref.model.path=" + model_,
        "actor_rollout_ref.rollout.n=8",
        "actor_rollout_ref.rollout.max_num_seqs=32",
        "actor_rollout_ref.actor.ppo_mini_batch_size=4",
        "actor_rollout_ref.actor.use_dynamic_bsz=true",
        "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=1024",
        "actor_rollout_ref.actor.optim.lr=1e-2",
        "actor_rollout_ref.actor.optim.weight_decay=0",
        std::string("reward.functions=[{name: format, pattern: '") + kLetterPattern + "'}]",
        "trainer.total_training_steps=4",
        "trainer.default_local_dir=" + run_dir(run),
        "trainer.seed=0",
    };
    sets.insert(sets.end(), extra.begin(), extra.end());
    return load_config("", sets);
  }

  // Runs GRPO in run folder `run` and returns its metrics lines.
  std::vector<Json> train(const std::string& run, const std::vector<std::string>& extra = {}) const {
    TrainOptions opt;
    opt.quiet = true;
    GrpoTrainer(config(run, extra), opt).run();
    return read_metrics(run_dir(run) + "/metrics.jsonl");
  }

  test::TempDir dir_;
  const std::string model_ = dir_.path() + "/model";
};

TEST_F(GrpoLoop, RaisesALearnableReward) {
  const std::vector<Json> m = train("run", {"trainer.total_training_steps=20"});
  ASSERT_EQ(m.size(), 20u);
  const std::vector<double> r = series(m, "critic/rewards/mean");
  const double first = mean_of(r, 0, 3), last = mean_of(r, 15, 20);
  SCOPED_TRACE(testing::Message() << "mean reward: first 3 steps " << first << ", last 5 steps " << last);
  // A random policy starts near 26/384 ~ 0.07; with lr 1e-2 the tiny model reaches ~1 within 15 steps.
  EXPECT_LT(first, 0.3);
  EXPECT_GT(last, 0.75);
  EXPECT_GT(last - first, 0.5);
}

TEST_F(GrpoLoop, WritesVerlMetricsConfigAndReport) {
  const int64_t steps = 3;
  const std::vector<Json> m = train("run", {"trainer.total_training_steps=" + std::to_string(steps),
                                            "trainer.experiment_name=loop-test", "mixed_precision.enabled=true"});
  ASSERT_EQ(m.size(), static_cast<size_t>(steps));
  double update_weights = 0, step_time = 0;
  int steps_with_signal = 0;
  for (int64_t i = 0; i < steps; ++i) {
    const Json& line = m[i];
    EXPECT_EQ(line.at("step").get<int64_t>(), i + 1);
    for (const char* key :
         {"critic/rewards/mean", "critic/rewards/max", "critic/rewards/min", "critic/score/mean",
          "critic/advantages/mean", "actor/pg_loss", "actor/pg_clipfrac", "actor/ppo_kl", "actor/entropy",
          "actor/kl_loss", "actor/grad_norm", "actor/lr", "response_length/mean", "response_length/max",
          "response_length/min", "response_length/clip_ratio", "reward/format/mean", "timing_s/gen",
          "timing_s/reward", "timing_s/adv", "timing_s/old_log_prob", "timing_s/ref", "timing_s/update_actor",
          "timing_s/update_weights", "timing_s/other", "timing_s/step", "perf/throughput", "perf/rollout_tokens_per_s",
          "perf/packing_efficiency", "perf/peak_rss_bytes", "training/skipped_steps"})
      ASSERT_TRUE(line.contains(key) && line[key].is_number()) << "step " << i + 1 << ": " << key << " in " << line;
    EXPECT_GT(line["actor/entropy"].get<double>(), 0);
    // A step where every group's rewards are equal (likely for a random policy: each group all 0) has only
    // zero advantages, hence no gradient; any non-zero advantage gives one.
    const bool signal = line["critic/advantages/max"].get<double>() > 0;
    steps_with_signal += signal;
    if (signal)
      EXPECT_GT(line["actor/grad_norm"].get<double>(), 0) << "step " << i + 1;
    else
      EXPECT_EQ(line["actor/grad_norm"].get<double>(), 0) << "step " << i + 1;
    EXPECT_FLOAT_EQ(line["actor/lr"].get<float>(), 1e-2f);
    EXPECT_GE(line["response_length/mean"].get<double>(), 1);
    EXPECT_LE(line["response_length/max"].get<double>(), 8);
    EXPECT_GT(line["perf/packing_efficiency"].get<double>(), 0);
    EXPECT_LE(line["perf/packing_efficiency"].get<double>(), 1);
    EXPECT_EQ(line["critic/score/mean"], line["reward/format/mean"]);
    EXPECT_EQ(line["training/skipped_steps"].get<int64_t>(), 0);
    const double parts = line["timing_s/gen"].get<double>() + line["timing_s/adv"].get<double>() +
                         line["timing_s/update_actor"].get<double>() + line["timing_s/update_weights"].get<double>();
    EXPECT_LE(parts, line["timing_s/step"].get<double>() * 1.001 + 1e-6) << line;
    update_weights += line["timing_s/update_weights"].get<double>();
    step_time += line["timing_s/step"].get<double>();
  }
  EXPECT_GE(steps_with_signal, 1) << "no step had a reward signal: the test checks nothing of the update";
  // In bf16 mode the weight "sync" is the refresh of the bf16 shadow plus clearing the prefix cache.
  EXPECT_GT(update_weights, 0);
  EXPECT_LT(update_weights, 0.1 * step_time) << update_weights << " s of " << step_time << " s";

  const std::string run = run_dir("run");
  const std::string yaml = read_file(run + "/config.yaml");
  EXPECT_EQ(config_to_yaml(load_config(run + "/config.yaml")), yaml) << "the resolved config must load back";
  EXPECT_NE(yaml.find("pattern: \"^[a-z]\""), std::string::npos) << yaml;
  const std::string html = read_file(run + "/report.html");
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("critic/rewards/mean"), std::string::npos);
  EXPECT_NE(html.find("loop-test"), std::string::npos);
  EXPECT_TRUE(file_exists(run + "/checkpoints/global_step_" + std::to_string(steps) + "/trainer_state.json"));
}

// The stage timings are disjoint and add up to the step with timing_s/other, a small remainder; the
// checkpoints kept follow trainer.max_actor_ckpt_to_keep.
TEST_F(GrpoLoop, StageTimingsAddUpToTheStep) {
  const std::vector<Json> m =
      train("run", {"trainer.total_training_steps=4", "trainer.save_freq=1", "trainer.max_actor_ckpt_to_keep=2",
                    "algorithm.filter_groups.enable=true", "actor_rollout_ref.actor.ppo_epochs=2"});
  ASSERT_EQ(m.size(), 4u);
  for (const Json& line : m) {
    double sum = 0;
    for (const std::string& part : step_time_parts()) {
      if (part == "comm") {
        EXPECT_FALSE(line.contains("timing_s/comm")) << "one process has no communication";
        continue;
      }
      const double s = line.at("timing_s/" + part).get<double>();
      EXPECT_GE(s, 0) << part << " in " << line;
      sum += s;
    }
    const double step = line.at("timing_s/step").get<double>(), other = line.at("timing_s/other").get<double>();
    EXPECT_NEAR(sum, step, 1e-9 * step) << line;
    EXPECT_GT(line["timing_s/old_log_prob"].get<double>(), 0) << "two PPO epochs recompute old log-probs";
    // What is left outside the stages is bookkeeping: a few percent of a step at most.
    EXPECT_GE(other, 0) << line;
    EXPECT_LT(other, 0.1 * step + 0.02) << line;
    const double clip = line.at("response_length/clip_ratio").get<double>();
    EXPECT_GE(clip, 0);
    EXPECT_LE(clip, 1);
  }
  EXPECT_FALSE(file_exists(run_dir("run") + "/checkpoints/global_step_2"));
  EXPECT_TRUE(file_exists(run_dir("run") + "/checkpoints/global_step_3/optimizer.safetensors"));
  EXPECT_TRUE(file_exists(run_dir("run") + "/checkpoints/global_step_4/optimizer.safetensors"));
}

// Every response runs to max_response_length with ignore_eos (all truncated); padding-free micro-batches
// compute only useful tokens, padded fixed ones waste some.
TEST_F(GrpoLoop, IgnoreEosAndPackingEfficiency) {
  const std::vector<Json> packed = train("packed", {"trainer.total_training_steps=1", "actor_rollout_ref.rollout.ignore_eos=true"});
  ASSERT_EQ(packed.size(), 1u);
  EXPECT_EQ(packed[0]["response_length/min"].get<double>(), 8);
  EXPECT_EQ(packed[0]["response_length/clip_ratio"].get<double>(), 1.0);
  EXPECT_EQ(packed[0]["perf/packing_efficiency"].get<double>(), 1.0);
  const std::vector<Json> padded =
      train("padded", {"trainer.total_training_steps=1", "actor_rollout_ref.actor.use_dynamic_bsz=false",
                       "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8",
                       "actor_rollout_ref.model.use_remove_padding=false"});
  const double eff = padded[0]["perf/packing_efficiency"].get<double>();
  const double min_len = padded[0]["response_length/min"].get<double>(), max_len = padded[0]["response_length/max"].get<double>();
  if (min_len < max_len) {
    EXPECT_LT(eff, 1.0);  // responses differ in length: the padding is computed
  }
  EXPECT_GT(eff, 0.3);
}

TEST_F(GrpoLoop, SameSeedSameMetricsOtherSeedOtherRewards) {
  const std::vector<Json> a = train("a"), b = train("b"), c = train("c", {"trainer.seed=1"});
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(without_machine_dependent(a[i]), without_machine_dependent(b[i])) << "step " << i + 1;
  EXPECT_NE(series(a, "critic/rewards/mean"), series(c, "critic/rewards/mean"));
}

TEST_F(GrpoLoop, ExternalRewardScoresInsideTheLoop) {
  const std::string worker = dir_.write("reward.sh", kLetterWorker);
  // The external command drives training; the same rule as a built-in regex, weight 0, checks its scores.
  const std::vector<Json> m =
      train("run", {"trainer.total_training_steps=6",
                    "reward.functions=[{name: external, command: '/bin/sh " + worker +
                        "', workers: 2, timeout_s: 10}, {name: format, weight: 0, pattern: '" + kLetterPattern +
                        "'}]"});
  ASSERT_EQ(m.size(), 6u);
  double total = 0;
  for (const Json& line : m) {
    const double external = line.at("reward/external/mean").get<double>();
    EXPECT_EQ(external, line.at("reward/format/mean").get<double>()) << line;
    EXPECT_EQ(external, line.at("critic/score/mean").get<double>()) << line;
    total += external;
  }
  EXPECT_GT(total, 0) << "no response was rewarded: the command did not score";
}

TEST_F(GrpoLoop, SftLowersTheLoss) {
  Config c = config("sft", {"sft.lr=5e-3", "sft.batch_size=8", "sft.epochs=10", "sft.max_length=64"});
  const SftSummary s = run_sft(c, /*quiet=*/true);
  EXPECT_EQ(s.steps, 20);
  const std::vector<Json> m = read_metrics(run_dir("sft") + "/metrics.jsonl");
  ASSERT_EQ(m.size(), 20u);
  const std::vector<double> loss = series(m, "train/loss");
  // Random initialisation: about ln(384) ~ 5.95 nats per response token.
  EXPECT_GT(loss.front(), 5.0);
  EXPECT_LT(mean_of(loss, 18, 20), 0.4 * loss.front()) << "first " << loss.front() << ", last " << loss.back();
  EXPECT_DOUBLE_EQ(s.final_loss, loss.back());
  EXPECT_NO_THROW(Checkpoint::open(s.model_dir));
}

// With trainer.test_freq the SFT validates (greedy, held-out accuracy) every that many steps, and with
// sft.stop_at_val_accuracy it stops at the first validation that reaches the target and keeps that model.
// The target is taken from a run without it (deterministic on one thread): the first validation before the
// end that gets any answer right.
TEST_F(GrpoLoop, SftValidatesEveryTestFreqStepsAndStopsAtATargetAccuracy) {
  const std::vector<std::string> sets = {"sft.lr=5e-3", "sft.batch_size=8", "sft.epochs=20", "sft.max_length=64",
                                         "data.max_response_length=24", "data.val_files=" + dir_.path() + "/prompts.jsonl",
                                         "trainer.test_freq=4"};
  const SftSummary full = run_sft(config("full", sets), /*quiet=*/true);
  ASSERT_EQ(full.steps, 40);
  EXPECT_FALSE(full.stopped_early);
  std::vector<std::pair<int64_t, double>> vals;  // (step, accuracy) of each validation
  const std::vector<Json> full_lines = read_metrics(run_dir("full") + "/metrics.jsonl");
  for (const Json& j : full_lines)
    if (j.contains("val/accuracy")) vals.emplace_back(j.at("step").get<int64_t>(), j.at("val/accuracy").get<double>());
  ASSERT_EQ(vals.size(), 10u) << "steps 4, 8, ..., 40: the final validation is not repeated";
  for (size_t i = 0; i < vals.size(); ++i) EXPECT_EQ(vals[i].first, 4 * static_cast<int64_t>(i + 1));
  EXPECT_EQ(full.val_accuracy, vals.back().second);
  size_t first_right = 0;
  while (first_right + 1 < vals.size() && vals[first_right].second == 0) ++first_right;
  ASSERT_LT(first_right + 1, vals.size()) << "the tiny model gets an answer right before the last step";
  const auto [stop_step, target] = vals[first_right];

  std::vector<std::string> stop_sets = sets;
  stop_sets.push_back("sft.stop_at_val_accuracy=" + std::to_string(target));
  const SftSummary stopped = run_sft(config("stopped", stop_sets), /*quiet=*/true);
  EXPECT_TRUE(stopped.stopped_early);
  EXPECT_EQ(stopped.steps, stop_step);
  EXPECT_EQ(stopped.val_accuracy, target);
  // The same steps as the full run until the stop, the stopping validation last, and the model saved there.
  const std::vector<Json> lines = read_metrics(run_dir("stopped") + "/metrics.jsonl");
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back().at("step").get<int64_t>(), stop_step);
  EXPECT_EQ(lines.back().at("val/accuracy").get<double>(), target);
  ASSERT_LE(lines.size(), full_lines.size());
  for (size_t i = 0; i < lines.size(); ++i)
    EXPECT_EQ(without_machine_dependent(lines[i]), without_machine_dependent(full_lines[i])) << "line " << i;
  EXPECT_NO_THROW(Checkpoint::open(stopped.model_dir));
}

TEST_F(GrpoLoop, SftStopAtAccuracyNeedsValidations) {
  const std::vector<std::string> sets = {"sft.stop_at_val_accuracy=0.5", "sft.epochs=1"};
  std::vector<std::string> no_freq = sets;
  no_freq.push_back("data.val_files=" + dir_.path() + "/prompts.jsonl");
  EXPECT_NE(test::error_of([&] { run_sft(config("a", no_freq), true); }).find("trainer.test_freq > 0"), std::string::npos);
  std::vector<std::string> no_val = sets;
  no_val.push_back("trainer.test_freq=2");
  EXPECT_NE(test::error_of([&] { run_sft(config("b", no_val), true); }).find("data.val_files"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(run_dir("a"))) << "refused before the run folder is made";
}

// lr 1e30: the first update moves the weights to ~1e30 (still finite), after which every gradient
// overflows (the loss stays finite: a non-finite loss has no clean trigger from the config). Those steps
// must leave the weights and optimizer untouched, be counted, and after five in a row stop the run with an
// error that says why.
TEST_F(GrpoLoop, NonFiniteStepsAreSkippedCountedAndStopTheRun) {
  try {
    // Seed 1: step 1 already has groups with a reward signal, so its update is the one that explodes.
    train("run", {"trainer.total_training_steps=8", "trainer.save_freq=1", "actor_rollout_ref.actor.optim.lr=1e30",
                  "trainer.seed=1"});
    FAIL() << "the run must stop after five skipped steps in a row";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("5 steps in a row"), std::string::npos) << e.what();
  }
  const std::string run = run_dir("run");
  const std::vector<Json> m = read_metrics(run + "/metrics.jsonl");
  ASSERT_EQ(m.size(), 5u) << "step 6 is the fifth skip in a row and stops before its metrics are written";
  EXPECT_TRUE(m[0]["actor/grad_norm"].is_number());
  for (int64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(m[i]["training/skipped_steps"].get<int64_t>(), i) << "step " << i + 1;
    if (i > 0) {
      EXPECT_TRUE(m[i]["actor/grad_norm"].is_null()) << "step " << i + 1 << ": " << m[i];
    }
  }
  const std::string first = run + "/checkpoints/global_step_1", last = run + "/checkpoints/global_step_5";
  EXPECT_TRUE(read_file(first + "/model.safetensors") == read_file(last + "/model.safetensors"));
  EXPECT_TRUE(read_file(first + "/optimizer.safetensors") == read_file(last + "/optimizer.safetensors"));
  const Json state = Json::parse(read_file(last + "/trainer_state.json"));
  EXPECT_EQ(state["skipped_steps"], 4);
  EXPECT_EQ(state["optimizer_steps"], 1);
}

// Issue 10: ordinary situations of a real run, each ending in a logged step or a clear error before the
// first step, never a crash or an endless loop.
using test::error_of;

// A hard task: no response is ever rewarded, so every group's rewards are equal and DAPO filtering keeps
// nothing. With max_num_gen_batches 0 a step samples a bounded number of batches (10: one pass over these
// 16 prompts is only 4), then is logged and skipped; the run ends.
TEST_F(GrpoLoop, StepsWithoutRewardSignalAreLoggedAndSkipped) {
  const std::vector<Json> m =
      train("run", {"trainer.total_training_steps=2", "algorithm.filter_groups.enable=true",
                    "algorithm.filter_groups.max_num_gen_batches=0", "data.max_response_length=2",
                    "reward.functions=[{name: format, pattern: '^never matches$'}]"});
  ASSERT_EQ(m.size(), 2u);
  for (const Json& line : m) {
    EXPECT_EQ(line.at("training/groups_kept"), 0) << line;
    EXPECT_EQ(line.at("training/gen_batches"), 10) << line;
    EXPECT_EQ(line.at("training/groups_dropped"), 40) << line;
    EXPECT_FALSE(line.contains("actor/pg_loss")) << "no update, no actor metrics: " << line;
    EXPECT_EQ(line.at("perf/train_tokens"), 0);
  }
  EXPECT_EQ(max_num_gen_batches_per_step(config("x", {"algorithm.filter_groups.enable=true",
                                                      "algorithm.filter_groups.max_num_gen_batches=0"}),
                                         400),
            100);
  // With signal the metrics say how many groups were kept.
  const std::vector<Json> ok = train("ok", {"trainer.total_training_steps=1"});
  EXPECT_EQ(ok.at(0).at("training/groups_kept"), 4);
}

TEST_F(GrpoLoop, TooFewOrNoPromptsAreErrorsBeforeTheFirstStep) {
  std::string e = error_of([&] { train("few", {"data.train_batch_size=32", "actor_rollout_ref.actor.ppo_mini_batch_size=32"}); });
  EXPECT_NE(e.find("has 16 prompts, fewer than data.train_batch_size = 32"), std::string::npos) << e;
  EXPECT_FALSE(file_exists(run_dir("few") + "/metrics.jsonl"));
  e = error_of([&] { train("filtered", {"data.max_prompt_length=5", "data.filter_overlong_prompts=true"}); });
  EXPECT_NE(e.find("all 16 prompts are longer than 5 tokens"), std::string::npos) << e;
}

// A missing reward command fails every sample: the run stops at the first step, naming the reward; below
// reward.max_failure_fraction the failures are counted in the metrics and training goes on.
TEST_F(GrpoLoop, RewardFailuresAreCountedAndStopTheRunBeyondTheFraction) {
  const std::string missing = "reward.functions=[{name: external, command: 'exec /nonexistent/reward', workers: 1}, "
                              "{name: format, pattern: '^[a-z]'}]";
  std::string e = error_of([&] { train("stop", {missing, "trainer.total_training_steps=1"}); });
  EXPECT_NE(e.find("[reward] external: failed on 32 of 32 samples in step 1"), std::string::npos) << e;
  EXPECT_NE(e.find("command not found"), std::string::npos) << e;
  const std::vector<Json> m = train("go", {missing, "trainer.total_training_steps=1", "reward.max_failure_fraction=1"});
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].at("reward/external/failures"), 32);
  EXPECT_EQ(m[0].at("reward/format/failures"), 0);
}

// trainer.logger is honoured exactly: TensorBoard alone writes event files and no metrics.jsonl (hence no
// report); validation with n > 1 reports verl's mean/best/maj@n.
TEST_F(GrpoLoop, LoggersAndValidationWithSeveralResponses) {
  dir_.write("val.jsonl", prompts_jsonl());
  TrainOptions opt;
  opt.quiet = true;
  GrpoTrainer(config("tb", {"trainer.total_training_steps=2", "trainer.logger=[tensorboard]",
                            "trainer.project_name=p", "trainer.experiment_name=e",
                            "data.val_files=" + dir_.path() + "/val.jsonl",
                            "actor_rollout_ref.rollout.val_kwargs.n=3",
                            "actor_rollout_ref.rollout.val_kwargs.do_sample=true", "actor_rollout_ref.rollout.val_kwargs.temperature=1.0"}),
              opt)
      .run();
  const std::string run = run_dir("tb");
  EXPECT_FALSE(file_exists(run + "/metrics.jsonl"));
  EXPECT_FALSE(file_exists(run + "/report.html"));
  ASSERT_TRUE(file_exists(run + "/tensorboard_log/p/e"));
  int files = 0;
  for (const auto& f : std::filesystem::directory_iterator(run + "/tensorboard_log/p/e")) {
    ++files;
    const std::string events = read_file(f.path().string());
    for (const char* tag : {"critic/rewards/mean", "val/accuracy/best@3", "val/accuracy/maj@3", "timing_s/step"})
      EXPECT_NE(events.find(tag), std::string::npos) << tag;
  }
  EXPECT_EQ(files, 1);

  const std::vector<Json> m = train("val", {"trainer.total_training_steps=1", "data.val_files=" + dir_.path() + "/val.jsonl",
                                            "actor_rollout_ref.rollout.val_kwargs.n=3",
                                            "actor_rollout_ref.rollout.val_kwargs.do_sample=true", "actor_rollout_ref.rollout.val_kwargs.temperature=1.0"});
  ASSERT_EQ(m.size(), 3u);  // validation before, step 1, validation at the end
  for (const Json& v : {m[0], m[2]}) {
    const double mean = v.at("val/accuracy").get<double>(), best = v.at("val/accuracy/best@3").get<double>();
    EXPECT_EQ(v.at("val/accuracy/mean@3").get<double>(), mean);
    EXPECT_GE(best, mean);
    EXPECT_GE(v.at("val/accuracy/maj@3").get<double>(), 0);
    EXPECT_GE(v.at("val/reward/best@3").get<double>(), v.at("val/reward/mean@3").get<double>());
  }
}

// A second run into the same folder is refused with nothing changed; resume_mode auto continues it;
// --overwrite starts over.
TEST_F(GrpoLoop, ASecondRunIntoTheSameFolderIsRefusedResumedOrOverwritten) {
  const std::vector<Json> first = train("run", {"trainer.total_training_steps=2"});
  const std::string metrics = read_file(run_dir("run") + "/metrics.jsonl");
  const std::string e = error_of([&] { train("run", {"trainer.total_training_steps=2"}); });
  EXPECT_NE(e.find("already holds a run"), std::string::npos) << e;
  EXPECT_EQ(read_file(run_dir("run") + "/metrics.jsonl"), metrics) << "nothing lost";

  const std::vector<Json> resumed = train("run", {"trainer.total_training_steps=3", "trainer.resume_mode=auto"});
  ASSERT_EQ(resumed.size(), 3u);
  EXPECT_EQ(without_machine_dependent(resumed[1]), without_machine_dependent(first[1]));
  EXPECT_EQ(resumed[2].at("step"), 3);

  TrainOptions opt;
  opt.quiet = true;
  opt.overwrite = true;
  GrpoTrainer(config("run", {"trainer.total_training_steps=1"}), opt).run();
  EXPECT_EQ(read_metrics(run_dir("run") + "/metrics.jsonl").size(), 1u);
  EXPECT_FALSE(file_exists(run_dir("run") + "/checkpoints/global_step_3"));
}

// The reference model's log-probs follow actor_rollout_ref.ref.log_prob_* (their own micro-batching, as in
// verl), not the actor's: counted by the decoder forward passes of a profiled step. Unset, the token
// settings default to the actor's (verl's interpolation).
TEST_F(GrpoLoop, ReferenceLogProbsUseTheirOwnMicroBatching) {
  const train::MicroBatching follows = ref_micro_batching(config("x", {}));
  EXPECT_TRUE(follows.dynamic);
  EXPECT_EQ(follows.max_tokens, 1024);
  const Config fixed = config("x", {"actor_rollout_ref.ref.log_prob_use_dynamic_bsz=false",
                                    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=3"});
  const train::MicroBatching r = ref_micro_batching(fixed);
  EXPECT_FALSE(r.dynamic);
  EXPECT_EQ(r.micro_batch_size, 3);
  const train::MicroBatching d = ref_micro_batching(config("x", {"actor_rollout_ref.ref.log_prob_use_dynamic_bsz=true",
                                                                 "actor_rollout_ref.ref.log_prob_max_token_len_per_gpu=40"}));
  EXPECT_TRUE(d.dynamic);
  EXPECT_EQ(d.max_tokens, 40);
  EXPECT_TRUE(actor_micro_batching(fixed).dynamic) << "the actor keeps its own";

  // Step 1 of 4 prompts x 8 samples: the actor packs its 32 sequences into one micro-batch (1024 tokens);
  // the reference pass takes 32 / size micro-batches.
  auto forwards = [&](const std::string& run, int64_t ref_micro_batch) {
    TrainOptions opt;
    opt.quiet = true;
    opt.profile_steps = {1};
    Profiler::clear();
    GrpoTrainer(config(run, {"trainer.total_training_steps=1", "actor_rollout_ref.actor.use_kl_loss=true",
                             "actor_rollout_ref.ref.log_prob_use_dynamic_bsz=false",
                             "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=" + std::to_string(ref_micro_batch)}),
                opt)
        .run();
    for (const ScopeSummary& s : Profiler::summary())
      if (s.name == "decoder_forward") return static_cast<int64_t>(s.calls);
    return int64_t{0};
  };
  EXPECT_EQ(forwards("four", 4) - forwards("all", 32), 8 - 1);
}

TEST(RequestIds, DistinctForEveryStepBatchAndRequest) {
  std::set<uint64_t> seen;
  const int64_t batches = 3, requests = 20000;  // more than the 10,007 requests per batch of the old scheme
  for (int64_t step = 1; step <= 3; ++step)
    for (int64_t gb = 0; gb < batches; ++gb)
      for (int64_t r = 0; r < requests; ++r) seen.insert(rollout_request_id(step, gb, r, batches, requests));
  EXPECT_EQ(seen.size(), static_cast<size_t>(3 * batches * requests));
}


// With reward.functions empty and rows carrying data_source, each row is scored by verl's rule for it
// (math_dapo: -1 or +1, its `acc` logged as reward/acc/mean); a data_source with no rule stops the run at
// start with an error naming it and the known ones.
TEST_F(GrpoLoop, VerlRulesScoreRowsByDataSource) {
  std::string rows;
  for (int i = 0; i < 8; ++i)
    rows += Json{{"prompt", "Say " + std::to_string(i) + "."}, {"data_source", "math_dapo"},
                 {"reward_model", {{"ground_truth", std::to_string(i)}}}}.dump() + "\n";
  dir_.write("dapo.jsonl", rows);
  const std::vector<Json> m = train("dapo", {"data.train_files=" + dir_.path() + "/dapo.jsonl", "reward.functions=[]",
                                             "trainer.total_training_steps=1"});
  ASSERT_EQ(m.size(), 1u);
  ASSERT_TRUE(m[0].contains("reward/verl/mean") && m[0].contains("reward/acc/mean")) << m[0].dump();
  const double score = m[0]["reward/verl/mean"].get<double>(), acc = m[0]["reward/acc/mean"].get<double>();
  EXPECT_NEAR(score, 2 * acc - 1, 1e-6) << "DAPO scores +1 when right and -1 when wrong";
  EXPECT_LT(score, 0) << "a random tiny model does not write \"Answer: N\"";

  dir_.write("mine.jsonl", Json{{"prompt", "x"}, {"data_source", "my/set"}, {"answer", "1"}}.dump() + "\n");
  std::string e;
  try {
    train("mine", {"data.train_files=" + dir_.path() + "/mine.jsonl", "reward.functions=[]", "data.train_batch_size=1",
                   "actor_rollout_ref.actor.ppo_mini_batch_size=1"});
  } catch (const Error& err) {
    e = err.what();
  }
  EXPECT_NE(e.find("\"my/set\""), std::string::npos) << e;
  EXPECT_NE(e.find("openai/gsm8k"), std::string::npos) << e;
}

// Learning, not only numbers: the estimators and losses users pick instead of GRPO's raise the learnable
// reward as GRPO does (RaisesALearnableReward's bounds) in 20 steps.
TEST_F(GrpoLoop, OtherEstimatorsAndLossesLearnToo) {
  const std::vector<std::vector<std::string>> variants = {
      {"algorithm.adv_estimator=rloo"},
      {"algorithm.adv_estimator=reinforce_plus_plus_baseline"},
      {"actor_rollout_ref.actor.policy_loss.loss_mode=gspo"},
      {"actor_rollout_ref.actor.policy_loss.loss_mode=cispo"},
  };
  for (size_t v = 0; v < variants.size(); ++v) {
    std::vector<std::string> sets = variants[v];
    sets.push_back("trainer.total_training_steps=20");
    const std::vector<Json> m = train("learn" + std::to_string(v), sets);
    ASSERT_EQ(m.size(), 20u);
    const std::vector<double> r = series(m, "critic/rewards/mean");
    const double first = mean_of(r, 0, 3), last = mean_of(r, 15, 20);
    SCOPED_TRACE(testing::Message() << sets[0] << ": mean reward first 3 steps " << first << ", last 5 steps " << last);
    EXPECT_LT(first, 0.3);
    EXPECT_GT(last, 0.75);
    EXPECT_GT(last - first, 0.5);
  }
}

// Every advantage estimator and policy loss trains end to end: finite losses, the estimator's and the
// loss's metrics, remax's greedy baselines counted, KL in the reward with an adaptive coefficient, and the
// rollout correction with verl's mismatch metrics.
TEST_F(GrpoLoop, EveryEstimatorAndLossModeTrains) {
  const std::vector<std::vector<std::string>> variants = {
      {"algorithm.adv_estimator=rloo"},
      {"algorithm.adv_estimator=reinforce_plus_plus", "algorithm.gamma=0.9"},
      {"algorithm.adv_estimator=reinforce_plus_plus_baseline"},
      {"algorithm.adv_estimator=remax"},
      {"algorithm.adv_estimator=opo"},
      {"algorithm.adv_estimator=grpo_passk"},
      {"algorithm.adv_estimator=gpg"},
      {"actor_rollout_ref.actor.policy_loss.loss_mode=gspo", "actor_rollout_ref.actor.clip_ratio_low=0.0003",
       "actor_rollout_ref.actor.clip_ratio_high=0.0004"},
      {"actor_rollout_ref.actor.policy_loss.loss_mode=cispo", "actor_rollout_ref.actor.ppo_epochs=2"},
      {"actor_rollout_ref.actor.policy_loss.loss_mode=sapo"},
      {"actor_rollout_ref.actor.policy_loss.loss_mode=clip_cov"},
      {"actor_rollout_ref.actor.policy_loss.loss_mode=kl_cov"},
      {"actor_rollout_ref.actor.policy_loss.loss_mode=geo_mean"},
      {"actor_rollout_ref.actor.policy_loss.loss_mode=dppo_tv"},
      {"actor_rollout_ref.actor.policy_loss.loss_mode=dppo_kl"},
      {"actor_rollout_ref.actor.policy_loss.loss_mode=dro", "actor_rollout_ref.actor.loss_agg_mode=token-sum"},
      {"algorithm.use_kl_in_reward=true", "algorithm.kl_penalty=low_var_kl", "algorithm.kl_ctrl.type=adaptive",
       "algorithm.kl_ctrl.kl_coef=0.05", "algorithm.kl_ctrl.horizon=100"},
      {"algorithm.rollout_correction.rollout_is=sequence", "algorithm.rollout_correction.rollout_is_threshold=3"},
      {"actor_rollout_ref.actor.tis_imp_ratio_cap=2"},
      {"algorithm.rollout_correction.rollout_rs=token_k1,seq_mean_k3",
       "algorithm.rollout_correction.rollout_rs_threshold=1.001,0.5"},
  };
  for (size_t v = 0; v < variants.size(); ++v) {
    std::vector<std::string> sets = variants[v];
    sets.push_back("trainer.total_training_steps=2");
    SCOPED_TRACE(sets[0]);
    const std::vector<Json> m = train("variant" + std::to_string(v), sets);
    ASSERT_EQ(m.size(), 2u);
    for (const Json& line : m) {
      for (const char* key : {"actor/pg_loss", "actor/grad_norm", "critic/advantages/mean",
                              "training/rollout_probs_diff_mean", "training/rollout_probs_diff_max",
                              "training/rollout_probs_diff_std"})
        ASSERT_TRUE(line.contains(key) && line[key].is_number() && std::isfinite(line[key].get<double>()))
            << key << " in " << line;
      EXPECT_EQ(line["training/skipped_steps"].get<int64_t>(), 0);
      EXPECT_GE(line["training/rollout_probs_diff_max"].get<double>(), line["training/rollout_probs_diff_mean"].get<double>());
    }
    const std::string first = sets[0];
    if (first == "algorithm.adv_estimator=remax") {
      EXPECT_TRUE(m[0].contains("critic/reward_baselines/mean"));
      EXPECT_GE(m[0]["response_length/greedy_baseline_tokens"].get<int64_t>(), 4);  // 4 prompts, >= 1 token each
    }
    if (first == "algorithm.use_kl_in_reward=true") {
      EXPECT_DOUBLE_EQ(m[0]["actor/reward_kl_penalty_coeff"].get<double>(), 0.05);
      EXPECT_NE(m[1]["actor/reward_kl_penalty_coeff"].get<double>(), 0.05);  // adaptive: moved after step 1
      EXPECT_GE(m[1]["actor/reward_kl_penalty"].get<double>(), 0.0);
    }
    if (first.find("rollout_rs") != std::string::npos) {  // bf16-free f32 rollout vs training: few rejections
      EXPECT_GE(m[0]["rollout_corr/rollout_rs_masked_fraction"].get<double>(), 0.0);
      EXPECT_LE(m[0]["rollout_corr/rollout_rs_masked_fraction"].get<double>(), 1.0);
    } else if (first.find("rollout_correction") != std::string::npos || first.find("tis_imp") != std::string::npos) {
      EXPECT_GT(m[0]["rollout_corr/rollout_is_mean"].get<double>(), 0.0);
      EXPECT_LE(m[0]["rollout_corr/rollout_is_min"].get<double>(), m[0]["rollout_corr/rollout_is_max"].get<double>());
    }
  }
  EXPECT_NE(error_of([&] { train("gae", {"algorithm.adv_estimator=gae"}); }).find("critic"), std::string::npos);
}

// Multi-turn rollouts with the built-in calculator: the tool turn the engine prefills is what the chat
// template writes after the assistant's turn in the whole conversation, and a GRPO run with tools on logs
// verl's num_turns and the tool metrics.
TEST(ToolTurns, ReplyIsTheTemplatesContinuationOfTheConversation) {
  test::TempDir dir;
  const std::string model = dir.path() + "/model";
  write_byte_model(model, "qwen3", "tiny", 0);
  const Tokenizer tok = Tokenizer::load(model);
  MultiTurnConfig mt;
  mt.enable = true;
  const int32_t end = tok.token_to_id("<|im_end|>");
  RunTools tools(mt, tok, end);
  const std::string turn = "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"12*34\"}}\n</tool_call>";
  const Json user = {{"role", "user"}, {"content", "What is 12*34?"}};
  nlohmann::ordered_json convo = nlohmann::ordered_json::array({user});
  std::vector<int32_t> turn_ids = tok.encode(turn);
  turn_ids.push_back(end);
  std::future<rollout::TurnReply> work = tools.turns->on_turn_end({0, 0, 1, turn_ids, turn});
  ASSERT_TRUE(work.valid());
  const rollout::TurnReply reply = work.get();
  EXPECT_EQ(reply.tool_calls, 1);
  EXPECT_TRUE(reply.failures.empty());
  // the model's turn (its end token included) + the reply end the template's whole conversation (whose
  // history drops the prompt's empty think block, as Qwen3's does)
  convo.push_back({{"role", "assistant"}, {"content", turn}});
  convo.push_back({{"role", "tool"}, {"content", "408"}});
  const std::string whole = tok.apply_chat_template(convo, tools.schemas, true, {{"enable_thinking", false}});
  const std::string continuation = turn + "<|im_end|>" + tok.decode(reply.tokens);
  EXPECT_TRUE(whole.ends_with(continuation)) << whole << "\n---\n" << continuation;
  EXPECT_NE(continuation.find("408"), std::string::npos);
  // a turn without a call ends the sample
  EXPECT_FALSE(tools.turns->on_turn_end({0, 0, 1, turn_ids, "The answer is 408."}).valid());
  // a malformed call is answered with an error and counted
  const rollout::TurnReply bad = tools.turns->on_turn_end({0, 0, 1, turn_ids, "<tool_call>{oops</tool_call>"}).get();
  ASSERT_EQ(bad.failures.size(), 1u);
  EXPECT_EQ(bad.failures[0], "bad_json");
}

TEST_F(GrpoLoop, MultiTurnRunLogsTurnsAndTools) {
  const std::vector<Json> m = train("run", {"trainer.total_training_steps=2", "data.apply_chat_template=true",
                                            "data.max_response_length=16", "data.max_prompt_length=128",
                                            "actor_rollout_ref.rollout.multi_turn.enable=true",
                                            "actor_rollout_ref.rollout.multi_turn.max_assistant_turns=3",
                                            "data.val_files=" + dir_.path() + "/prompts.jsonl"});
  std::vector<Json> steps, validations;
  for (const Json& j : m) (j.contains("val/accuracy") ? validations : steps).push_back(j);
  ASSERT_EQ(steps.size(), 2u);
  ASSERT_FALSE(validations.empty());
  for (const Json& v : validations) EXPECT_TRUE(v.contains("val/tools/call_share")) << v.dump();  // tools in validation
  for (const Json& j : steps) {
    EXPECT_GE(j.at("num_turns/min").get<double>(), 2.0);  // the prompt's user turn + the model's
    EXPECT_LE(j.at("num_turns/max").get<double>(), 6.0);  // 3 assistant + 2 tool turns + 1
    EXPECT_TRUE(j.contains("tools/call_share"));
    EXPECT_TRUE(j.contains("timing_s/agent_loop/tool_calls/mean"));
    EXPECT_TRUE(j.contains("timing_s/agent_loop/parked/mean"));
  }
}

}  // namespace
