// The memory plan (plan/memory_plan.h) against the allocations it predicts: the decoder's and the vision
// tower's workspaces after a real forward, the parameter, gradient and moment buffers of a real Actor on 1
// and 3 ranks' shards, the rollout engine's KV budget; and the verdicts: a run fits a large machine, not a
// small one, where the suggested change fits.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "plan/memory_plan.h"
#include "model/checkpoint.h"
#include "model/init.h"
#include "model/lora.h"
#include "config/part_options.h"
#include "model/decoder.h"
#include "model/presets.h"
#include "model/vision.h"
#include "model/weights.h"
#include "rollout/decoder_model.h"
#include "rollout/engine.h"
#include "train/actor.h"
#include "temp_dir.h"
#include "test_util.h"

using namespace grpo;

namespace {

PackedBatch batch_of(const std::vector<int64_t>& lengths, int64_t vocab) {
  PackedBatch b;
  b.clear();
  for (int64_t n : lengths) {
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>((i * 7 + n) % vocab);
    b.add_sequence(ids);
  }
  return b;
}

// This process's resident pages of mapped files (RssFile in /proc/self/status), in bytes.
int64_t rss_file_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("RssFile:", 0) == 0) return std::stoll(line.substr(8)) * 1024;  // "RssFile:   1234 kB"
  throw std::runtime_error("no RssFile in /proc/self/status");
}

MemoryPlanInputs inputs_for(const ModelConfig& m, int ranks) {
  MemoryPlanInputs in;
  in.config.actor_rollout_ref.model.path = "unused";
  in.config.data.train_batch_size = 4;
  in.config.data.max_prompt_length = 40;
  in.config.data.max_response_length = 60;
  in.config.actor_rollout_ref.rollout.n = 4;
  in.config.actor_rollout_ref.actor.ppo_mini_batch_size = 4;
  in.config.actor_rollout_ref.actor.use_dynamic_bsz = true;
  in.config.actor_rollout_ref.actor.ppo_max_token_len_per_gpu = 512;
  in.model = m;
  in.data.max_prompt_tokens = 30;
  in.ranks = ranks;
  in.ranks_per_machine = ranks;
  in.available_bytes = int64_t{64} << 30;
  in.fixed_bytes = int64_t{50} << 20;
  return in;
}

}  // namespace

TEST(MemoryPlan, DecoderActivationsAreTheWorkspaceForwardReserves) {
  const ModelConfig m = preset_config("qwen3", "tiny");
  ModelWeights w(m);
  for (const bool bf16 : {false, true})
    for (const bool ckpt : {false, true}) {
      DecoderOptions o;
      o.mode = bf16 ? ComputeMode::BF16 : ComputeMode::F32;
      o.checkpoint_activations = ckpt;
      Decoder d(w, o);
      const PackedBatch b = batch_of({37, 90, 5}, m.vocab_size);
      std::vector<float> lp(b.T()), ent(b.T());
      d.forward(b, lp.data(), ent.data());
      EXPECT_EQ(d.workspace_bytes(), Decoder::activation_bytes(m, o, b.T(), 90, false)) << bf16 << ckpt;
      EXPECT_GT(Decoder::activation_bytes(m, o, b.T(), 90, false), Decoder::output_layer_bytes(m, o, b.T()));
    }
}

TEST(MemoryPlan, VisionActivationsAreTheWorkspaceForwardReserves) {
  const ModelConfig m = preset_config("qwen3-vl", "tiny");
  ModelWeights w(m);
  for (const bool ckpt : {false, true}) {
    const VisionOptions o{ComputeMode::F32, ckpt};
    VisionTower tower(w, o);
    const std::vector<ImageGrid> grids{{1, 4, 6}, {1, 2, 2}};
    const int64_t rows = 24 + 4;
    std::vector<float> pixels(static_cast<size_t>(rows * m.vision.patch_dim()), 0.25f);
    tower.forward(pixels.data(), grids, "test");
    EXPECT_EQ(tower.workspace_bytes(), VisionTower::activation_bytes(m.vision, o, rows)) << ckpt;
    // With adapters on the tower (LoRA rank 8): their rows too.
    LoraConfig lc;
    lc.rank = 8;
    lc.target = ModuleSelector::from_json("all-linear", "test");
    const LoraAdapters lora(m, lc, "test");
    VisionTower adapted(w, o);
    adapted.set_lora(&lora);
    adapted.forward(pixels.data(), grids, "test");
    EXPECT_EQ(adapted.workspace_bytes(), VisionTower::activation_bytes(m.vision, o, rows, 8)) << ckpt;
    EXPECT_GT(adapted.workspace_bytes(), tower.workspace_bytes());
  }
}

TEST(MemoryPlan, ParameterGradientAndMomentTermsAreTheActorsBuffers) {
  const ModelConfig m = preset_config("qwen3", "tiny");
  ModelWeights w(m);
  const MemoryPlan one = plan_memory(inputs_for(m, 1));
  EXPECT_EQ(one.term("weights"), w.params().numel() * 4);
  EXPECT_EQ(one.term("master"), 0);
  Arena grads(DType::F32);
  declare_parameters(m, grads);
  EXPECT_EQ(one.term("gradients"), grads.numel() * 4);
  const train::AdamW adam(m);
  EXPECT_EQ(one.term("optimizer"), (adam.end() - adam.begin()) * 8);
  EXPECT_EQ(one.term("gradient shard"), 0);

  // Three ranks: rank 0's shard of the partition the actor uses, f32 gradients still whole.
  const MemoryPlan three = plan_memory(inputs_for(m, 3));
  const comm::Partition part = train::parameter_partition(w.params().numel(), 3);
  EXPECT_EQ(three.term("optimizer"), part.size(0) * 8);
  EXPECT_EQ(three.term("gradient shard"), part.size(0) * 4);
  EXPECT_EQ(three.term("gradients"), grads.numel() * 4);
  EXPECT_GT(three.term("communication"), 0);
  EXPECT_EQ(three.term("checkpoint gather"), 0);  // each rank writes its own moments

  MemoryPlanInputs bf = inputs_for(m, 1);
  bf.config.mixed_precision.enabled = true;
  const MemoryPlan b = plan_memory(bf);
  EXPECT_EQ(b.term("master"), w.params().numel() * 4);
  w.bf16();
  EXPECT_EQ(b.term("weights"), w.bf16_arena()->numel() * 2);
}

TEST(MemoryPlan, KvTermIsTheEnginesBudget) {
  const ModelConfig m = preset_config("qwen3", "tiny");
  MemoryPlanInputs in = inputs_for(m, 1);
  ModelWeights w(m);
  const MemoryPlan big = plan_memory(in);
  const int64_t rest = big.rollout_later - big.term("KV cache");
  // The cap binds (64 GiB); the fraction does (the rest, and half the cap's bytes).
  for (const int64_t machine : {in.available_bytes, rest + big.term("KV cache") / 2}) {
    in.available_bytes = machine;
    const MemoryPlan p = plan_memory(in);
    rollout::EngineConfig ec = engine_config(in.config, m, 16);
    ec.kv_base_bytes = p.kv_base_bytes;  // what the run passes its engine (Session::kv_base_bytes)
    rollout::DecoderRolloutModel model(w, ComputeMode::F32, ec.block_size);
    const rollout::Engine engine(model, ec);
    EXPECT_EQ(p.term("KV cache"), engine.kv_budget().bytes) << machine;
    EXPECT_TRUE(engine.kv_budget().base_is_plan);
    EXPECT_NE(engine.kv_budget().describe().find("left by the rest of the run"), std::string::npos);
  }
  EXPECT_LT(plan_memory(in).term("KV cache"), big.term("KV cache") / 3);
}

// A step gives back the KV cache and the rollout workspaces after its rollout, the activations after its
// update: the peak is the larger of the rollout and the training, not their sum; and the engine's release
// leaves none of the KV cache resident.
TEST(MemoryPlan, RolloutAndTrainingBuffersAreResidentOnlyInTheirPhase) {
  const ModelConfig m = preset_config("qwen3", "tiny");
  MemoryPlanInputs in = inputs_for(m, 1);
  in.config.actor_rollout_ref.actor.use_kl_loss = true;
  in.config.actor_rollout_ref.actor.kl_loss_coef = 0.01;
  const MemoryPlan p = plan_memory(in);
  const int64_t kv = p.term("KV cache"), ws = p.term("rollout workspaces"), acts = p.term("activations");
  ASSERT_GT(kv, 0);
  ASSERT_GT(ws, 0);
  ASSERT_GT(acts, 0);
  ASSERT_GT(p.term("reference activations"), 0);
  for (const MemoryTerm& t : p.terms) {
    if (t.name == "KV cache" || t.name == "rollout workspaces") {
      EXPECT_EQ(t.rollout_first, t.name == "KV cache" ? kv : ws);
      EXPECT_EQ(t.rollout_later, t.rollout_first);
      EXPECT_EQ(t.training, 0) << t.name;
      EXPECT_EQ(t.save, 0) << t.name;
    }
    if (t.name == "activations" || t.name == "output layer" || t.name == "reference activations") {
      EXPECT_EQ(t.rollout_first, 0) << t.name;
      EXPECT_EQ(t.rollout_later, 0) << t.name;
      EXPECT_EQ(t.save, 0) << t.name;
    }
  }
  EXPECT_EQ(p.peak, std::max({p.load, p.rollout_first, p.training, p.rollout_later, p.save}));
  EXPECT_EQ(p.rollout_later - p.training, kv + ws - acts - p.term("output layer") - p.term("reference activations"));

  const rollout::EngineConfig ec = engine_config(in.config, m, 16);
  ModelWeights w(m);
  rollout::DecoderRolloutModel model(w, ComputeMode::F32, ec.block_size);
  rollout::EngineConfig big = ec;
  big.kv_memory_bytes = int64_t{8} << 20;
  big.kv_max_blocks = 0;
  rollout::Engine engine(model, big);
  std::vector<rollout::Request> reqs(4);
  for (size_t i = 0; i < reqs.size(); ++i) {
    reqs[i].prompt = {1, 2, 3, static_cast<int32_t>(i + 4)};
    reqs[i].n = 4;
    reqs[i].max_new_tokens = 60;
    reqs[i].seed = 3;
    reqs[i].id = i;
  }
  engine.generate(reqs);
  const ops::PagedKvView kvv = engine.kv_cache().view();
  const size_t kv_bytes = static_cast<size_t>(kvv.num_layers * kvv.layer_elems() * ops::kv_dtype_size(kvv.dtype));
  EXPECT_GT(test::resident_bytes(kvv.k, kv_bytes), 0);
  engine.release_memory();
  EXPECT_EQ(test::resident_bytes(kvv.k, kv_bytes), 0);
  EXPECT_EQ(test::resident_bytes(kvv.v, kv_bytes), 0);
}

TEST(MemoryPlan, CheckpointingAndZero3ShrinkTheirTerms) {
  const ModelConfig m = preset_config("qwen3", "small");
  MemoryPlanInputs in = inputs_for(m, 2);
  const MemoryPlan base = plan_memory(in);
  in.config.actor_rollout_ref.model.enable_gradient_checkpointing = true;
  const MemoryPlan ckpt = plan_memory(in);
  EXPECT_LT(ckpt.term("activations"), base.term("activations") / 2);
  in.config.actor_rollout_ref.actor.fsdp_config.reshard_after_forward = true;
  const MemoryPlan z3 = plan_memory(in);
  EXPECT_LT(z3.terms[1].training, ckpt.terms[1].training);  // the f32 weights while training
  EXPECT_EQ(z3.terms[1].rollout_later, ckpt.terms[1].rollout_later);  // gathered whole for the rollout
}

TEST(MemoryPlan, VerdictAndCheapestChange) {
  const ModelConfig m = preset_config("qwen3", "small");
  MemoryPlanInputs in = inputs_for(m, 1);
  const MemoryPlan big = plan_memory(in);
  EXPECT_TRUE(big.fits());
  EXPECT_EQ(explain_memory_plan(big).find("cheapest"), std::string::npos);
  // A machine a little smaller than the peak: checkpointing (the first change tried) brings it under.
  in.available_bytes = big.peak - big.term("activations") / 4;
  const MemoryPlan small = plan_memory(in);
  EXPECT_FALSE(small.fits());
  const std::optional<PlanChange> ch = cheapest_fitting_change(in);
  ASSERT_TRUE(ch.has_value());
  EXPECT_TRUE(ch->plan.fits());
  EXPECT_EQ(ch->sets.front(), "actor_rollout_ref.model.enable_gradient_checkpointing=true");
  EXPECT_NE(explain_memory_plan(small).find("cheapest change that fits: activation checkpointing"), std::string::npos);
  // A machine smaller than the weights alone: every rank holds them whole, nothing helps.
  in.available_bytes = big.term("weights") / 2 + big.term("fixed");
  EXPECT_FALSE(cheapest_fitting_change(in).has_value());
  EXPECT_NE(explain_memory_plan(plan_memory(in)).find("no change tried makes it fit"), std::string::npos);
}

// The loaders give each tensor's mapped pages back once converted: one tensor of the file is resident at a
// time, which the plan prices in the file's bytes per parameter. Ranks on one machine map the same file: the
// machine holds every rank's peak but that tensor once; when loading is not the peak phase, the peak times
// the ranks.
TEST(MemoryPlan, LoadingHoldsOneTensorOfTheMappedCheckpoint) {
  const ModelConfig m = preset_config("qwen3", "small");
  test::TempDir dir;
  {
    ModelWeights w(m);
    init_parameters(w, 3);
    save_checkpoint(dir.path(), m, w.named_tensors(), DType::F32);
  }
  const int64_t file = static_cast<int64_t>(std::filesystem::file_size(dir.path() + "/model.safetensors"));
  const Checkpoint ck = Checkpoint::open(dir.path());
  ModelWeights w(m);
  const int64_t before = rss_file_bytes();
  w.load_from(ck);
  EXPECT_LT(rss_file_bytes() - before, file / 20);  // the file is still mapped, its pages given back
  int64_t largest = 0;
  for (const std::string& name : ck.names())
    largest = std::max<int64_t>(largest, static_cast<int64_t>(ck.find(name)->nbytes));
  MemoryPlanInputs in = inputs_for(m, 2);
  in.checkpoint_bytes = file;
  EXPECT_EQ(plan_memory(in).mapped_file, largest);

  in.checkpoint_bytes = parameter_count(m) * 4096;  // 4 KiB a parameter: its largest tensor makes loading the peak
  const MemoryPlan p = plan_memory(in);
  ASSERT_EQ(p.peak_phase, "load");
  const int64_t later = std::max({p.rollout_first, p.training, p.rollout_later, p.save});
  EXPECT_EQ(p.machine_bytes(), std::max(2 * p.load - p.mapped_file, 2 * later));
  EXPECT_LT(p.machine_bytes(), 2 * p.peak);
  in.ranks_per_machine = 1;  // one rank a machine: its own peak
  EXPECT_EQ(plan_memory(in).machine_bytes(), p.peak);
  in.ranks_per_machine = 2;
  in.checkpoint_bytes = 1;  // a tiny file: a later phase is the peak, every rank holds it
  const MemoryPlan q = plan_memory(in);
  ASSERT_NE(q.peak_phase, "load");
  EXPECT_EQ(q.machine_bytes(), 2 * q.peak);
}

// Mixed precision on several ranks: each rank loads the bf16 shadow whole and, of the f32 masters, its shard
// of the GEMM weights and every other tensor (ModelWeights::shard_gemm_masters). The shadow is the whole
// load's bit for bit, the masters it holds are the whole load's, the other ranks' GEMM weights' pages are
// never written, and the plan's master term is the largest rank's resident f32 arena. Text and Qwen3-VL, an
// untied output layer and three ranks (shards that cut tensors in two).
TEST(MemoryPlan, ShardedMastersAreWhatEachRankLoads) {
  for (const char* arch : {"qwen3", "qwen3-vl"}) {
    SCOPED_TRACE(arch);
    ModelConfig m = preset_config(arch, "tiny");
    m.tie_word_embeddings = false;
    test::TempDir dir;
    {
      ModelWeights w(m);
      init_parameters(w, 7);
      save_checkpoint(dir.path(), m, w.named_tensors(), DType::BF16);
    }
    const auto whole = ModelWeights::load(dir.path());
    whole->bf16();
    const int ranks = 3;
    MemoryPlanInputs in = inputs_for(m, ranks);
    in.config.mixed_precision.enabled = true;
    const MemoryPlan p = plan_memory(in);
    const comm::Partition part = train::parameter_partition(whole->params().numel(), ranks);
    int64_t largest = 0;
    for (int r = 0; r < ranks; ++r) {
      SCOPED_TRACE(r);
      ModelWeights w(m);
      const int64_t lo = part.begin(r), hi = part.end(r);
      w.shard_gemm_masters(lo, hi);
      w.load_from(Checkpoint::open(dir.path()));
      // (before anything reads the untouched pages, which would map them)
      const TensorView f32 = w.params().flat();
      const int64_t resident = test::resident_bytes(f32.data, static_cast<size_t>(f32.numel()) * 4);
      EXPECT_EQ(resident, sharded_master_f32_bytes(m, Buffer::commit_granularity(f32.numel() * 4), lo, hi));
      largest = std::max(largest, resident);
      const Arena& a16 = *w.bf16_arena();
      ASSERT_EQ(std::memcmp(a16.flat().data, whole->bf16_arena()->flat().data, a16.numel() * 2), 0);
      int64_t gemm_elsewhere = 0;
      for (const auto& [name, view] : w.params().entries()) {
        const int64_t off = w.params().offset(name);
        const float* want = whole->params().view(name).f32();
        for (int64_t i = 0; i < view.numel(); ++i) {
          const bool held = !is_gemm_weight(name) || (off + i >= lo && off + i < hi);
          if (held)
            ASSERT_EQ(view.f32()[i], want[i]) << name << "[" << i << "]";
          else
            ASSERT_EQ(view.f32()[i], 0.0f) << name << "[" << i << "]";
          gemm_elsewhere += !held;
        }
      }
      EXPECT_GT(gemm_elsewhere, 0);
    }
    const auto master =
        std::find_if(p.terms.begin(), p.terms.end(), [](const MemoryTerm& t) { return t.name == "master"; });
    ASSERT_NE(master, p.terms.end());
    EXPECT_EQ(master->load, largest);
    EXPECT_EQ(master->rollout_first, largest);
    EXPECT_LT(largest, whole->params().numel() * 4 * 3 / 4);
  }
}

// LoRA: the plan counts what the LoRA code allocates. The base frozen in bf16 under mixed precision: the
// bf16 arena whole, and of the f32 arena only the pages its norms and embedding were written to (no
// gradients, no moments for it); the adapters' weights, gradients and moments in their own layout, sharded
// over ranks like the actor's.
TEST(MemoryPlan, LoraTermsAreWhatTheLoraCodeAllocates) {
  const ModelConfig m = preset_config("qwen3", "tiny");
  test::TempDir dir;
  {
    const ModelWeights w(m);
    save_checkpoint(dir.path(), m, w.named_tensors(), DType::F32);
  }
  const auto frozen = ModelWeights::load_frozen_bf16(dir.path());
  MemoryPlanInputs in = inputs_for(m, 1);
  in.config.mixed_precision.enabled = true;
  in.config.actor_rollout_ref.model.lora_rank = 8;
  in.config.actor_rollout_ref.model.target_modules = {"q_proj", "v_proj", "down_proj"};
  in.lora_rank = 8;
  const MemoryPlan p = plan_memory(in);

  LoraAdapters lora(m, lora_config(in.config), "test");
  EXPECT_EQ(lora_adapter_numel(in.config, m, 8), lora.params().numel());
  DecoderOptions dopt;
  dopt.mode = ComputeMode::BF16;
  train::Actor actor(*frozen, dopt, train::MicroBatching{}, train::AdamWConfig{}, nullptr, {}, true, &lora);
  EXPECT_EQ(p.trained_parameters, actor.trained_numel());
  EXPECT_EQ(p.term("adapters"), lora.params().numel() * 4);
  EXPECT_EQ(p.term("gradients"), actor.trained_numel() * 4);
  EXPECT_EQ(p.term("optimizer"), (actor.optimizer().end() - actor.optimizer().begin()) * 8);
  EXPECT_EQ(p.term("weights"), frozen->bf16_arena()->numel() * 2);
  const TensorView f32 = frozen->params().flat();
  const int64_t f32_resident = test::resident_bytes(f32.data, static_cast<size_t>(f32.numel()) * 4);
  EXPECT_EQ(p.term("master"), f32_resident);
  EXPECT_LT(f32_resident, f32.numel() * 4 / 2);  // the GEMM weights' pages were never written
  EXPECT_EQ(p.term("optimizer") + p.term("gradients") + p.term("adapters"), lora.params().numel() * 16);
  EXPECT_EQ(p.term("checkpoint gather"), 0);

  // Granules: every granule holding a tensor other than a GEMM weight, counted once.
  Arena layout(DType::F32);
  declare_parameters(m, layout);
  int64_t written = 0;
  for (const TensorSpec& t : expected_tensors(m))
    if (layout.has(t.name) && !is_gemm_weight(t.name)) written += st_numel(t.shape) * 4;
  EXPECT_EQ(frozen_base_f32_bytes(m, 4), written);
  EXPECT_EQ(frozen_base_f32_bytes(m, int64_t{1} << 40), layout.numel() * 4);  // one granule: the whole arena

  // f32 LoRA: the base whole in f32, no bf16 copy; two ranks: the adapters' partition.
  in.config.mixed_precision.enabled = false;
  in.ranks = in.ranks_per_machine = 2;
  const MemoryPlan two = plan_memory(in);
  const comm::Partition part = train::parameter_partition(lora.params().numel(), 2);
  EXPECT_EQ(two.term("weights"), layout.numel() * 4);
  EXPECT_EQ(two.term("master"), 0);
  EXPECT_EQ(two.term("optimizer"), part.size(0) * 8);
  EXPECT_EQ(two.term("gradient shard"), part.size(0) * 4);
  EXPECT_EQ(two.term("communication"), 2 * part.size(0) * 4);  // one f32 reduce-scatter of the adapters
  EXPECT_EQ(two.term("checkpoint gather"), lora.params().numel() * 8);
}

// The cheapest change offers LoRA as a run that starts: ZeRO-3 off (the actor refuses LoRA with it).
TEST(MemoryPlan, LoraChangeTurnsZero3Off) {
  const ModelConfig m = preset_config("qwen3", "small");
  MemoryPlanInputs in = inputs_for(m, 2);
  in.config.actor_rollout_ref.model.enable_gradient_checkpointing = true;
  in.config.actor_rollout_ref.actor.fsdp_config.reshard_after_forward = true;
  const MemoryPlan full = plan_memory(in);
  MemoryPlanInputs lora = in;
  lora.lora_rank = 32;
  lora.config.actor_rollout_ref.actor.fsdp_config.reshard_after_forward = false;
  const MemoryPlan lp = plan_memory(lora);
  ASSERT_LT(lp.peak, full.peak);
  in.available_bytes = (lp.peak + full.peak) / 2 * in.ranks_per_machine;
  const std::optional<PlanChange> ch = cheapest_fitting_change(in);
  ASSERT_TRUE(ch.has_value());
  EXPECT_NE(ch->description.find("LoRA (rank 32)"), std::string::npos) << ch->description;
  EXPECT_NE(std::find(ch->sets.begin(), ch->sets.end(), "actor_rollout_ref.actor.fsdp_config.reshard_after_forward=false"),
            ch->sets.end());
  EXPECT_EQ(ch->plan.peak, lp.peak);
}

// The KV budget is gpu_memory_utilization x what the rest of the run leaves a rank in its rollouts, not a
// fraction of the machine: the rollouts fit by construction, on one rank as on several sharing a machine;
// a machine the rest fills leaves no whole sample, which does not fit.
TEST(MemoryPlan, KvBudgetIsAFractionOfWhatIsLeft) {
  const ModelConfig m = preset_config("qwen3", "small");
  for (const int ranks : {1, 2}) {
    MemoryPlanInputs in = inputs_for(m, ranks);
    in.config.actor_rollout_ref.model.enable_gradient_checkpointing = true;
    in.config.data.train_batch_size = 64;
    in.config.actor_rollout_ref.rollout.n = 8;
    in.config.data.max_response_length = 2048;
    in.config.actor_rollout_ref.actor.ppo_mini_batch_size = 64;
    in.config.actor_rollout_ref.actor.ppo_max_token_len_per_gpu = 4096;
    in.config.actor_rollout_ref.rollout.gpu_memory_utilization = 0.9;
    in.available_bytes = int64_t{4} << 30;
    const MemoryPlan p = plan_memory(in);
    const int64_t kv = p.term("KV cache"), per_rank = in.available_bytes / in.ranks_per_machine;
    ASSERT_GT(kv, 0) << format_memory_plan(p);
    EXPECT_EQ(p.kv_base_bytes, per_rank - (p.rollout_later - kv)) << ranks;
    EXPECT_LE(kv, 0.9 * static_cast<double>(p.kv_base_bytes));
    EXPECT_GT(kv, 0.85 * static_cast<double>(p.kv_base_bytes));  // the cap does not bind here
    EXPECT_LE(std::max(p.rollout_first, p.rollout_later), per_rank);
    EXPECT_TRUE(p.fits()) << format_memory_plan(p);
    in.config.actor_rollout_ref.rollout.gpu_memory_utilization = 0.45;
    EXPECT_NEAR(static_cast<double>(plan_memory(in).term("KV cache")), kv / 2.0, kv * 0.01);
    // The rest of the rollout leaves less than one sample's blocks.
    in.available_bytes = (p.rollout_later - kv + (int64_t{1} << 20)) * in.ranks_per_machine;
    const MemoryPlan tight = plan_memory(in);
    EXPECT_FALSE(tight.kv_holds_a_sample);
    EXPECT_FALSE(tight.fits());
    EXPECT_NE(format_memory_plan(tight).find("holds no whole sample"), std::string::npos);
  }
}
