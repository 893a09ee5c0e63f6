// `grpo export --adapter` with LoRA on a Qwen3-VL model's tower and language model: the merged model
// (W + s B A written into the tower's blocks and mergers and the decoder's linears) gives the log-probs of the
// base with the adapter applied unmerged, on the reference tiny Qwen3-VL model and its case with pictures, at
// every instruction-set level this CPU runs (AVX2 included). And `grpo train` with LoRA on a tiny Qwen3-VL's
// tower and language model (the shapes task's pictures): the checkpoint holds the tower's adapter keys, a run
// resumed from step 1 ends with the same metrics and adapter bytes, and two ranks give one process's metrics.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_run.h"
#include "core/files.h"
#include "core/rng.h"
#include "core/threads.h"
#include "isa_util.h"
#include "model/lora.h"
#include "model/safetensors.h"
#include "report/metrics.h"
#include "run_metrics.h"
#include "test_util.h"
#include "train/case_eval.h"

using namespace grpo;

namespace {

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

std::vector<float> tensor_values(ModelWeights& w, const std::string& name) {
  const TensorView t = w.params().view(name);
  return std::vector<float>(t.f32(), t.f32() + t.numel());
}

}  // namespace

TEST(CliLoraTower, ExportMergesTheTowerAdaptersLikeTheUnmergedAdapter) {
  set_num_threads(1);
  const std::string dir = test::fresh_temp_dir("cli_lora_tower", "export");
  auto base = ModelWeights::load(test::kReferenceVl);
  LoraConfig cfg;
  cfg.rank = 4;
  cfg.alpha = 8;
  cfg.target = ModuleSelector::from_json("all-linear", "test");
  LoraAdapters lora(base->config(), cfg, "test");
  ASSERT_TRUE(lora.has_tower());
  lora.init_default(3);
  Rng rng({3, 1});
  for (const auto& [name, view] : lora.params().entries())  // a trained-looking B: the adapter matters
    if (name.find("lora_B") != std::string::npos)
      for (int64_t i = 0; i < view.numel(); ++i) view.f32()[i] = static_cast<float>(0.6 * rng.uniform() - 0.3);
  lora.save(dir + "/adapter", test::kReferenceVl);
  const test::CommandResult ex = test::run_grpo("export --threads 1 --adapter " + dir + "/adapter --model " +
                                                test::kReferenceVl + " --out " + dir + "/merged");
  ASSERT_EQ(ex.status, 0) << ex.output;
  auto merged = ModelWeights::load(dir + "/merged");
  for (const char* t : {"model.visual.blocks.0.attn.qkv.weight", "model.visual.blocks.2.mlp.linear_fc2.weight",
                        "model.visual.merger.linear_fc1.weight", "model.visual.deepstack_merger_list.1.linear_fc2.weight"})
    EXPECT_GT(max_abs_diff(tensor_values(*merged, t), tensor_values(*base, t)), 1e-3) << t << " was not merged";

  const SafetensorsFile ref = SafetensorsFile::open(test::kReferenceVl + "vl_case.safetensors");
  for (Isa isa : test::runnable_isas({Isa::Avx512Bf16, Isa::Avx512, Isa::Avx2})) {
    const test::ScopedIsa scope(isa);
    SCOPED_TRACE(isa_name(isa));
    train::CaseOptions with;
    with.lora = &lora;
    const train::CaseOutputs a = train::evaluate_case(*base, ref, nullptr, with);
    const train::CaseOutputs m = train::evaluate_case(*merged, ref, nullptr, train::CaseOptions{});
    const train::CaseOutputs b = train::evaluate_case(*base, ref, nullptr, train::CaseOptions{});
    EXPECT_LE(max_abs_diff(a.at("token_logprobs").data, m.at("token_logprobs").data), 2e-5);
    EXPECT_LE(test::rel_err(a.at("image_embeds").data, m.at("image_embeds").data), 1e-5);
    EXPECT_GT(max_abs_diff(a.at("token_logprobs").data, b.at("token_logprobs").data), 1e-3) << "the adapter should matter";
    EXPECT_GT(test::rel_err(a.at("image_embeds").data, b.at("image_embeds").data), 1e-3) << "the tower's adapters should matter";
  }
  std::filesystem::remove_all(dir);
}

namespace {

#ifdef GRPO_MPIEXEC
constexpr const char* kTowerMpiexec = GRPO_MPIEXEC;
#else
constexpr const char* kTowerMpiexec = "";
#endif

// GRPO on the shapes task with LoRA rank 4 on every linear (the tower's included), a KL term, 3 steps, each
// saved.
std::string tower_lora_config(const std::string& dir) {
  return "data:\n"
         "  train_files: " + dir + "/data/train.jsonl\n"
         "  val_files: \"\"\n"
         "  train_batch_size: 4\n"
         "  max_prompt_length: 160\n"
         "  max_response_length: 8\n"
         "  apply_chat_template: true\n"
         "actor_rollout_ref:\n"
         "  model:\n"
         "    path: " + dir + "/model\n"
         "    lora_rank: 4\n"
         "    lora_alpha: 8\n"
         "    target_modules: all-linear\n"
         "  rollout:\n"
         "    n: 4\n"
         "  actor:\n"
         "    ppo_mini_batch_size: 4\n"
         "    use_dynamic_bsz: true\n"
         "    ppo_max_token_len_per_gpu: 256\n"
         "    use_kl_loss: true\n"
         "    optim:\n"
         "      lr: 1.0e-2\n"
         "reward:\n"
         "  functions:\n"
         "    - name: format\n"
         "      pattern: \"^[a-z]\"\n"
         "trainer:\n"
         "  total_training_steps: 3\n"
         "  save_freq: 1\n"
         "  test_freq: -1\n"
         "  seed: 0\n";
}

}  // namespace

TEST(CliLoraTower, TrainSavesTheTowerAdaptersResumesExactlyAndMatchesOnTwoRanks) {
  const std::string dir = test::fresh_temp_dir("cli_lora_tower", "train");
  ASSERT_EQ(test::run_grpo("init --arch qwen3-vl --preset tiny --seed 1 --out " + dir + "/model").status, 0);
  const test::CommandResult data = test::run_grpo("data shapes --out " + dir + "/data --train 8 --test 2 --seed 3");
  ASSERT_EQ(data.status, 0) << data.output;
  write_file_atomic(dir + "/config.yaml", tower_lora_config(dir));
  auto train = [&](const std::string& run, const std::string& more = "", const std::string& launcher = "") {
    return test::run_grpo("train " + dir + "/config.yaml --threads 1 --set trainer.default_local_dir=" + run + " " + more,
                          "2>&1", launcher);
  };
  const std::string run = dir + "/run";
  const test::CommandResult r = train(run);
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string ck = run + "/checkpoints/global_step_3";
  const SafetensorsFile f = SafetensorsFile::open(ck + "/adapter_model.safetensors");
  const StTensor* qkv = f.find("base_model.model.model.visual.blocks.0.attn.qkv.lora_B.weight");
  ASSERT_TRUE(qkv) << "the tower's adapters are saved";
  std::vector<float> b(static_cast<size_t>(st_numel(qkv->shape)));
  tensor_to_f32(*qkv, b.data(), static_cast<int64_t>(b.size()), f.path());
  EXPECT_NE(b, std::vector<float>(b.size(), 0.0f)) << "the tower's adapters trained";
  EXPECT_TRUE(f.find("base_model.model.model.visual.merger.linear_fc2.lora_A.weight"));
  const std::vector<nlohmann::json> metrics = read_metrics(run + "/metrics.jsonl");
  ASSERT_EQ(metrics.size(), 3u);

  // Resumed from step 1 of a copy: the same metrics and adapter bytes.
  const std::string resumed = dir + "/resumed";
  std::filesystem::copy(run, resumed, std::filesystem::copy_options::recursive);
  std::filesystem::remove_all(resumed + "/checkpoints/global_step_2");
  std::filesystem::remove_all(resumed + "/checkpoints/global_step_3");
  write_file_atomic(resumed + "/checkpoints/latest", "global_step_1\n");
  const test::CommandResult rr = train(resumed, "--resume " + resumed);
  ASSERT_EQ(rr.status, 0) << rr.output;
  const std::vector<nlohmann::json> again = read_metrics(resumed + "/metrics.jsonl");
  ASSERT_EQ(again.size(), metrics.size());
  for (size_t i = 0; i < metrics.size(); ++i)
    EXPECT_EQ(test::without_machine_dependent(metrics[i]), test::without_machine_dependent(again[i])) << "line " << i + 1;
  EXPECT_EQ(read_file(ck + "/adapter_model.safetensors"),
            read_file(resumed + "/checkpoints/global_step_3/adapter_model.safetensors"));

  // Two ranks, each with its own prompts' pictures: one process's metrics.
  if (std::string(kTowerMpiexec).empty() || std::getenv("GRPO_SKIP_MPI")) return;
  test::prepare_mpirun_env(dir + "/mpi");
  const test::CommandResult mr =
      train(dir + "/two", "", std::string(kTowerMpiexec) + " --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS=1 -np 2");
  ASSERT_EQ(mr.status, 0) << mr.output;
  const std::vector<nlohmann::json> two = read_metrics(dir + "/two/metrics.jsonl");
  ASSERT_EQ(two.size(), metrics.size());
  for (size_t i = 0; i < two.size(); ++i) {
    EXPECT_NEAR(two[i].value("actor/grad_norm", 0.0), metrics[i].value("actor/grad_norm", 0.0), 1e-5) << i;
    EXPECT_NEAR(two[i].value("actor/pg_loss", 0.0), metrics[i].value("actor/pg_loss", 0.0), 1e-5) << i;
    EXPECT_EQ(two[i].value("critic/score/mean", 0.0), metrics[i].value("critic/score/mean", 0.0)) << i;
  }
  std::filesystem::remove_all(dir);
}
