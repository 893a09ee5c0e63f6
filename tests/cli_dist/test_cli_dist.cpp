// `grpo train` / `grpo sft` with several ranks, end to end: the built binary started by mpirun (2 ranks,
// --oversubscribe, one thread each) on a `tiny` model, against the same runs in one process.
//
// - Same metrics as one process. The rollout is batch-invariant and every sample's RNG stream is keyed by
//   its request id, which does not depend on the rank generating it, so the samples, rewards and
//   advantages of the first step are identical; the update's gradient differs only by the order of its fp32
//   additions (two per-rank partial sums added in rank order), ~1e-7 relative. Later steps start from
//   weights that differ in the last bits: a sampled token flips only if a logit moves across a sampling
//   threshold, which at such differences does not happen in these runs. So: every discrete metric (rewards,
//   lengths, advantages, clip ratio, validation) is equal, and the continuous ones of the update (losses,
//   entropy, KL, clip fraction, gradient norm) agree to 1e-5 relative. With bf16 on the wire every gradient
//   element is rounded to 2^-8 before the sum: the first step's gradient norm agrees to 2^-8, and at this
//   learning rate (1e-2, so that the tiny model learns in a few steps) the runs decorrelate after a few
//   updates, so the second step is compared loosely (entropy 1e-3, gradient norm 10%).
//   Clock- and machine-dependent values (timing_s/*, perf/* but the training tokens and the packing
//   efficiency, useful / computed tokens over all ranks) are left out. ZeRO-3 (with recomputed activations)
//   computes the same as ZeRO-2.
// - remax, the KL penalty in the reward (adaptive controller) and rollout_rs, which read the whole batch
//   (greedy baselines, every sample's old and reference log-probs), give one process's metrics too.
// - A run with one rank SIGKILLed resumes (2 ranks) to the metrics of the uninterrupted run, exactly (the
//   reductions are in rank order, so 2-rank runs are deterministic), and resumes with 1 rank to metrics
//   within the tolerance above (optimizer state is saved in the whole layout, whatever the ranks).
// - A rank killed mid-step stops the job (mpirun ends it, non-zero, naming the rank); a rank that hangs
//   (SIGSTOP) makes the other fail with a clear error once trainer.comm_timeout_s is over.
// - trainer.nnodes / n_gpus_per_node that disagree with an mpirun launch are errors naming the key (without
//   a launcher, one process runs and a line says so: verl's scripts pass their GPU counts).
// - `grpo bench dist` runs with its own defaults for every option left out (as the README calls it) and
//   reports each run with its step time and, for the distributed runs, the bytes sent.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cli_dist_run.h"
#include "cli_run.h"
#include "core/files.h"
#include "export/gguf_reader.h"
#include "report/metrics.h"
#include "report/report.h"
#include "test_util.h"
#include "loop/trainer_state.h"

using namespace grpo;
using Json = nlohmann::json;
namespace fs = std::filesystem;
using test::Clock;
using test::config_yaml;
using test::expect_same_metrics;
using test::latest_step;
using test::Outcome;
using test::prompt_line;
using test::run_to_end;
using test::spawn;
using test::wait_for;

namespace {

#ifdef GRPO_MPIEXEC
constexpr const char* kMpiexec = GRPO_MPIEXEC;
#else
constexpr const char* kMpiexec = "";
#endif

constexpr int64_t kSteps = 6;
// rollout_rs token_k1 bounds on pi_old / pi_rollout: inside the spread of the rollout's and the trainer's
// log-probs on the tiny model in bf16 (about a third of the tokens fall outside).
constexpr const char* kRejectionBounds = "0.999_1.001";

// The command line of `grpo ARGS` on `ranks` ranks (1: no launcher).
std::vector<std::string> command(int ranks, const std::vector<std::string>& args) {
  std::vector<std::string> c;
  if (ranks > 1) c = {kMpiexec, "-np", std::to_string(ranks), "--oversubscribe", "-x", "OMP_NUM_THREADS=1"};
  c.push_back(GRPO_BINARY);
  c.insert(c.end(), args.begin(), args.end());
  return c;
}

// The process of rank `rank` among the children of the launcher `mpirun` (0 when not found).
pid_t rank_pid(pid_t mpirun, int rank) {
  const std::string want = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    int ppid = 0;
    char state = 0;
    if (std::sscanf(line.c_str() + close + 1, " %c %d", &state, &ppid) != 2 || ppid != mpirun) continue;
    std::ifstream env(e.path() / "environ", std::ios::binary);
    for (std::string var; std::getline(env, var, '\0');)
      if (var == want) return std::stoi(name);
  }
  return 0;
}

class CliDist : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = (fs::temp_directory_path() / ("grpo_cli_dist_" + std::to_string(getpid()))).string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    test::prepare_mpirun_env(dir_ + "/mpi");
    const test::CommandResult init = test::run_grpo("init --arch qwen3 --preset tiny --seed 1 --out " + dir_ + "/model");
    ASSERT_EQ(init.status, 0) << init.output;
    std::string train_data, val_data;
    for (int i = 0; i < 16; ++i) (i < 4 ? val_data : train_data) += prompt_line(i);
    write_file_atomic(dir_ + "/train.jsonl", train_data);
    write_file_atomic(dir_ + "/val.jsonl", val_data);
    write_file_atomic(dir_ + "/config.yaml", config_yaml(dir_, kSteps));
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  void SetUp() override {
    if (std::string(kMpiexec).empty()) GTEST_SKIP() << "built without MPI";
  }

  static std::vector<std::string> train_args(const std::string& run, const std::vector<std::string>& more = {}) {
    std::vector<std::string> a = {"train", dir_ + "/config.yaml", "--threads", "1", "--set",
                                  "trainer.default_local_dir=" + run};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
  // Runs GRPO with `ranks` ranks into dir_/name (once per suite and arguments) and returns its metrics.
  static std::vector<Json> train(int ranks, const std::string& name, const std::vector<std::string>& more = {}) {
    const std::string run_dir = dir_ + "/" + name;
    if (!fs::exists(run_dir + "/report.html")) {
      const Outcome o = run_to_end(command(ranks, train_args(run_dir, more)), run_dir + ".log");
      EXPECT_EQ(o.status, 0) << o.output;
    }
    return read_metrics(run_dir + "/metrics.jsonl");
  }

  static Outcome run_resumed(int ranks, const std::string& run_dir, std::vector<std::string> more = {}) {
    more.insert(more.end(), {"--resume", run_dir});
    return run_to_end(command(ranks, train_args(run_dir, more)), run_dir + ".resumed.log");
  }
  // A copy of run `from` as if it had stopped after saving step `step`: later checkpoints gone, `latest` on it.
  static std::string stopped_copy(const std::string& from, const std::string& to, int64_t step) {
    fs::copy(from, to, fs::copy_options::recursive);
    for (int64_t later = step + 1; later <= kSteps; ++later)
      fs::remove_all(to + "/checkpoints/global_step_" + std::to_string(later));
    write_file_atomic(to + "/checkpoints/latest", "global_step_" + std::to_string(step) + "\n");
    return to;
  }

  static std::string dir_;
};
std::string CliDist::dir_;

TEST_F(CliDist, TwoRanksGiveTheMetricsOfOneProcess) {
  const std::vector<Json> one = train(1, "one"), two = train(2, "two");
  ASSERT_EQ(one.size(), static_cast<size_t>(kSteps + 3));  // steps and validations at 0, 3, 6
  expect_same_metrics(one, two, 1e-5);
  for (const Json& line : two) {
    if (!line.contains("timing_s/step")) continue;  // a validation line
    EXPECT_GT(line.at("perf/comm_bytes").get<double>(), 0) << line;
    EXPECT_GE(line.at("timing_s/comm").get<double>(), 0) << line;
    // The parts of the step, communication one of them, add up to it and none is negative.
    double sum = 0;
    for (const std::string& part : step_time_parts()) {
      const double s = line.at("timing_s/" + part).get<double>();
      EXPECT_GE(s, 0) << part << " in " << line;
      sum += s;
    }
    EXPECT_NEAR(sum, line.at("timing_s/step").get<double>(), 1e-9) << line;
    EXPECT_GE(line.at("perf/comm_share").get<double>(), 0) << line;
    EXPECT_LT(line.at("perf/comm_share").get<double>(), 1) << line;
  }
  EXPECT_FALSE(one[1].contains("perf/comm_share")) << "one process has no communication";
  EXPECT_TRUE(fs::exists(dir_ + "/two/report.html"));
  EXPECT_TRUE(fs::exists(dir_ + "/two/config.yaml"));

  // ZeRO-3 (layers gathered just in time, activations recomputed): the same numbers as ZeRO-2.
  const std::vector<Json> zero3 =
      train(2, "two_zero3", {"--set", "actor_rollout_ref.actor.fsdp_config.reshard_after_forward=true", "--set",
                             "actor_rollout_ref.model.enable_gradient_checkpointing=true"});
  expect_same_metrics(one, zero3, 1e-5);

  // bf16 on the wire: the first step's update within bf16 rounding, the second loosely.
  const std::vector<Json> bf16 =
      train(2, "two_bf16", {"--set", "actor_rollout_ref.actor.fsdp_config.mixed_precision.reduce_dtype=bf16"});
  ASSERT_EQ(bf16.size(), one.size());
  expect_same_metrics({one[0], one[1]}, {bf16[0], bf16[1]}, 0x1.0p-8);
  EXPECT_NEAR(bf16[2].at("actor/entropy").get<double>(), one[2].at("actor/entropy").get<double>(), 1e-3 * 6);
  EXPECT_NEAR(bf16[2].at("actor/grad_norm").get<double>(), one[2].at("actor/grad_norm").get<double>(),
              0.1 * one[2].at("actor/grad_norm").get<double>());
}

// remax (greedy baselines generated on the rank that owns the prompt, gathered with the groups) and the KL
// penalty in the reward with the adaptive controller read the whole batch (every sample's old and
// reference log-probs gathered), so two ranks give one process's metrics: 2 steps, so that the second
// uses the coefficient the controller set after the first and a policy that moved from the reference.
// rollout_rs too, over one step: its bounds on pi_old / pi_rollout sit inside the spread of the rollout's
// and the trainer's kernels, where later steps' last-bit differences between the runs could flip a token
// (on step 1 the weights, so the log-probs, are the same).
TEST_F(CliDist, RemaxKlInRewardAndRolloutRejectionOnTwoRanksGiveTheMetricsOfOneProcess) {
  const std::vector<std::string> common = {"--set", "trainer.save_freq=-1", "--set", "trainer.test_freq=-1",
                                           "--set", "trainer.val_before_train=false"};
  std::vector<std::string> remax_kl = {"--set", "trainer.total_training_steps=2",
                                       "--set", "algorithm.adv_estimator=remax",
                                       "--set", "algorithm.use_kl_in_reward=true",
                                       "--set", "algorithm.kl_penalty=low_var_kl",
                                       "--set", "algorithm.kl_ctrl.type=adaptive",
                                       "--set", "algorithm.kl_ctrl.kl_coef=0.1",
                                       "--set", "algorithm.kl_ctrl.target_kl=1.0e-4",
                                       "--set", "algorithm.kl_ctrl.horizon=100"};
  remax_kl.insert(remax_kl.end(), common.begin(), common.end());
  const std::vector<Json> one = train(1, "remax_kl_one", remax_kl), two = train(2, "remax_kl_two", remax_kl);
  ASSERT_EQ(one.size(), 3u);  // 2 steps, the validation at the end
  expect_same_metrics(one, two, 1e-5, 0, {"critic/advantages/", "actor/reward_kl_penalty"});
  for (size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE(one[i].dump());
    EXPECT_GT(one[i].at("response_length/greedy_baseline_tokens").get<double>(), 0);
    EXPECT_TRUE(one[i].contains("critic/reward_baselines/mean"));
  }
  // Step 1: the actor is the reference (no KL), below target_kl, so the controller lowers the coefficient
  // by 0.2 x 32 responses / horizon 100; step 2 has moved away from the reference.
  EXPECT_EQ(one[0].at("actor/reward_kl_penalty").get<double>(), 0.0);
  EXPECT_NEAR(one[1].at("actor/reward_kl_penalty_coeff").get<double>(), 0.1 * (1 - 0.2 * 32 / 100.0), 1e-12);
  EXPECT_GT(one[1].at("actor/reward_kl_penalty").get<double>(), 0.0);

  std::vector<std::string> rs = {"--set", "trainer.total_training_steps=1", "--set", "mixed_precision.enabled=true", "--set",
                                 "algorithm.rollout_correction.rollout_rs=token_k1", "--set",
                                 "algorithm.rollout_correction.rollout_rs_threshold=" + std::string(kRejectionBounds)};
  rs.insert(rs.end(), common.begin(), common.end());
  const std::vector<Json> rs_one = train(1, "rs_one", rs), rs_two = train(2, "rs_two", rs);
  ASSERT_EQ(rs_one.size(), 2u);
  expect_same_metrics(rs_one, rs_two, 1e-5);
  const double rejected = rs_one[0].at("rollout_corr/rollout_rs_masked_fraction").get<double>();
  EXPECT_GT(rejected, 0) << "the bounds should reject some tokens for the test to mean something";
  EXPECT_LT(rejected, 1);

  // bf16 with ZeRO-3: the other ranks' f32 GEMM weights are dropped before the first rollout, which reads the
  // bf16 shadow, and rank 0 rebuilds its shadow after each save (every step here); two steps give one
  // process's metrics.
  const std::vector<std::string> z3 = {"--set", "trainer.total_training_steps=2",
                                       "--set", "mixed_precision.enabled=true",
                                       "--set", "actor_rollout_ref.actor.fsdp_config.reshard_after_forward=true",
                                       "--set", "trainer.test_freq=-1",
                                       "--set", "trainer.val_before_train=false"};
  const std::vector<Json> z3_one = train(1, "bf16_zero3_one", z3), z3_two = train(2, "bf16_zero3_two", z3);
  ASSERT_EQ(z3_one.size(), 3u);  // two steps, the validation at the end
  ASSERT_TRUE(fs::exists(dir_ + "/bf16_zero3_two/checkpoints/global_step_1/optimizer/manifest.json"));
  expect_same_metrics(z3_one, z3_two, 1e-5);
}

TEST_F(CliDist, SftOnTwoRanksLowersTheLossLikeOneProcess) {
  auto sft = [](int ranks, const std::string& name, const std::vector<std::string>& more = {}) {
    const std::string run_dir = dir_ + "/" + name;
    std::vector<std::string> a = {
        "sft",   dir_ + "/config.yaml", "--threads", "1", "--set", "trainer.default_local_dir=" + run_dir,
        "--set", "data.val_files="};
    a.insert(a.end(), more.begin(), more.end());
    const Outcome o = run_to_end(command(ranks, a), run_dir + ".log");
    EXPECT_EQ(o.status, 0) << o.output;
    // One process writes one file; two ranks write a file each, nothing gathered (an index lists them).
    EXPECT_TRUE(fs::exists(run_dir + (ranks == 1 ? "/model/model.safetensors" : "/model/model.safetensors.index.json")))
        << o.output;
    const size_t cpu_line = o.output.find("[cpu] ");
    EXPECT_NE(cpu_line, std::string::npos) << o.output;
    EXPECT_EQ(o.output.find("[cpu] ", cpu_line + 1), std::string::npos) << "one [cpu] line per job: " << o.output;
    return read_metrics(run_dir + "/metrics.jsonl");
  };
  const std::vector<Json> one = sft(1, "sft_one"), two = sft(2, "sft_two");
  ASSERT_EQ(one.size(), 4u);  // 12 examples, batches of 6, two epochs
  expect_same_metrics(one, two, 1e-5);
  EXPECT_LT(two.back().at("train/loss").get<double>(), two.front().at("train/loss").get<double>());
  // The two ranks' model is the one process's model (f32: its files hold the weights as they are).
  const auto w1 = ModelWeights::load(dir_ + "/sft_one/model"), w2 = ModelWeights::load(dir_ + "/sft_two/model");
  const auto values = [](const ModelWeights& w) {
    const float* p = w.params().flat().f32();
    return std::vector<float>(p, p + w.params().numel());
  };
  EXPECT_LT(test::rel_err(values(*w2), values(*w1)), 1e-4);

  // Under mixed precision the ranks write bf16 files and their shards of the f32 masters, which a run started
  // from the folder reads (bit for bit the masters the SFT ended with, not their bf16 rounding).
  const std::vector<std::string> bf16 = {"--set", "mixed_precision.enabled=true"};
  sft(2, "sft_two_bf16", bf16);
  const std::string model = dir_ + "/sft_two_bf16/model";
  ASSERT_TRUE(fs::exists(model + "/master/manifest.json"));
  EXPECT_FALSE(fs::exists(dir_ + "/sft_two_bf16/model.stage"));
  ModelWeights masters(ModelWeights::load(model)->config());
  load_checkpoint_weights(model, masters);
  const auto rounded = ModelWeights::load(model);
  ModelWeights again(masters.config());
  std::memcpy(again.params().flat().f32(), masters.params().flat().f32(),
              static_cast<size_t>(masters.params().numel()) * sizeof(float));
  again.bf16();
  rounded->bf16();
  EXPECT_EQ(std::memcmp(again.bf16_arena()->flat().data, rounded->bf16_arena()->flat().data,
                        static_cast<size_t>(masters.params().numel()) * 2),
            0);  // the files are the masters rounded
}

// Qwen3-VL (`tiny`, a 2-block tower) on the shapes task's pictures: GRPO on 2 ranks (ZeRO-2, and ZeRO-3 with
// recomputed activations: the tower's blocks gathered just in time) gives one process's metrics, as the text
// runs do; so does SFT. Each rank decodes only its own prompts' pictures (tests/train_dist checks that the
// update equals one process's with each rank holding only its own).
TEST_F(CliDist, QwenVlOnTwoRanksGivesTheMetricsOfOneProcess) {
  const std::string vl = dir_ + "/vl";
  ASSERT_EQ(test::run_grpo("init --arch qwen3-vl --preset tiny --seed 1 --out " + vl + "/model").status, 0);
  const test::CommandResult data = test::run_grpo("data shapes --out " + vl + "/data --train 8 --test 2 --seed 3");
  ASSERT_EQ(data.status, 0) << data.output;
  auto run = [&](int ranks, const std::string& cmd, const std::string& name, const std::vector<std::string>& more) {
    const std::string run_dir = vl + "/" + name;
    std::vector<std::string> a = {cmd, dir_ + "/config.yaml", "--threads", "1", "--set",
                                  "trainer.default_local_dir=" + run_dir, "--set",
                                  "actor_rollout_ref.model.path=" + vl + "/model", "--set",
                                  "data.train_files=" + vl + "/data/train.jsonl", "--set",
                                  "data.val_files=" + vl + "/data/test.jsonl", "--set", "data.max_prompt_length=160",
                                  "--set", "data.apply_chat_template=true", "--set", "trainer.total_training_steps=2",
                                  "--set", "trainer.save_freq=-1", "--set", "trainer.test_freq=2", "--set",
                                  "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=256", "--set",
                                  "sft.max_length=256", "--set", "sft.epochs=1", "--set", "sft.batch_size=4"};
    a.insert(a.end(), more.begin(), more.end());
    const Outcome o = run_to_end(command(ranks, a), run_dir + ".log");
    EXPECT_EQ(o.status, 0) << o.output;
    return read_metrics(run_dir + "/metrics.jsonl");
  };
  const std::vector<Json> one = run(1, "train", "one", {}), two = run(2, "train", "two", {});
  ASSERT_EQ(one.size(), 4u);  // validation at 0, steps 1 and 2, validation at 2
  expect_same_metrics(one, two, 1e-5);
  EXPECT_GT(two[1].at("perf/vision_train_patches").get<double>(), 0) << two[1].dump();
  const std::vector<Json> zero3 =
      run(2, "train", "two_zero3", {"--set", "actor_rollout_ref.actor.fsdp_config.reshard_after_forward=true",
                                    "--set", "actor_rollout_ref.model.enable_gradient_checkpointing=true"});
  expect_same_metrics(one, zero3, 1e-5);
  const std::vector<Json> sft_one = run(1, "sft", "sft_one", {"--set", "data.val_files="}),
                          sft_two = run(2, "sft", "sft_two", {"--set", "data.val_files="});
  ASSERT_EQ(sft_one.size(), 2u);  // 8 examples, batches of 4, one epoch
  expect_same_metrics(sft_one, sft_two, 1e-5);
}

TEST_F(CliDist, ResumesAfterARankIsKilledWithTwoRanksExactlyAndWithOne) {
  const std::vector<Json> reference = train(2, "two"), one = train(1, "one");
  const std::string run = dir_ + "/killed", log = dir_ + "/killed.log";
  const auto t0 = Clock::now();
  const pid_t mpirun = spawn(command(2, train_args(run)), log);
  ASSERT_GT(mpirun, 0);
  int status = 0;
  while (latest_step(run) < 2) {
    ASSERT_EQ(waitpid(mpirun, &status, WNOHANG), 0) << "the run ended before it was killed:\n" << read_file(log);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const pid_t victim = rank_pid(mpirun, 1);
  ASSERT_GT(victim, 0) << "rank 1 not found among mpirun's children";
  kill(victim, SIGKILL);
  const Outcome killed = wait_for(mpirun, log, t0);
  EXPECT_NE(killed.status, 0) << killed.output;
  const int64_t saved = latest_step(run);
  ASSERT_GE(saved, 2);
  ASSERT_LT(saved, kSteps) << "the run finished before the kill took effect";

  // Every rank wrote its own moments (optimizer/shard_<r>.safetensors, listed in the manifest): none whole.
  const std::string saved_dir = run + "/checkpoints/global_step_" + std::to_string(saved);
  EXPECT_TRUE(fs::exists(saved_dir + "/optimizer/shard_0.safetensors"));
  EXPECT_TRUE(fs::exists(saved_dir + "/optimizer/shard_1.safetensors"));
  EXPECT_EQ(Json::parse(read_file(saved_dir + "/optimizer/manifest.json"))["shards"].size(), 2u);
  EXPECT_FALSE(fs::exists(saved_dir + "/optimizer.safetensors"));

  fs::copy(run, run + "_on_one", fs::copy_options::recursive);
  fs::copy(run, run + "_on_three", fs::copy_options::recursive);
  const Outcome two = run_resumed(2, run);
  ASSERT_EQ(two.status, 0) << two.output;
  EXPECT_NE(two.output.find("resumed"), std::string::npos) << two.output;
  expect_same_metrics(reference, read_metrics(run + "/metrics.jsonl"), 0.0);

  const Outcome single = run_resumed(1, run + "_on_one");
  ASSERT_EQ(single.status, 0) << single.output;
  expect_same_metrics(reference, read_metrics(run + "_on_one/metrics.jsonl"), 1e-5);
  expect_same_metrics(one, read_metrics(run + "_on_one/metrics.jsonl"), 1e-5);

  const Outcome three = run_resumed(3, run + "_on_three");  // 2 -> 3: each rank reads across both shards
  ASSERT_EQ(three.status, 0) << three.output;
  expect_same_metrics(reference, read_metrics(run + "_on_three/metrics.jsonl"), 1e-5);
}

// Resharding on load: a 2-rank checkpoint resumes on 4 ranks (each reads parts of both shards), and that
// run's 4-rank checkpoint on 3, both to the uninterrupted 2-rank run's metrics (rewards and lengths equal,
// losses to the 1e-5 that N ranks have against one process). Under mixed precision, where each rank loads the
// f32 masters of its own shard of the GEMM weights only, 2 -> 4 too; its last two steps are compared (bf16
// runs on different rank counts drift apart over more steps: rounding to bf16 amplifies the last bits in
// which reductions of different orders differ).
TEST_F(CliDist, ResumesOnMoreAndOnFewerRanks) {
  const std::vector<Json> reference = train(2, "two");
  ASSERT_EQ(reference.size(), static_cast<size_t>(kSteps + 3));
  const std::string four = stopped_copy(dir_ + "/two", dir_ + "/two_to_four", 2);
  const Outcome o4 = run_resumed(4, four);
  ASSERT_EQ(o4.status, 0) << o4.output;
  EXPECT_NE(o4.output.find("at step 2 of"), std::string::npos) << o4.output;
  expect_same_metrics(reference, read_metrics(four + "/metrics.jsonl"), 1e-5);
  ASSERT_EQ(Json::parse(read_file(four + "/checkpoints/global_step_4/optimizer/manifest.json"))["shards"].size(), 4u);

  const std::string three = stopped_copy(four, dir_ + "/four_to_three", 4);
  const Outcome o3 = run_resumed(3, three);
  ASSERT_EQ(o3.status, 0) << o3.output;
  EXPECT_NE(o3.output.find("at step 4 of"), std::string::npos) << o3.output;
  expect_same_metrics(reference, read_metrics(three + "/metrics.jsonl"), 1e-5);

  const std::vector<std::string> bf16 = {"--set", "mixed_precision.enabled=true"};
  const std::vector<Json> bf16_reference = train(2, "bf16_two", bf16);
  // The checkpoint: the two ranks' bf16 model files (a Hugging Face folder with its index), their moments and
  // their exact f32 masters. Resumed on two ranks it is the run's own continuation, bit for bit.
  const std::string saved = dir_ + "/bf16_two/checkpoints/global_step_4";
  EXPECT_TRUE(fs::exists(saved + "/model.safetensors.index.json"));
  EXPECT_EQ(Json::parse(read_file(saved + "/master/manifest.json"))["shards"].size(), 2u);
  EXPECT_EQ(Json::parse(read_file(saved + "/config.json"))["torch_dtype"], "bfloat16");
  const std::string bf16_again = stopped_copy(dir_ + "/bf16_two", dir_ + "/bf16_two_again", 4);
  const Outcome b2 = run_resumed(2, bf16_again, bf16);
  ASSERT_EQ(b2.status, 0) << b2.output;
  expect_same_metrics(bf16_reference, read_metrics(bf16_again + "/metrics.jsonl"), 0.0);
  // `grpo export` writes it as one folder from the f32 masters, not the bf16 files.
  const Outcome ex =
      run_to_end(command(1, {"export", "--model", saved, "--out", dir_ + "/exported"}), dir_ + "/ex.log");
  ASSERT_EQ(ex.status, 0) << ex.output;
  const auto exported = ModelWeights::load(dir_ + "/exported");
  ModelWeights masters(exported->config());
  load_checkpoint_weights(saved, masters);
  EXPECT_EQ(std::memcmp(exported->params().flat().data, masters.params().flat().data,
                        static_cast<size_t>(masters.params().numel()) * 4),
            0);
  // The GGUF export reads the masters too: its f32 tensors are theirs.
  const Outcome gg = run_to_end(
      command(1, {"export", "--format", "gguf", "--type", "f32", "--model", saved, "--out", dir_ + "/ex.gguf"}),
      dir_ + "/exg.log");
  ASSERT_EQ(gg.status, 0) << gg.output;
  EXPECT_NE(gg.output.find("(its f32 master shards)"), std::string::npos) << gg.output;
  const test::GgufContents g = test::read_gguf(dir_ + "/ex.gguf");
  const TensorView down = masters.params().view("model.layers.0.mlp.down_proj.weight");
  EXPECT_EQ(test::gguf_values(g, g.tensor("blk.0.ffn_down.weight")),
            std::vector<float>(down.f32(), down.f32() + down.numel()));
  const auto rounded = ModelWeights::load(saved);  // the model files: the masters rounded to bf16
  EXPECT_NE(std::memcmp(rounded->params().flat().data, masters.params().flat().data,
                        static_cast<size_t>(masters.params().numel()) * 4),
            0);

  const std::string bf16_four = stopped_copy(dir_ + "/bf16_two", dir_ + "/bf16_two_to_four", 4);
  const Outcome b4 = run_resumed(4, bf16_four, bf16);
  ASSERT_EQ(b4.status, 0) << b4.output;
  const std::vector<Json> resumed = read_metrics(bf16_four + "/metrics.jsonl");
  ASSERT_EQ(resumed.size(), bf16_reference.size());
  expect_same_metrics(bf16_reference, resumed, 1e-5, resumed.size() - 3);  // steps 5, 6 and the last validation
}

// A checkpoint of one process (moments saved whole, named after the parameters) resumes on two ranks, each
// taking its range of them: the one-process run from its step 2 on, to its own metrics.
TEST_F(CliDist, AOneProcessCheckpointResumesOnTwoRanks) {
  const std::vector<Json> one = train(1, "one");
  const std::string run = dir_ + "/one_to_two";
  fs::copy(dir_ + "/one", run, fs::copy_options::recursive);
  ASSERT_TRUE(fs::exists(run + "/checkpoints/global_step_2/optimizer.safetensors"));
  for (int64_t step = 3; step <= kSteps; ++step)
    fs::remove_all(run + "/checkpoints/global_step_" + std::to_string(step));
  write_file_atomic(run + "/checkpoints/latest", "global_step_2\n");
  const Outcome two = run_resumed(2, run);
  ASSERT_EQ(two.status, 0) << two.output;
  EXPECT_NE(two.output.find("at step 2 of"), std::string::npos) << two.output;
  expect_same_metrics(one, read_metrics(run + "/metrics.jsonl"), 1e-5);
}

TEST_F(CliDist, AKilledRankStopsTheJobAndAHungRankTimesOut) {
  for (const int sig : {SIGKILL, SIGSTOP}) {
    SCOPED_TRACE(sig == SIGKILL ? "SIGKILL" : "SIGSTOP");
    const std::string run = dir_ + (sig == SIGKILL ? "/sigkill" : "/sigstop"), log = run + ".log";
    const double timeout_s = 3;
    const pid_t mpirun = spawn(command(2, train_args(run, {"--set", "trainer.comm_timeout_s=3"})), log);
    int status = 0;
    while (!file_exists(run + "/metrics.jsonl") || read_metrics(run + "/metrics.jsonl").size() < 2) {  // in step 2
      ASSERT_EQ(waitpid(mpirun, &status, WNOHANG), 0) << read_file(log);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const pid_t victim = rank_pid(mpirun, 1);
    ASSERT_GT(victim, 0);
    const auto t0 = Clock::now();
    kill(victim, sig);
    const Outcome o = wait_for(mpirun, log, t0);
    if (sig == SIGSTOP) kill(victim, SIGKILL);  // in case the launcher left it stopped
    EXPECT_NE(o.status, 0) << o.output;
    EXPECT_LT(o.seconds, timeout_s + 30) << o.output;
    if (sig == SIGKILL) {  // mpirun names the rank that died; rank 0, ended by SIGTERM, the one it waited for
      EXPECT_NE(o.output.find("rank 1"), std::string::npos) << o.output;
    } else {
      EXPECT_NE(o.output.find("error: [rank 0] [comm] rank 0/2:"), std::string::npos) << o.output;
      EXPECT_NE(o.output.find("did not complete within 3 s: rank 1 died, is stopped"), std::string::npos) << o.output;
    }
  }
}

TEST_F(CliDist, LaunchThatDisagreesWithTheConfigIsAnError) {
  const Outcome per_node = run_to_end(command(2, train_args(dir_ + "/bad", {"--set", "trainer.n_gpus_per_node=4"})),
                               dir_ + "/bad.log");
  EXPECT_NE(per_node.status, 0);
  EXPECT_NE(per_node.output.find("trainer.n_gpus_per_node = 4 but"), std::string::npos) << per_node.output;
  const Outcome nodes = run_to_end(command(2, train_args(dir_ + "/bad", {"--set", "trainer.nnodes=2"})), dir_ + "/bad.log");
  EXPECT_NE(nodes.status, 0);
  EXPECT_NE(nodes.output.find("trainer.nnodes = 2 but the launcher started 2 ranks on 1 machine"), std::string::npos)
      << nodes.output;
  // Without a launcher they are a verl script's GPU counts: one process runs, and says so.
  const std::vector<std::string> gpus = {"--set", "trainer.n_gpus_per_node=8", "--set", "trainer.total_training_steps=1"};
  const Outcome one = run_to_end(command(1, train_args(dir_ + "/verl_gpus", gpus)), dir_ + "/verl_gpus.log");
  EXPECT_EQ(one.status, 0) << one.output;
  EXPECT_NE(one.output.find("trainer.nnodes = 0, trainer.n_gpus_per_node = 8: this run is one process"),
            std::string::npos)
      << one.output;
}

TEST_F(CliDist, BenchDistRunsWithTheDefaultsOfTheOptionsLeftOut) {
  const std::string cmd = "bench dist --np 2 --preset tiny --steps 2 --prompts 2 --n 2 --max-response-length 4 --mpirun " +
                          std::string(kMpiexec) + " --out " + dir_ + "/bench";
  test::CommandResult r;
  for (int run = 0; run < 2; ++run) {  // the second into the same --out: its run folders start over
    r = test::run_grpo(cmd, "2>" + dir_ + "/bench.log");
    ASSERT_EQ(r.status, 0) << "run " << run << ": " << r.output << read_file(dir_ + "/bench.log");
  }
  const size_t end = r.output.find_last_not_of('\n');
  ASSERT_NE(end, std::string::npos) << "nothing on stdout";
  const std::string last = r.output.substr(r.output.rfind('\n', end) + 1);  // the JSON line
  const Json j = Json::parse(last);
  ASSERT_EQ(j["runs"].size(), 4u) << last;
  for (const Json& run : j["runs"]) {
    EXPECT_GT(run["step_time_s"].get<double>(), 0) << run.dump();
    if (run["ranks"].get<int>() > 1) {
      EXPECT_GT(run["comm_bytes"].get<double>(), 0) << run.dump();
    }
  }
}

}  // namespace
