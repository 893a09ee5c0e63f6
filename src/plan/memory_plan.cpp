// The memory plan (see memory_plan.h).
#include "plan/memory_plan.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "core/arena.h"
#include "core/checked.h"
#include "core/units.h"
#include "config/part_options.h"
#include "kernels/plain_ops.h"
#include "model/decoder.h"
#include "model/infer.h"
#include "model/lora.h"
#include "model/vision.h"
#include "model/weights.h"
#include "rollout/engine.h"
#include "train/actor.h"
#include "train/grad_reducer.h"
#include "train/param_sync.h"

namespace grpo {

namespace {

// Elements of the parameter layout of `m` (padding included), as the arenas allocate them.
int64_t layout_numel(const ModelConfig& m, DType dtype, bool with_vision = true) {
  Arena a(dtype);
  declare_parameters(m, a, with_vision);
  return a.numel();
}

// What ZeRO-3 keeps of the layers [lo, hi) of the layout on rank 0 and what it gathers.
struct LayerSplit {
  int64_t lo = 0, hi = 0;        // the decoder layers' region of the layout
  int64_t own = 0;               // rank 0's elements inside it
  int64_t gemm = 0;              // GEMM weight elements inside it (read in bf16 in bf16 mode)
  int64_t largest_layer = 0;     // elements of the largest layer
  int64_t packed_layer = 0;      // bytes of the largest layer as the bf16-mode gather packs it
  int64_t packed_all = 0;        // bytes of the whole layout as the bf16-mode gather packs it
};

LayerSplit layer_split(const ModelConfig& m, const comm::Partition& part) {
  Arena a(DType::F32);
  declare_parameters(m, a);
  LayerSplit s;
  const int64_t L = m.num_hidden_layers;
  s.lo = a.offset(first_layer_tensor(m, 0));
  s.hi = a.offset(m.text_prefix() + "norm.weight");
  s.own = std::max<int64_t>(0, std::min(s.hi, part.end(0)) - std::max(s.lo, part.begin(0)));
  std::vector<int64_t> layer_begin;
  for (int64_t l = 0; l < L; ++l) layer_begin.push_back(a.offset(first_layer_tensor(m, l)));
  layer_begin.push_back(s.hi);
  std::vector<int64_t> packed(L, 0);
  // The tensors' offsets come from the unallocated layout, their sizes from the model's tensor list.
  for (const TensorSpec& t : expected_tensors(m)) {
    if (!a.has(t.name)) continue;
    const int64_t off = a.offset(t.name), n = st_numel(t.shape);
    const bool gemm = is_gemm_weight(t.name);
    s.packed_all += n * (gemm ? 2 : 4);
    if (off < s.lo || off >= s.hi) continue;
    if (gemm) s.gemm += n;
    const int64_t l = std::upper_bound(layer_begin.begin(), layer_begin.end(), off) - layer_begin.begin() - 1;
    packed[l] += n * (gemm ? 2 : 4);
  }
  for (int64_t l = 0; l < L; ++l) {
    s.largest_layer = std::max(s.largest_layer, layer_begin[l + 1] - layer_begin[l]);
    s.packed_layer = std::max(s.packed_layer, packed[l]);
  }
  return s;
}

// Elements of the largest tensor (with gemm_only, of the largest GEMM weight).
int64_t largest_tensor(const ModelConfig& m, bool gemm_only) {
  int64_t n = 0;
  for (const TensorSpec& t : expected_tensors(m))
    if (!gemm_only || is_frozen_bf16_only(t.name)) n = std::max(n, st_numel(t.shape));
  return n;
}

// The largest micro-batch (tokens, longest sequence, sequences) of rank 0 when every sample of a mini-batch
// is at most `seq_len` tokens long: the packer's plan of rank 0's share (the balanced split of equal lengths
// gives it ceil(samples / ranks) of them; evening out the ranks' counts only splits micro-batches); by token
// budget, the whole budget (samples of varied lengths fill a micro-batch up to it) when the share holds as
// much.
struct MicroBatchSize {
  int64_t tokens = 0, longest = 0, sequences = 0;
};
MicroBatchSize largest_micro_batch(int64_t samples, int64_t seq_len, const train::MicroBatching& mb, int ranks) {
  MicroBatchSize r;
  if (samples <= 0 || seq_len <= 0) return r;
  const int64_t share = (samples + ranks - 1) / ranks;
  const train::MicroBatchPlan plan = train::plan_micro_batches(std::vector<int64_t>(static_cast<size_t>(share), seq_len), mb);
  for (const train::MicroBatch& m : plan.micro_batches)
    if (m.computed_tokens > r.tokens) r = {m.computed_tokens, seq_len, static_cast<int64_t>(m.sequences.size())};
  if (mb.dynamic && !mb.pad) {
    r.tokens = std::max(r.tokens, std::min(mb.max_tokens, share * seq_len));
    r.sequences = std::max(r.sequences, (r.tokens + seq_len - 1) / seq_len);
  }
  return r;
}

}  // namespace

DataLengths config_lengths(const Config& c) {
  DataLengths d;
  d.max_prompt_tokens = c.data.max_prompt_length;
  return d;
}

DataLengths data_lengths(const Dataset& train, const Dataset& val) {
  DataLengths d;
  for (const Dataset* set : {&train, &val})
    for (const Example& ex : set->examples) {
      d.max_prompt_tokens = std::max<int64_t>(d.max_prompt_tokens, ex.prompt_ids.size());
      int64_t patches = 0;
      for (const ImageGrid& g : ex.image_grids) patches += g.patches();
      d.max_prompt_patches = std::max(d.max_prompt_patches, patches);
      d.max_prompt_pictures = std::max<int64_t>(d.max_prompt_pictures, ex.image_grids.size());
    }
  d.val_prompts = static_cast<int64_t>(val.examples.size());
  return d;
}

int64_t lora_adapter_numel(const Config& c, const ModelConfig& m, int64_t rank) {
  LoraConfig lc = lora_config(c);
  if (c.actor_rollout_ref.model.lora_adapter_path.empty()) lc.rank = rank;  // else the adapter's own r
  const LoraAdapters adapters(m, lc, "actor_rollout_ref.model (lora_rank, target_modules)",
                              c.actor_rollout_ref.actor.freeze_vision_tower);
  return adapters.params().numel();
}

namespace {

// Granules of the f32 arena written by a loader that writes the tensors for which shadow_only(name) holds
// only inside [lo, hi) and every other tensor whole.
int64_t written_f32_bytes(const ModelConfig& m, int64_t granularity, bool (*shadow_only)(const std::string&),
                          int64_t lo, int64_t hi) {
  Arena a(DType::F32);
  declare_parameters(m, a);
  std::vector<std::pair<int64_t, int64_t>> written;  // [begin, end) in bytes
  for (const TensorSpec& t : expected_tensors(m)) {
    if (!a.has(t.name)) continue;
    int64_t begin = a.offset(t.name), end = begin + st_numel(t.shape);
    if (shadow_only(t.name)) begin = std::max(begin, lo), end = std::min(end, hi);
    if (begin < end) written.emplace_back(begin * 4, end * 4);
  }
  std::sort(written.begin(), written.end());
  int64_t bytes = 0, counted = 0;  // granules [0, counted) are counted or skipped
  for (const auto& [begin, end] : written) {
    const int64_t first = std::max(begin / granularity, counted), past = (end + granularity - 1) / granularity;
    if (past > first) bytes += (past - first) * granularity;
    counted = std::max(counted, past);
  }
  return std::min(bytes, a.numel() * 4);
}

}  // namespace

int64_t frozen_base_f32_bytes(const ModelConfig& m, int64_t granularity) {
  return written_f32_bytes(m, granularity, is_frozen_bf16_only, 0, 0);
}

int64_t sharded_master_f32_bytes(const ModelConfig& m, int64_t granularity, int64_t lo, int64_t hi) {
  return written_f32_bytes(m, granularity, is_gemm_weight, lo, hi);
}

int64_t measured_fixed_overhead_bytes() { return resident_bytes() + kRuntimeOverheadBytes; }

int64_t MemoryPlan::term(const std::string& name) const {
  for (const MemoryTerm& t : terms)
    if (t.name == name) return std::max({t.load, t.rollout_first, t.training, t.rollout_later, t.save});
  return 0;
}

namespace {

// The run's set-up as the plan sizes it.
struct PlanSetup {
  int N = 1;  // ranks
  bool bf16 = false, dist = false, lora = false;
  // LoRA: the base is frozen and whole on every rank (ZeRO-3 shards trained parameters only); under mixed
  // precision it is held once, in bf16 (ModelWeights::load_frozen_bf16).
  bool zero3 = false, frozen16 = false, frozen_tower = false;
};

PlanSetup plan_setup(const MemoryPlanInputs& in) {
  const ActorConfig& ac = in.config.actor_rollout_ref.actor;
  PlanSetup u;
  u.N = std::max(1, in.ranks);
  u.bf16 = in.config.mixed_precision.enabled;
  u.dist = u.N > 1;
  u.lora = in.lora_rank > 0;
  u.zero3 = u.dist && ac.fsdp_config.reshard_after_forward && !u.lora;
  u.frozen16 = u.lora && u.bf16;
  u.frozen_tower = in.model.has_vision() && ac.freeze_vision_tower;
  return u;
}

// Parameters: the f32 arena (the masters), the bf16 shadow, the trained layout and this rank's shard: of
// the model, or with LoRA of the adapters' own arena.
struct ParameterSizes {
  int64_t numel = 0, numel16 = 0;  // elements of the f32 and the bf16 layouts
  int64_t P32 = 0, P16 = 0;        // bytes of the f32 arena and of the bf16 shadow (0 in f32 mode)
  int64_t base32 = 0;              // bytes of the f32 arena (of a base frozen in bf16: what its loader writes)
  int64_t shard32 = 0;             // bf16 mode on several ranks: the f32 masters a rank loads (the largest)
  comm::Partition part, adapter_part;
  int64_t adapter_elems = 0, trained = 0, moment_elems = 0;
  LayerSplit layers;
};

ParameterSizes parameter_sizes(const MemoryPlanInputs& in, const PlanSetup& u, MemoryPlan& p) {
  const ModelConfig& m = in.model;
  ParameterSizes z;
  z.numel = layout_numel(m, DType::F32);
  z.numel16 = layout_numel(m, DType::BF16);
  z.P32 = z.numel * 4;
  z.P16 = u.bf16 ? z.numel16 * 2 : 0;
  z.base32 = u.frozen16 ? frozen_base_f32_bytes(m, static_cast<int64_t>(Buffer::commit_granularity(z.P32))) : z.P32;
  p.parameters = parameter_count(m);
  z.part = train::parameter_partition(z.numel, u.N);
  if (u.bf16 && u.dist && !u.lora) {  // ModelWeights::shard_gemm_masters
    const int64_t g = static_cast<int64_t>(Buffer::commit_granularity(z.P32));
    for (int r = 0; r < u.N; ++r)
      z.shard32 = std::max(z.shard32, sharded_master_f32_bytes(m, g, z.part.begin(r), z.part.end(r)));
  }
  z.adapter_elems = u.lora ? (in.lora_numel > 0 ? in.lora_numel : lora_adapter_numel(in.config, m, in.lora_rank)) : 0;
  z.adapter_part = train::parameter_partition(z.adapter_elems, u.N);
  z.trained = u.lora ? z.adapter_elems : layout_numel(m, DType::F32, !u.frozen_tower);
  p.trained_parameters = z.trained;
  p.shard_elems = u.lora ? z.adapter_part.size(0) : z.part.size(0);
  z.moment_elems = u.dist ? p.shard_elems : z.trained;
  z.layers = layer_split(m, z.part);
  return z;
}

// The weights' bytes in each phase (f32 arena, bf16 shadow).
struct WeightBytes {
  int64_t w32_train = 0, w16_train = 0, w32_later = 0;
};

// bf16 mode on several ranks: a rank loads the f32 masters of its shard of the GEMM weights only (the others'
// reach it in bf16) and every other tensor whole (ModelWeights::shard_gemm_masters), in every phase.
// ZeRO-3 while training: the root, rank 0's part of the layers and a window of two gathered layers (in bf16
// mode into the bf16 shadow only).
WeightBytes weight_bytes(const PlanSetup& u, const ParameterSizes& z) {
  WeightBytes w{z.P32, z.P16, z.P32};
  const bool sharded = u.bf16 && u.dist && !u.lora;
  if (sharded) w.w32_train = w.w32_later = z.shard32;
  if (!u.zero3) return w;
  const LayerSplit& ls = z.layers;
  const int64_t root = z.numel - (ls.hi - ls.lo);
  if (u.bf16) {
    // Whichever is smaller bounds it: the root counts a whole untied output layer, the shard every layer's norms.
    w.w32_train = std::min(z.shard32, (root + ls.own) * 4);
    w.w16_train = (z.numel16 - (ls.hi - ls.lo) + ls.own + 2 * ls.largest_layer) * 2;
  } else {
    w.w32_train = (root + ls.own + 2 * ls.largest_layer) * 4;
  }
  return w;
}

// Bytes of the training phase's activations: the actor's, the reference's, and the vision tower's.
struct TrainingBytes {
  int64_t acts = 0, head = 0, vision = 0;  // the actor's decoder, its output layer's chunks, the tower
  int64_t ref_weights = 0, ref_acts = 0;   // the KL reference's second set of weights and its decoder
  MicroBatchSize mb;
  bool pictures = false;  // the prompts have pictures the model reads
  DecoderOptions dopt;
};

// Training activations: the largest micro-batch of the actor (also the old log-prob passes) and of the
// reference, every sample of the longest prompt and a full-length response. The reference model (KL): its
// own decoder, and a second set of weights (with LoRA, the frozen base without the adapters: no second set).
TrainingBytes training_bytes(const MemoryPlanInputs& in, const PlanSetup& u, const ParameterSizes& z) {
  const Config& c = in.config;
  const ModelConfig& m = in.model;
  const ActorConfig& ac = c.actor_rollout_ref.actor;
  TrainingBytes t;
  const int64_t seq_len = std::min(in.data.max_prompt_tokens + c.data.max_response_length, m.max_position_embeddings);
  const int64_t mini_samples = checked_mul(std::min(ac.ppo_mini_batch_size, c.data.train_batch_size),
                                           c.actor_rollout_ref.rollout.n, "[plan] ppo_mini_batch_size x rollout.n");
  t.mb = largest_micro_batch(mini_samples, seq_len, actor_micro_batching(c), u.N);
  t.dopt = decoder_options(c);
  t.pictures = m.has_vision() && in.data.max_prompt_patches > 0;
  if (t.mb.tokens > 0) {
    t.acts =
        static_cast<int64_t>(Decoder::activation_bytes(m, t.dopt, t.mb.tokens, t.mb.longest, t.pictures, in.lora_rank));
    t.head = static_cast<int64_t>(Decoder::output_layer_bytes(m, t.dopt, t.mb.tokens));
  }
  if (t.pictures && t.mb.sequences > 0)
    t.vision = static_cast<int64_t>(VisionTower::activation_bytes(
        m.vision, VisionOptions{t.dopt.mode, t.dopt.checkpoint_activations},
        t.mb.sequences * in.data.max_prompt_patches,
        u.frozen_tower ? 0 : in.lora_rank));  // LoRA on an unfrozen tower: its adapters' rows (if it selects any)
  if ((ac.use_kl_loss && ac.kl_loss_coef != 0) || c.algorithm.use_kl_in_reward) {
    const MicroBatchSize rmb = largest_micro_batch(mini_samples, seq_len, ref_micro_batching(c), u.N);
    t.ref_weights = u.lora ? 0 : z.P32 + z.P16;
    t.ref_acts = rmb.tokens > 0
                     ? static_cast<int64_t>(Decoder::activation_bytes(m, t.dopt, rmb.tokens, rmb.longest, t.pictures))
                     : 0;
  }
  return t;
}

// The most samples one generate call of the run asks for: a step's (train_batch_size x n) or the
// validation's (prompts x val_kwargs.n); the engine's KV cap is sized for them.
int64_t rollout_samples(const MemoryPlanInputs& in) {
  const Config& c = in.config;
  const RolloutConfig& rc = c.actor_rollout_ref.rollout;
  const int64_t train_samples = checked_mul(c.data.train_batch_size, rc.n, "[plan] train_batch_size x rollout.n");
  return std::max(train_samples, checked_mul(in.data.val_prompts, rc.val_kwargs.n, "[plan] validation samples"));
}

// Bytes of the rollout phase besides the KV cache: the engine's and the model's step workspaces, the tower.
struct RolloutBytes {
  int64_t workspaces = 0, bucket = 0, vision = 0;
};

// The rollout: each rank generates for its share of the groups (a group stays on one rank).
RolloutBytes rollout_bytes(const MemoryPlanInputs& in, const PlanSetup& u, const TrainingBytes& t, MemoryPlan& p) {
  const Config& c = in.config;
  const ModelConfig& m = in.model;
  const RolloutConfig& rc = c.actor_rollout_ref.rollout;
  const int N = u.N;
  RolloutBytes r;
  const rollout::EngineConfig ec = engine_config(c, m, rollout_samples(in));
  const int64_t rank_prompts = (c.data.train_batch_size + N - 1) / N;
  const int64_t rank_samples = std::max(rank_prompts * rc.n, (in.data.val_prompts + N - 1) / N * rc.val_kwargs.n);
  const int64_t group = std::max(rc.n, rc.val_kwargs.n);
  const int64_t at_once = std::max(std::min(rc.max_num_seqs, rank_samples), std::min(rank_samples, group));
  const int64_t prompt_tokens =
      (rc.share_group_prompt ? rank_prompts : rank_prompts * rc.n) * in.data.max_prompt_tokens;
  r.bucket = rollout::workspace_bucket(ec, std::max(at_once, prompt_tokens));
  p.rollout_bucket = r.bucket;
  rollout::EngineConfig touched = ec;  // logits rows written: at most the samples that run at once
  touched.max_seqs = std::min(ec.max_seqs, at_once);
  r.workspaces = rollout::step_workspace_bytes(touched, r.bucket, m.vocab_size, m.max_position_embeddings) +
                 static_cast<int64_t>(InferenceModel::workspace_bytes_for(m, r.bucket, std::min(r.bucket, ec.max_seqs),
                                                                          ec.block_size, in.lora_rank));
  if (t.pictures) {
    const int64_t pads = in.data.max_prompt_patches / m.vision.merge_factor();
    const int64_t deepstack = static_cast<int64_t>(m.vision.deepstack_visual_indexes.size());
    const int64_t prompts = std::max(rank_prompts, (in.data.val_prompts + N - 1) / N);
    r.vision = static_cast<int64_t>(VisionTower::activation_bytes(m.vision, VisionOptions{t.dopt.mode, false},
                                                                  in.data.max_prompt_patches,
                                                                  u.frozen_tower ? 0 : in.lora_rank)) +
               prompts * pads * (1 + deepstack) * m.hidden_size * 4 +  // PromptVision features
               c.data.train_batch_size * in.data.max_prompt_patches * m.vision.patch_dim() *
                   4;  // the step's pixels (all ranks' prompts)
  }
  return r;
}

// Several ranks: the reduce-scatter's wire buffers and the bf16-mode all-gather's staging (two chunks of the
// layout in flight, train/param_sync.h; ZeRO-3's layer windows use the same two slots); with LoRA one
// reduce-scatter of the whole adapter gradients (every rank's piece of this rank's shard received, the
// whole range encoded when the wire is not f32).
int64_t communication_bytes(const Config& c, const PlanSetup& u, const ParameterSizes& z) {
  if (!u.dist) return 0;
  const train::DataParallel dp = data_parallel_config(c);
  const int64_t wb = dp.reduce_wire == comm::Wire::F32 ? 4 : 2;
  if (u.lora) return u.N * z.adapter_part.size(0) * wb + (dp.reduce_wire == comm::Wire::F32 ? 0 : z.adapter_elems * wb);
  int64_t comm = dp.bucket_elems * wb + (dp.reduce_wire == comm::Wire::F32 ? 0 : dp.bucket_elems * wb) +
                 (dp.reduce_per_micro_batch ? dp.bucket_elems / u.N * 4 : 0);
  if (u.bf16) {
    const int64_t chunk = std::min(z.layers.packed_all, 4 * train::ParamSync::kChunkElems);  // packed, at most
    int64_t slot0 = chunk, slot1 = z.numel > train::ParamSync::kChunkElems ? chunk : 0;
    if (u.zero3) {
      slot0 = std::max(slot0, z.layers.packed_layer);
      slot1 = std::max(slot1, z.layers.packed_layer);
    }
    comm += slot0 + slot1;
  }
  return comm;
}

// The table's rows: name, bytes in each phase, how each is sized.
void add_terms(const MemoryPlanInputs& in, const PlanSetup& u, const ParameterSizes& z, const WeightBytes& w,
               const TrainingBytes& t, const RolloutBytes& r, int64_t comm, MemoryPlan& p) {
  const ModelConfig& m = in.model;
  const bool lora = u.lora, bf16 = u.bf16, zero3 = u.zero3, dist = u.dist, frozen16 = u.frozen16;
  const int64_t P16 = z.P16, P32 = z.P32, base32 = z.base32;
  const int64_t adapters = z.adapter_elems * 4;
  // Loading: the checkpoint's mapped file, and for a base frozen in bf16 one GEMM weight at a time in f32.
  // The loaders give each tensor's mapped pages back once converted (Checkpoint::release): one tensor of the
  // file is resident at a time, in the file's dtype (its size over the parameters, or config.json's).
  const int64_t file_bytes = in.checkpoint_bytes > 0 ? in.checkpoint_bytes : p.parameters * dtype_size(m.dtype);
  p.mapped_file = largest_tensor(m, false) * std::max<int64_t>(1, file_bytes / std::max<int64_t>(1, p.parameters));
  const bool sharded = bf16 && dist && !lora;  // ModelWeights::shard_gemm_masters
  const int64_t chunk = std::min(largest_tensor(m, true), ModelWeights::kLoadChunkElems) * 4;
  const int64_t file = p.mapped_file + (frozen16 || sharded ? chunk : 0);
  const int64_t grads = z.trained * 4, grad_shard = dist ? p.shard_elems * 4 : 0, moments = z.moment_elems * 8;

  // name, load, rollout (step 1), training, rollout (later steps), how; saving holds what later rollouts do
  auto add = [&](const char* name, int64_t load, int64_t r1, int64_t train, int64_t r2, std::string how) {
    p.terms.push_back({name, load, r1, train, r2, r2, std::move(how)});
  };
  // What a step gives back after its phase: the rollout's buffers after the rollout (Engine::release_memory),
  // the activations after the update (Decoder::release_workspace).
  auto add_rollout = [&](const char* name, int64_t bytes, std::string how) {
    p.terms.push_back({name, 0, bytes, 0, bytes, 0, std::move(how)});
  };
  auto add_training = [&](const char* name, int64_t bytes, std::string how) {
    p.terms.push_back({name, 0, 0, bytes, 0, 0, std::move(how)});
  };
  add("fixed", in.fixed_bytes, in.fixed_bytes, in.fixed_bytes, in.fixed_bytes,
      "libraries, threads, oneDNN, tokenizer, data (measured)");
  if (frozen16) {
    add("weights", P16, P16, P16, P16, "the frozen base in bf16 (LoRA)");
    add("master", base32, base32, base32, base32, "f32 norms, biases, embeddings (no f32 GEMM weights, the tower's neither)");
  } else if (bf16) {
    add("weights", sharded ? P16 : 0, P16, w.w16_train, P16,
        zero3 ? "bf16 shadow; ZeRO-3 training: root + shard + 2 layers" : "bf16 shadow of the layout");
    add("master", sharded ? z.shard32 : P32, w.w32_later, w.w32_train, w.w32_later,
        sharded ? "f32 norms, biases, embedding; GEMM weights: the rank's shard" : "f32 arena (the masters)");
  } else {
    add("weights", P32, P32, w.w32_train, w.w32_later,
        zero3 ? "f32 arena; ZeRO-3 training: root + shard + 2 layers" : "f32 arena");
    add("master", 0, 0, 0, 0, "the f32 weights are the masters");
  }
  const train::DataParallel dp = data_parallel_config(in.config);
  if (dist && !lora && dp.reduce_per_micro_batch && dp.overlap) {
    // Released bucket by bucket (train/grad_reducer.h): the unit the backward writes (a layer, or the
    // embedding / output layer: the vocabulary's rows), the buckets in flight behind it, and a tied embedding's
    // gradient from the head to the end.
    const int64_t vocab_rows = m.vocab_size * m.hidden_size;
    const int64_t resident =
        std::min(grads, (std::max(z.layers.largest_layer, vocab_rows) + m.tie_word_embeddings * vocab_rows +
                         static_cast<int64_t>(train::GradReducer::kReleaseLag + 1) * dp.bucket_elems) *
                            4);
    add_training("gradients", resident, "released bucket by bucket: the unit written and the buckets in flight");
  } else if (dist && !lora) {
    add_training("gradients", grads, "the whole layout while training (accumulates micro-batches), given back after");
  } else
    add("gradients", 0, 0, grads, grads,
        lora ? "the adapters' (none for the frozen base)" : "the whole layout (accumulates micro-batches)");
  add("gradient shard", 0, 0, grad_shard, grad_shard, "this rank's reduced shard");
  add("optimizer", 0, 0, moments, moments, cat("AdamW m, v", dist ? " of the shard" : "", lora ? " (adapters)" : ""));
  add("adapters", adapters, adapters, adapters, adapters, lora ? "LoRA weights (f32)" : "no LoRA");
  add_training("activations", t.acts - t.head,
               cat(t.mb.tokens, "-token micro-batch", t.dopt.checkpoint_activations ? ", checkpointed" : ""));
  add_training("output layer", t.head, "the fused output layer's chunk buffers");
  add_training("vision activations", t.vision, "the tower on the micro-batch's pictures");
  add_rollout("KV cache", 0, "");  // sized last, from what the other terms leave (size_kv_cache)
  add_rollout("rollout workspaces", r.workspaces, cat("steps of up to ", r.bucket, " tokens"));
  add("vision rollout", 0, r.vision, r.vision, r.vision, "the tower on one prompt, features, pixels");
  add("communication", 0, 0, comm, comm, "reduce-scatter buckets, all-gather staging");
  add("reference model", t.ref_weights > 0 ? P32 : 0, t.ref_weights, t.ref_weights, t.ref_weights,
      t.ref_weights > 0 ? "weights of the KL reference (f32 + bf16)" : "no second set of weights");
  add_training("reference activations", t.ref_acts,
               lora ? "decoder of the KL reference (the frozen base)" : "decoder of the KL reference");
  add("checkpoint file", file, 0, 0, 0,
      frozen16 || sharded ? "one tensor of the mapped safetensors, converted 1 Mi elements at a time"
                          : "one tensor of the mapped safetensors at a time");
  // Saving: one process writes its whole f32 weights; several ranks each write their own model file (from the
  // bf16 shadow, or the f32 weights the rollout reads), moments and masters (loop/flat_shards.h) as they hold
  // them: nothing gathered, the later rollouts' memory. LoRA saves the adapters only, but rank 0 gathers the
  // adapters' moments of every shard.
  for (MemoryTerm& term : p.terms)
    if (!lora && !dist && term.name == (bf16 ? "master" : "weights")) term.save = P32;
  add("checkpoint gather", 0, 0, 0, 0,
      lora ? "rank 0 saving: every rank's AdamW moments of the adapters" : "none: each rank writes its own files");
  p.terms.back().save = dist && lora ? z.adapter_elems * 8 : 0;  // the adapters' partition, whole
}

// The sums per phase and the peak.
void add_up_phases(MemoryPlan& p) {
  p.load = p.rollout_first = p.training = p.rollout_later = p.save = 0;
  for (const MemoryTerm& t : p.terms) {
    p.load += t.load;
    p.rollout_first += t.rollout_first;
    p.training += t.training;
    p.rollout_later += t.rollout_later;
    p.save += t.save;
  }
  p.peak = p.load;
  p.peak_phase = "load";
  const std::pair<int64_t, const char*> phases[] = {
      {p.rollout_first, "rollout"}, {p.training, "training"}, {p.rollout_later, "rollout (step 2+)"}, {p.save, "save"}};
  for (const auto& [bytes, name] : phases)
    if (bytes > p.peak) p.peak = bytes, p.peak_phase = name;
}

// The KV cache, sized as the run's engine is (rollout::kv_budget_for): gpu_memory_utilization x what the
// rest of the run leaves a rank in its rollouts, the machine's available memory shared by its ranks less
// the larger rollout phase without the cache (kv_base_bytes), capped at what the step's samples hold at
// once; of that budget a rank touches the blocks its share of the groups holds at once. The rollouts then
// fit by construction; a budget too small for one whole sample is a plan that does not fit.
void size_kv_cache(const MemoryPlanInputs& in, const PlanSetup& u, MemoryPlan& p) {
  const Config& c = in.config;
  const ModelConfig& m = in.model;
  const RolloutConfig& rc = c.actor_rollout_ref.rollout;
  const rollout::EngineConfig ec = engine_config(c, m, rollout_samples(in));
  const rollout::KvCacheShape shape{m.num_hidden_layers, m.num_key_value_heads, m.head_dim, ec.block_size, ec.kv_dtype};
  p.kv_base_bytes = in.available_bytes / in.ranks_per_machine - std::max(p.rollout_first, p.rollout_later);
  const int64_t asked =
      ec.kv_memory_bytes > 0
          ? ec.kv_memory_bytes
          : static_cast<int64_t>(ec.kv_memory_fraction * static_cast<double>(std::max<int64_t>(0, p.kv_base_bytes)));
  // The engine refuses a sample its cache cannot hold whole (Engine::check_fits_cache).
  const int64_t sample_tokens =
      std::min(in.data.max_prompt_tokens + c.data.max_response_length, m.max_position_embeddings);
  p.kv_holds_a_sample =
      rollout::KvCache::blocks_for_bytes(shape, asked) >= (sample_tokens + ec.block_size - 1) / ec.block_size;
  if (!p.kv_holds_a_sample) return;
  const rollout::KvBudget budget = rollout::kv_budget_for(ec, shape, p.kv_base_bytes);
  const int N = u.N;
  const int64_t rank_prompts = (c.data.train_batch_size + N - 1) / N;
  const int64_t rank_samples = std::max(rank_prompts * rc.n, (in.data.val_prompts + N - 1) / N * rc.val_kwargs.n);
  const int64_t rank_blocks = engine_config(c, m, std::max<int64_t>(1, rank_samples)).kv_max_blocks;
  p.kv_blocks = std::min(budget.blocks, rank_blocks);
  for (MemoryTerm& t : p.terms)
    if (t.name == "KV cache") {
      t.rollout_first = t.rollout_later = p.kv_blocks * rollout::KvCache::bytes_per_block(shape);
      t.how = cat(p.kv_blocks, " of ", budget.blocks, " blocks of ", budget.block_size, " tokens, ",
                  ops::kv_dtype_name(budget.dtype),
                  ec.kv_memory_bytes > 0
                      ? std::string()
                      : cat("; ", rc.gpu_memory_utilization, " x ", human_bytes(p.kv_base_bytes), " left"));
    }
  add_up_phases(p);
}

}  // namespace

MemoryPlan plan_memory(const MemoryPlanInputs& in) {
  MemoryPlan p;
  p.in = in;
  const PlanSetup u = plan_setup(in);
  const ParameterSizes z = parameter_sizes(in, u, p);
  const WeightBytes w = weight_bytes(u, z);
  const TrainingBytes t = training_bytes(in, u, z);
  p.micro_batch_tokens = t.mb.tokens;
  p.micro_batch_longest = t.mb.longest;
  const RolloutBytes r = rollout_bytes(in, u, t, p);
  const int64_t comm = communication_bytes(in.config, u, z);
  add_terms(in, u, z, w, t, r, comm, p);
  add_up_phases(p);
  size_kv_cache(in, u, p);
  return p;
}

int64_t MemoryPlan::machine_bytes() const {
  // Ranks on one machine map the same checkpoint file while loading: the page cache holds it once.
  const int64_t R = in.ranks_per_machine;
  const int64_t later = std::max({rollout_first, training, rollout_later, save});
  return std::max(load * R - (R - 1) * mapped_file, later * R);
}

MemoryPlanInputs memory_plan_inputs(const Config& config, const ModelConfig& model, const Dataset& train,
                                    const Dataset& val, int ranks) {
  return memory_plan_inputs(config, model, data_lengths(train, val), ranks);
}

MemoryPlanInputs memory_plan_inputs(const Config& config, const ModelConfig& model, const DataLengths& data,
                                    int ranks) {
  MemoryPlanInputs in;
  in.config = config;
  in.model = model;
  in.data = data;
  in.ranks = std::max(1, ranks);
  in.lora_rank = config.actor_rollout_ref.model.lora_rank;
  const TrainerConfig& t = config.trainer;
  in.ranks_per_machine = t.n_gpus_per_node > 0 ? static_cast<int>(t.n_gpus_per_node)
                         : t.nnodes > 0         ? std::max(1, in.ranks / static_cast<int>(t.nnodes))
                                                : in.ranks;
  in.available_bytes = rollout::available_memory_bytes();
  in.fixed_bytes = measured_fixed_overhead_bytes();
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(config.actor_rollout_ref.model.path, ec))
    if (e.path().extension() == ".safetensors") in.checkpoint_bytes += static_cast<int64_t>(e.file_size(ec));
  return in;
}

std::string explain_memory_plan(const MemoryPlan& p) {
  std::string s = format_memory_plan(p);
  if (p.fits()) return s;
  const std::optional<PlanChange> ch = cheapest_fitting_change(p.in);
  if (!ch) return s + "  no change tried makes it fit (checkpointing, smaller micro-batches, ZeRO-3, LoRA, up to 1024 ranks)\n";
  s += cat("  cheapest change that fits: ", ch->description, " (peak ", human_bytes(ch->plan.peak), " per rank)");
  if (ch->ranks != p.in.ranks) s += cat("; mpirun -np ", ch->ranks);
  for (const std::string& k : ch->sets) s += cat(" --set ", k);
  return s + "\n";
}

std::optional<PlanChange> cheapest_fitting_change(const MemoryPlanInputs& in) {
  if (plan_memory(in).fits()) return std::nullopt;
  const ActorConfig& ac = in.config.actor_rollout_ref.actor;
  const bool dynamic = ac.use_dynamic_bsz;
  const int64_t longest = std::min(plan_memory(in).micro_batch_longest, in.model.max_position_embeddings);
  std::vector<PlanChange> tries;
  auto make = [&](std::string what, std::vector<std::string> sets, int ranks, auto&& apply) {
    PlanChange ch{std::move(what), std::move(sets), ranks, {}};
    MemoryPlanInputs x = in;
    x.ranks = ranks;
    if (ranks != in.ranks) x.ranks_per_machine = 1;
    apply(x);
    ch.plan = plan_memory(x);
    return ch;
  };
  const std::string ckpt = "actor_rollout_ref.model.enable_gradient_checkpointing=true";
  auto with_ckpt = [](MemoryPlanInputs& x) { x.config.actor_rollout_ref.model.enable_gradient_checkpointing = true; };
  if (!in.config.actor_rollout_ref.model.enable_gradient_checkpointing)
    tries.push_back(make("activation checkpointing", {ckpt}, in.ranks, with_ckpt));
  // Smaller micro-batches, down to one sequence.
  for (int64_t div = 2; div <= 64; div *= 2) {
    if (dynamic) {
      const int64_t budget = ac.ppo_max_token_len_per_gpu / div;
      if (budget < longest) break;
      const std::string key = cat("actor_rollout_ref.actor.ppo_max_token_len_per_gpu=", budget);
      tries.push_back(make(cat("a micro-batch token budget of ", budget, " with activation checkpointing"), {ckpt, key},
                           in.ranks, [&](MemoryPlanInputs& x) {
                             with_ckpt(x);
                             x.config.actor_rollout_ref.actor.ppo_max_token_len_per_gpu = budget;
                           }));
    } else {
      const int64_t size = ac.ppo_micro_batch_size_per_gpu / div;
      if (size < 1) break;
      const std::string key = cat("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=", size);
      tries.push_back(make(cat("micro-batches of ", size, " sequences with activation checkpointing"), {ckpt, key},
                           in.ranks, [&](MemoryPlanInputs& x) {
                             with_ckpt(x);
                             x.config.actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu = size;
                           }));
    }
  }
  // Several ranks of full fine-tuning: gradients reduced after every micro-batch and released bucket by
  // bucket (more reductions, no whole gradient buffer).
  const std::string per_micro = "actor_rollout_ref.actor.fsdp_config.reduce_per_micro_batch=true";
  const bool release = in.ranks > 1 && in.lora_rank == 0 && !ac.fsdp_config.reduce_per_micro_batch;
  auto with_release = [&](MemoryPlanInputs& x) {
    with_ckpt(x);
    if (release) x.config.actor_rollout_ref.actor.fsdp_config.reduce_per_micro_batch = true;
  };
  if (release)
    tries.push_back(
        make("gradients reduced every micro-batch, released bucket by bucket, with activation checkpointing",
             {ckpt, per_micro}, in.ranks, with_release));
  const std::string z3 = "actor_rollout_ref.actor.fsdp_config.reshard_after_forward=true";
  auto with_z3 = [&](MemoryPlanInputs& x) {
    with_ckpt(x);
    x.config.actor_rollout_ref.actor.fsdp_config.reshard_after_forward = true;
  };
  if (in.ranks > 1 && !ac.fsdp_config.reshard_after_forward)
    tries.push_back(make("ZeRO-3 with activation checkpointing", {ckpt, z3}, in.ranks, with_z3));
  // LoRA (the run's rank, or 32): ZeRO-3 off (the frozen base is whole on every rank), and on a Qwen3-VL
  // model the tower frozen (all-linear adapts the decoder's linears only).
  const int64_t lora_rank = in.lora_rank > 0 ? in.lora_rank : 32;
  std::vector<std::string> lora = {ckpt, cat("actor_rollout_ref.model.lora_rank=", lora_rank)};
  if (ac.fsdp_config.reshard_after_forward) lora.push_back("actor_rollout_ref.actor.fsdp_config.reshard_after_forward=false");
  if (in.model.has_vision() && !ac.freeze_vision_tower) lora.push_back("actor_rollout_ref.actor.freeze_vision_tower=true");
  MemoryPlanInputs lora_in = in;
  lora_in.config.actor_rollout_ref.actor.freeze_vision_tower = true;
  const int64_t lora_numel = in.lora_rank > 0 && in.lora_numel > 0 ? in.lora_numel : lora_adapter_numel(lora_in.config, in.model, lora_rank);
  auto with_lora = [&](MemoryPlanInputs& x) {
    with_ckpt(x);
    x.config.actor_rollout_ref.actor.fsdp_config.reshard_after_forward = false;
    if (in.model.has_vision()) x.config.actor_rollout_ref.actor.freeze_vision_tower = true;
    x.lora_rank = lora_rank;
    x.lora_numel = lora_numel;
  };
  const std::string lora_what = cat("LoRA (rank ", lora_rank, ") with activation checkpointing");
  if (in.lora_rank == 0) tries.push_back(make(lora_what, lora, in.ranks, with_lora));
  for (int ranks = std::max(2, in.ranks * 2); ranks <= 1024; ranks *= 2)
    tries.push_back(make(cat(ranks, " ranks, one per machine, ZeRO-3 with activation checkpointing"), {ckpt, z3}, ranks, with_z3));
  for (int ranks = std::max(2, in.ranks * 2); ranks <= 1024; ranks *= 2)
    tries.push_back(make(cat(ranks, " ranks, one per machine, ", lora_what), lora, ranks, with_lora));
  for (PlanChange& t : tries)
    if (t.plan.fits()) return std::move(t);
  return std::nullopt;
}

std::string format_memory_plan(const MemoryPlan& p) {
  const MemoryPlanInputs& in = p.in;
  std::string s = cat("memory plan per rank: ", in.model.architecture, ", ", p.parameters, " parameters (",
                      p.trained_parameters, " trained), ", in.ranks, in.ranks == 1 ? " rank" : " ranks",
                      in.ranks > 1 ? (in.config.actor_rollout_ref.actor.fsdp_config.reshard_after_forward ? " ZeRO-3" : " ZeRO-2") : "",
                      ", ", in.config.mixed_precision.enabled ? "bf16" : "f32",
                      in.config.actor_rollout_ref.model.enable_gradient_checkpointing ? ", activation checkpointing" : "",
                      in.lora_rank > 0 ? cat(", LoRA rank ", in.lora_rank) : std::string(), "\n");
  s += cat("  longest prompt ", in.data.max_prompt_tokens, " tokens + ", in.config.data.max_response_length,
           " response tokens; largest micro-batch ", p.micro_batch_tokens, " tokens",
           in.data.max_prompt_patches > 0 ? cat("; pictures up to ", in.data.max_prompt_patches, " patches a prompt") : std::string(),
           "\n");
  char line[256];
  std::snprintf(line, sizeof line, "  %-21s %11s %11s %11s %11s %11s  %s\n", "part", "load", "rollout", "training",
                "rollout 2+", "save", "sized by");
  s += line;
  auto cell = [](int64_t b) { return b > 0 ? human_bytes(b) : std::string("-"); };
  for (const MemoryTerm& t : p.terms) {
    std::snprintf(line, sizeof line, "  %-21s %11s %11s %11s %11s %11s  %s\n", t.name.c_str(), cell(t.load).c_str(),
                  cell(t.rollout_first).c_str(), cell(t.training).c_str(), cell(t.rollout_later).c_str(),
                  cell(t.save).c_str(), t.how.c_str());
    s += line;
  }
  std::snprintf(line, sizeof line, "  %-21s %11s %11s %11s %11s %11s\n", "total", human_bytes(p.load).c_str(),
                human_bytes(p.rollout_first).c_str(), human_bytes(p.training).c_str(), human_bytes(p.rollout_later).c_str(),
                human_bytes(p.save).c_str());
  s += line;
  s += cat("  peak ", human_bytes(p.peak), " per rank (", p.peak_phase, ")");
  if (in.ranks_per_machine > 1) s += cat(" x ", in.ranks_per_machine, " ranks on this machine = ", human_bytes(p.machine_bytes()));
  s += cat(" of ", human_bytes(in.available_bytes), " available: ", p.fits() ? "fits" : "does NOT fit",
           p.kv_holds_a_sample ? "" : " (the KV budget holds no whole sample)", "\n");
  return s;
}

std::string memory_log_line(const MemoryPlan& p) {
  auto t = [&](const char* name) { return human_bytes(p.term(name)); };
  return cat("[memory] weights ", t("weights"), " | master ", t("master"), " | gradients ", t("gradients"),
             " | optimizer ", t("optimizer"), " | activations ",
             human_bytes(p.term("activations") + p.term("output layer") + p.term("reference activations")),
             " | vision ", human_bytes(p.term("vision activations") + p.term("vision rollout")), " | workspaces ",
             t("rollout workspaces"), " | KV ", t("KV cache"), " | comm ", t("communication"), " | fixed ", t("fixed"),
             " | rollout ", human_bytes(std::max(p.rollout_first, p.rollout_later)), " | training ", human_bytes(p.training),
             " | peak ", human_bytes(p.peak), " (", p.peak_phase, ") per rank, ", p.fits() ? "fits " : "exceeds ",
             human_bytes(p.in.available_bytes), " available");
}

}  // namespace grpo
