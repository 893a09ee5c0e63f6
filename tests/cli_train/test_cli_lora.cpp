// LoRA end to end through the built binary on a `tiny` model: `grpo train` with lora_rank saves checkpoints
// holding the adapter in PEFT's layout (no base weights) and its moments; resuming from a middle checkpoint
// ends with the same metrics and the same adapter bytes as the uninterrupted run; two ranks (mpirun) train
// the same adapter; `grpo export` merges it into a model whose scores equal `grpo score --adapter`'s; bad
// LoRA settings fail with messages naming the key or module.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_run.h"
#include "core/files.h"
#include "report/metrics.h"
#include "run_metrics.h"

using namespace grpo;
using Json = nlohmann::json;
namespace fs = std::filesystem;
using test::run_grpo;
using test::without_machine_dependent;

namespace {

#ifdef GRPO_MPIEXEC
constexpr const char* kLoraMpiexec = GRPO_MPIEXEC;
#else
constexpr const char* kLoraMpiexec = "";
#endif

std::string lora_prompt_line(int i) {
  const int a = i % 7 + 1, b = i * 3 % 5 + 2;
  return Json{{"prompt", "Compute " + std::to_string(a) + "+" + std::to_string(b) + "."},
              {"answer", std::to_string(a + b)}}
             .dump() +
         "\n";
}

// 4 prompts x 8 samples a step, rewarded when the response starts with a lowercase letter; LoRA rank 4 on
// all linears, a KL term against the base; every step saved.
std::string lora_config(const std::string& dir) {
  return "data:\n"
         "  train_files: " + dir + "/train.jsonl\n"
         "  train_batch_size: 4\n"
         "  max_prompt_length: 32\n"
         "  max_response_length: 8\n"
         "  apply_chat_template: false\n"
         "actor_rollout_ref:\n"
         "  model:\n"
         "    path: " + dir + "/model\n"
         "    lora_rank: 4\n"
         "    lora_alpha: 8\n"
         "    target_modules: all-linear\n"
         "  rollout:\n"
         "    n: 8\n"
         "  actor:\n"
         "    ppo_mini_batch_size: 4\n"
         "    use_dynamic_bsz: true\n"
         "    ppo_max_token_len_per_gpu: 1024\n"
         "    use_kl_loss: true\n"
         "    optim:\n"
         "      lr: 1.0e-2\n"
         "reward:\n"
         "  functions:\n"
         "    - name: format\n"
         "      pattern: \"^[a-z]\"\n"
         "trainer:\n"
         "  total_training_steps: 4\n"
         "  save_freq: 1\n"
         "  seed: 0\n";
}

class CliLora : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("grpo_cli_lora_" + std::to_string(getpid()))).string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const test::CommandResult init = run_grpo("init --arch qwen3 --preset tiny --seed 1 --out " + dir_ + "/model");
    ASSERT_EQ(init.status, 0) << init.output;
    std::string data;
    for (int i = 0; i < 12; ++i) data += lora_prompt_line(i);
    write_file_atomic(dir_ + "/train.jsonl", data);
    write_file_atomic(dir_ + "/config.yaml", lora_config(dir_));
  }
  void TearDown() override { fs::remove_all(dir_); }
  test::CommandResult train(const std::string& run, const std::string& more = "") const {
    return run_grpo("train " + dir_ + "/config.yaml --threads 1 --set trainer.default_local_dir=" + run + " " + more);
  }
  std::string dir_;
};

TEST_F(CliLora, TrainSavesPeftAdapterAndResumesExactly) {
  const std::string run = dir_ + "/run";
  const test::CommandResult r = train(run);
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string ck = run + "/checkpoints/global_step_4";
  for (const char* f : {"adapter_config.json", "adapter_model.safetensors", "optimizer.safetensors", "trainer_state.json"})
    EXPECT_TRUE(fs::exists(ck + "/" + f)) << f;
  EXPECT_FALSE(fs::exists(ck + "/model.safetensors")) << "the frozen base is not saved";
  const Json cfg = Json::parse(read_file(ck + "/adapter_config.json"));
  EXPECT_EQ(cfg["r"], 4);
  EXPECT_EQ(cfg["lora_alpha"], 8.0);
  EXPECT_EQ(cfg["target_modules"].size(), 7u);
  const std::vector<Json> metrics = read_metrics(run + "/metrics.jsonl");
  ASSERT_EQ(metrics.size(), 4u);
  EXPECT_GT(metrics.back().value("actor/kl_loss", 0.0), 0.0) << "the adapted policy moved away from the base";

  // Resume from step 2 of a copy: the same metrics and the same adapter bytes at the end.
  const std::string resumed = dir_ + "/resumed";
  fs::copy(run, resumed, fs::copy_options::recursive);
  fs::remove_all(resumed + "/checkpoints/global_step_3");
  fs::remove_all(resumed + "/checkpoints/global_step_4");
  write_file_atomic(resumed + "/checkpoints/latest", "global_step_2\n");
  const test::CommandResult rr = train(resumed, "--resume " + resumed);
  ASSERT_EQ(rr.status, 0) << rr.output;
  const std::vector<Json> again = read_metrics(resumed + "/metrics.jsonl");
  ASSERT_EQ(again.size(), metrics.size());
  for (size_t i = 0; i < metrics.size(); ++i)
    EXPECT_EQ(without_machine_dependent(metrics[i]), without_machine_dependent(again[i])) << "line " << i + 1;
  EXPECT_EQ(read_file(ck + "/adapter_model.safetensors"),
            read_file(resumed + "/checkpoints/global_step_4/adapter_model.safetensors"));

  // The merged model scores as the base + unmerged adapter does.
  const test::CommandResult ex = run_grpo("export --adapter " + ck + " --out " + dir_ + "/merged");
  ASSERT_EQ(ex.status, 0) << ex.output;
  write_file_atomic(dir_ + "/seq.jsonl", "{\"input_ids\": [5, 9, 30, 41, 12, 99, 3, 7, 64, 2]}\n");
  const test::CommandResult s1 = run_grpo("score --model " + dir_ + "/model --adapter " + ck + " --input " + dir_ +
                                          "/seq.jsonl --out " + dir_ + "/a.jsonl");
  const test::CommandResult s2 =
      run_grpo("score --model " + dir_ + "/merged --input " + dir_ + "/seq.jsonl --out " + dir_ + "/b.jsonl");
  const test::CommandResult s3 =
      run_grpo("score --model " + dir_ + "/model --input " + dir_ + "/seq.jsonl --out " + dir_ + "/c.jsonl");
  ASSERT_EQ(s1.status + s2.status + s3.status, 0) << s1.output << s2.output << s3.output;
  const Json a = Json::parse(read_file(dir_ + "/a.jsonl")), b = Json::parse(read_file(dir_ + "/b.jsonl")),
             c = Json::parse(read_file(dir_ + "/c.jsonl"));
  double merged_err = 0, moved = 0;
  for (size_t i = 0; i < a["token_logprobs"].size(); ++i) {
    merged_err = std::max(merged_err, std::fabs(a["token_logprobs"][i].get<double>() - b["token_logprobs"][i].get<double>()));
    moved = std::max(moved, std::fabs(a["token_logprobs"][i].get<double>() - c["token_logprobs"][i].get<double>()));
  }
  EXPECT_LE(merged_err, 1e-5);
  EXPECT_GT(moved, 1e-3);

  // Two ranks train the same adapter (up to the order of fp32 sums).
  if (std::string(kLoraMpiexec).empty() || std::getenv("GRPO_SKIP_MPI")) return;
  test::prepare_mpirun_env(dir_ + "/mpi");
  const std::string two = dir_ + "/two";
  const test::CommandResult mr = test::run_grpo(
      "train " + dir_ + "/config.yaml --threads 1 --set trainer.default_local_dir=" + two, "2>&1",
      std::string(kLoraMpiexec) + " --allow-run-as-root --oversubscribe -np 2");
  ASSERT_EQ(mr.status, 0) << mr.output;
  const std::vector<Json> m2 = read_metrics(two + "/metrics.jsonl");
  ASSERT_EQ(m2.size(), metrics.size());
  for (size_t i = 0; i < m2.size(); ++i) {
    EXPECT_NEAR(m2[i].value("actor/grad_norm", 0.0), metrics[i].value("actor/grad_norm", 0.0), 1e-5) << i;
    EXPECT_EQ(m2[i].value("critic/score/mean", 0.0), metrics[i].value("critic/score/mean", 0.0)) << i;
  }
}

TEST_F(CliLora, BadSettingsAreNamed) {
  test::CommandResult r = train(dir_ + "/bad1", "--set actor_rollout_ref.model.target_modules=[q_proj,qkv_proj]");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("\"qkv_proj\" matches no linear module"), std::string::npos) << r.output;
  r = train(dir_ + "/bad2",
            "--set actor_rollout_ref.model.lora_rank=0 --set actor_rollout_ref.model.lora_adapter_path=" + dir_);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("lora_adapter_path"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("lora_rank = 0"), std::string::npos) << r.output;
  r = train(dir_ + "/bad3", "--set actor_rollout_ref.model.lora_adapter_path=" + dir_ + "/nowhere");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find(dir_ + "/nowhere"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("adapter_config.json"), std::string::npos) << r.output;
}

}  // namespace
