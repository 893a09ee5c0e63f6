// verl's run scripts through the built binary (GRPO_BINARY): each of examples/verl/*.sh, with the model
// and data pointed at a `tiny` model made by `grpo init` and small local files in verl's columns, passes
// `--check` unchanged (exit 0, a plan printed, the keys without effect listed once, nothing trained);
// `--check` lists every problem of a broken run at once; bare key=value overrides, Hydra's +/++ and
// --config-name work without a YAML file.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_run.h"
#include "core/files.h"

using namespace grpo;
using Json = nlohmann::json;
namespace fs = std::filesystem;
using test::CommandResult;
using test::run_grpo;

namespace {

// A GSM8K-like row as verl's preprocessing writes it (data_source, prompt turns, ability, reward_model,
// extra_info).
std::string verl_row(int i, const std::string& split) {
  const int a = i % 50 + 3, b = i % 7 + 2;
  Json row = {{"data_source", "openai/gsm8k"},
              {"prompt", Json::array({{{"role", "user"},
                                       {"content", "Tom has " + std::to_string(a) + " apples and buys " +
                                                       std::to_string(b) + " more. How many now? Let's think step "
                                                       "by step and output the final answer after \"####\"."}}})},
              {"ability", "math"},
              {"reward_model", {{"style", "rule"}, {"ground_truth", std::to_string(a + b)}}},
              {"extra_info", {{"split", split}, {"index", i}}}};
  return row.dump() + "\n";
}

// Runs `bash script args` with `env` (VAR=value ...) and captures stdout and stderr.
CommandResult run_script(const std::string& env, const std::string& script, const std::string& args) {
  const std::string cmd = "env " + env + " bash " + script + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, "popen failed: " + cmd};
  CommandResult r{-1, ""};
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) r.output.append(buf, n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

class CliVerl : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = (fs::temp_directory_path() / ("grpo_cli_verl_" + std::to_string(getpid()))).string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const CommandResult init = run_grpo("init --arch qwen3 --preset tiny --seed 1 --out " + dir_ + "/model");
    ASSERT_EQ(init.status, 0) << init.output;
    // verl's DAPO scripts run 2048 + 20480 tokens: give the tiny model the positions (RoPE has no table).
    Json config = Json::parse(read_file(dir_ + "/model/config.json"));
    config["max_position_embeddings"] = 32768;
    write_file_atomic(dir_ + "/model/config.json", config.dump(2));
    std::string train, test;
    for (int i = 0; i < 1100; ++i) train += verl_row(i, "train");
    for (int i = 0; i < 16; ++i) test += verl_row(i, "test");
    write_file_atomic(dir_ + "/train.jsonl", train);
    write_file_atomic(dir_ + "/test.jsonl", test);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  // The scripts' variables: the model, the data (JSONL in verl's columns until Parquet is read), the run folder.
  static std::string env() {
    return "GRPO=" + std::string(GRPO_BINARY) + " MODEL_PATH=" + dir_ + "/model TRAIN_FILE=" + dir_ +
           "/train.jsonl TEST_FILE=" + dir_ + "/test.jsonl CKPTS_DIR=" + dir_ + "/ckpts HOME=" + dir_ + "/home";
  }

  static std::string dir_;
};
std::string CliVerl::dir_;

TEST_F(CliVerl, EveryVerlRunScriptPassesCheckUnchanged) {
  std::vector<std::string> scripts;
  for (const auto& e : fs::directory_iterator(std::string(GRPO_SOURCE_DIR) + "/examples/verl"))
    if (e.path().extension() == ".sh") scripts.push_back(e.path().string());
  std::sort(scripts.begin(), scripts.end());
  ASSERT_GE(scripts.size(), 5u) << "examples/verl holds five of verl's GRPO and DAPO run scripts";
  for (const std::string& script : scripts) {
    SCOPED_TRACE(script);
    // The scripts are sized for 8 GPUs: their memory plan is printed, not enforced on this machine.
    const CommandResult r = run_script(env(), script, "--check --threads 1 --ignore-memory-plan");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("[check] ok: the run would start"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("[check] model: " + dir_ + "/model (Qwen3ForCausalLM"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("[check] data (train): " + dir_ + "/train.jsonl: 1100 examples"), std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("[check] steps: "), std::string::npos) << r.output;
    // verl's GPU machinery: one line naming what has no effect here; the wandb logger: where metrics go.
    const size_t no_effect = r.output.find("no effect here");
    ASSERT_NE(no_effect, std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("no effect here", no_effect + 1), std::string::npos) << "one line:\n" << r.output;
    EXPECT_NE(r.output.find("fsdp_config.param_offload", no_effect), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("trainer.logger: wandb not written here; metrics go to "), std::string::npos)
        << r.output;
    EXPECT_FALSE(fs::exists(dir_ + "/ckpts")) << "nothing trained, nothing written";
    EXPECT_FALSE(fs::exists("checkpoints/verl_grpo_example_gsm8k")) << "nothing written";
  }
}

TEST_F(CliVerl, CheckListsEveryProblemAndFails) {
  // No model, a missing validation file, a batch larger than the training set: all three listed.
  const CommandResult r =
      run_grpo("train --check algorithm.adv_estimator=grpo data.train_files=" + dir_ + "/train.jsonl data.val_files=" +
               dir_ + "/missing.jsonl data.train_batch_size=2048 actor_rollout_ref.actor.ppo_mini_batch_size=256 "
               "actor_rollout_ref.model.path=" + dir_ + "/no_model");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("problem(s): the run would not start"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(dir_ + "/no_model"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(dir_ + "/missing.jsonl"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("has 1100 prompts, fewer than data.train_batch_size = 2048"), std::string::npos) << r.output;

  // An overlong prompt with verl's defaults (no filtering, truncation error) is named with its row.
  const CommandResult tight =
      run_grpo("train --check data.train_files=" + dir_ + "/train.jsonl data.max_prompt_length=8 "
               "data.train_batch_size=4 actor_rollout_ref.actor.ppo_mini_batch_size=4 "
               "actor_rollout_ref.model.path=" + dir_ + "/model");
  EXPECT_NE(tight.status, 0);
  EXPECT_NE(tight.output.find(dir_ + "/train.jsonl:1"), std::string::npos) << tight.output;
}

// verl's data as its preprocessing writes it: Parquet files, a list of them read as one data set, scored
// by each row's data_source (openai/gsm8k here).
TEST_F(CliVerl, ParquetFileListsAreOneDataSet) {
  const std::string parquet = std::string(GRPO_SOURCE_DIR) + "/tests/data/parquet/";
  const std::string a = parquet + "duckdb_verl_snappy.parquet", b = parquet + "duckdb_verl_zstd_v2.parquet";
  const CommandResult r = run_grpo("train --check data.train_files=\"['" + a + "', '" + b + "']\" data.val_files=" + a +
                                   " data.train_batch_size=16 actor_rollout_ref.actor.ppo_mini_batch_size=8 "
                                   "actor_rollout_ref.model.path=" + dir_ + "/model trainer.logger='[console]'");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("data (train): " + a + ", " + b + ": 90 examples"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("data (val): " + a + ": 45 examples"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("reward: 1 x verl"), std::string::npos) << r.output;
}

TEST_F(CliVerl, OverridesWithoutAConfigFileAndHydraForms) {
  const std::string base = "train --check ++data.train_files=" + dir_ + "/train.jsonl +data.val_files=\"['" + dir_ +
                           "/test.jsonl']\" data.train_batch_size=16 actor_rollout_ref.actor.ppo_mini_batch_size=8 "
                           "actor_rollout_ref.model.path=" + dir_ + "/model trainer.logger='[console]' ";
  const CommandResult ok = run_grpo(base + "--config-path=config --config-name=ppo_trainer");
  EXPECT_EQ(ok.status, 0) << ok.output;
  EXPECT_NE(ok.output.find("data (val): " + dir_ + "/test.jsonl: 16 examples"), std::string::npos) << ok.output;
  // verl's default run folder: checkpoints/<project_name>/<experiment_name>.
  EXPECT_NE(ok.output.find("run folder: checkpoints/verl_examples/gsm8k; loggers: console"), std::string::npos)
      << ok.output;
  EXPECT_EQ(ok.output.find("no effect here"), std::string::npos) << ok.output;

  const CommandResult dapo = run_grpo(base + "--config-name dapo_trainer");
  EXPECT_EQ(dapo.status, 0) << dapo.output;
  EXPECT_NE(dapo.output.find("run folder: checkpoints/verl-dapo/gsm8k"), std::string::npos) << dapo.output;

  const CommandResult unknown_name = run_grpo(base + "--config-name=sft_trainer");
  EXPECT_NE(unknown_name.status, 0);
  EXPECT_NE(unknown_name.output.find("--config-name sft_trainer: no equivalent here"), std::string::npos)
      << unknown_name.output;

  const CommandResult typo = run_grpo(base + "actor_rollout_ref.rollout.tensor_model_paralel_size=2");
  EXPECT_NE(typo.status, 0);
  EXPECT_NE(typo.output.find("did you mean actor_rollout_ref.rollout.tensor_model_parallel_size?"), std::string::npos)
      << typo.output;

  const CommandResult oversample = run_grpo(base + "actor_rollout_ref.rollout.over_sample_rate=0.5");
  EXPECT_NE(oversample.status, 0);
  EXPECT_NE(oversample.output.find("actor_rollout_ref.rollout.over_sample_rate = \"0.5\" is not supported here"),
            std::string::npos)
      << oversample.output;
}

}  // namespace
