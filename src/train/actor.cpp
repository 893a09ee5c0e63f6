// The actor's micro-batched, data-parallel updates and log-prob passes (see actor.h).
#include "core/clock.h"
#include "train/actor.h"

#include <chrono>
#include <cmath>
#include <cstring>

#include "core/profiler.h"
#include "train/balance.h"

namespace grpo::train {

namespace {

// Packs the micro-batch's sequences (each padded to the longest when `padded`) with their pictures;
// row_of[j] is the first row of sequence j in the batch.
PackedBatch build_batch(const std::vector<TrainSample>& samples, const MicroBatch& m, bool padded,
                        std::vector<int64_t>* row_of) {
  PackedBatch b;
  b.clear();
  int64_t longest = 0;
  for (int64_t i : m.sequences) longest = std::max<int64_t>(longest, samples[i].tokens.size());
  row_of->clear();
  for (int64_t i : m.sequences) {
    row_of->push_back(b.T());
    const auto& tok = samples[i].tokens;
    if (padded)
      b.add_padded_sequence(tok.data(), tok.size(), longest, tok.back());
    else
      b.add_sequence(tok);
    add_pictures(b, samples[i].pictures);
  }
  return b;
}

std::vector<int64_t> lengths_of(const std::vector<TrainSample>& samples) {
  std::vector<int64_t> len;
  for (const TrainSample& s : samples) {
    GRPO_CHECK(s.prompt_len >= 1 && s.response_len() >= 0, "[actor] sample needs a prompt of at least one token");
    len.push_back(static_cast<int64_t>(s.tokens.size()));
  }
  return len;
}

// A plan over a subset's lengths with its indices mapped back to the whole list.
MicroBatchPlan plan_subset(const std::vector<int64_t>& lengths, const std::vector<int64_t>& subset,
                           const MicroBatching& mb) {
  std::vector<int64_t> sub;
  for (int64_t i : subset) sub.push_back(lengths[i]);
  MicroBatchPlan p = plan_micro_batches(sub, mb);
  for (MicroBatch& m : p.micro_batches)
    for (int64_t& s : m.sequences) s = subset[s];
  return p;
}

// The gradient reducer cuts buckets as the text decoder's backward completes the layout (head first), and
// the vision tower's tensors lie after the head: a model with a tower trains in one process only.
comm::Communicator* single_rank_if_vision(comm::Communicator* comm, const ModelConfig& c) {
  GRPO_CHECK(!c.has_vision() || comm->size() == 1, "[actor] a model with a vision tower (Qwen3-VL) trains in one "
             "process only; distributed training (", comm->size(), " ranks) is not supported for it");
  return comm;
}

}  // namespace

comm::Partition parameter_partition(int64_t layout_numel, int ranks) {
  return comm::Partition::even(layout_numel, ranks, /*align=*/16);
}

MicroBatchPlan plan_micro_batches(const std::vector<int64_t>& lengths, const MicroBatching& mb) {
  return mb.dynamic ? pack_by_token_budget(lengths, mb.max_tokens, mb.pad)
                    : split_fixed(lengths, mb.micro_batch_size, mb.pad);
}

RankPlan plan_rank(const std::vector<int64_t>& lengths, const MicroBatching& mb, int rank, int ranks) {
  RankPlan rp;
  if (ranks == 1) {
    rp.plan = plan_micro_batches(lengths, mb);
    for (size_t i = 0; i < lengths.size(); ++i) rp.sequences.push_back(static_cast<int64_t>(i));
    return rp;
  }
  const std::vector<std::vector<int64_t>> shares = balanced_partitions(lengths, ranks);
  std::vector<MicroBatchPlan> plans;
  size_t count = 0;
  for (const auto& share : shares) {
    plans.push_back(plan_subset(lengths, share, mb));
    count = std::max(count, plans.back().micro_batches.size());
  }
  for (MicroBatchPlan& p : plans) split_to_count(p, lengths, static_cast<int64_t>(count), mb.pad);
  rp.plan = std::move(plans[rank]);
  rp.sequences = shares[rank];
  return rp;
}

Actor::Actor(ModelWeights& weights, const DecoderOptions& dopt, const MicroBatching& mb, const AdamWConfig& adam,
             comm::Communicator* comm, const DataParallel& dp, bool freeze_vision_tower)
    : w_(weights),
      dec_(weights, dopt),
      mb_(mb),
      adam_cfg_(adam),
      own_comm_(comm ? nullptr : std::make_unique<comm::LocalCommunicator>()),
      comm_(single_rank_if_vision(comm ? comm : own_comm_.get(), weights.config())),
      dp_(dp),
      part_(parameter_partition(weights.params().numel(), comm_->size())),
      // A frozen tower (one process): the moments cover the text part, a prefix of the layout.
      adam_(weights.config(), part_.begin(comm_->rank()), freeze_vision_tower ? -1 : part_.end(comm_->rank()),
            /*with_vision=*/!freeze_vision_tower),
      grads_(DType::F32) {
  declare_parameters(weights.config(), grads_, /*with_vision=*/!freeze_vision_tower);
  grads_.allocate();
  grad_tensors_ = resolve_tensors(weights.config(), grads_);
  sync_ = std::make_unique<ParamSync>(w_, *comm_, part_);
  if (comm_->size() > 1) {
    shard_grads_ = Buffer(static_cast<size_t>(part_.size(comm_->rank())) * sizeof(float));
    reducer_ = std::make_unique<GradReducer>(*comm_, part_, weights.config(), grads_, dp.reduce_wire, dp.bucket_elems,
                                             dp.overlap);
    if (dp.zero3) windows_ = std::make_unique<ParamWindows>(*sync_, weights.config(), w_.params());
    hooks_.reducer = reducer_.get();
    hooks_.windows = windows_.get();
    dec_.set_hooks(&hooks_);
  }
}

void Actor::enter_training() {
  if (!windows_ || resharded_) return;
  windows_->reshard();
  resharded_ = true;
}

void Actor::gather_for_rollout() {
  if (!windows_ || !resharded_) return;
  windows_->gather_all();
  resharded_ = false;
}

void Actor::share_logprobs(Decoder& dec, const std::vector<TrainSample>& samples,
                           std::vector<std::vector<float>>* logprobs, const MicroBatching* mb) {
  GRPO_PROFILE("response_logprobs");
  const bool own = &dec == &dec_;
  if (own) enter_training();
  const MicroBatching& batching = mb ? *mb : mb_;
  const RankPlan rp = plan_rank(lengths_of(samples), batching, comm_->rank(), comm_->size());
  logprobs->assign(samples.size(), {});
  std::vector<float> lp, ent;
  std::vector<int64_t> row_of;
  for (const MicroBatch& m : rp.plan.micro_batches) {
    if (m.sequences.empty()) {
      if (own && windows_) empty_pass(false);
      continue;
    }
    PackedBatch b = build_batch(samples, m, batching.pad, &row_of);
    lp.resize(b.T());
    ent.resize(b.T());
    dec.forward(b, lp.data(), ent.data());
    for (size_t j = 0; j < m.sequences.size(); ++j) {
      const TrainSample& s = samples[m.sequences[j]];
      const int64_t first = row_of[j] + s.prompt_len - 1;
      (*logprobs)[m.sequences[j]].assign(lp.begin() + first, lp.begin() + first + s.response_len());
    }
  }
}

void Actor::empty_pass(bool backward) {
  const int64_t L = w_.config().num_hidden_layers;
  for (int64_t l = 0; l < L; ++l) hooks_.forward_layer(l);
  if (!backward) return;
  hooks_.head_done();
  for (int64_t l = L - 1; l >= 0; --l) {
    if (dec_.options().checkpoint_activations) hooks_.forward_layer(l);
    hooks_.backward_layer(l);
    hooks_.layer_done(l);
  }
  hooks_.embedding_done();
}

// loss_fn(sample, row_first, n, logp, entropy, dlogp, dentropy, stats): per-response-token loss of one
// sample whose response log-probs are logp[0..n) etc.; writes the gradients and adds to stats.
template <typename LossFn>
UpdateStats Actor::run_update(const std::vector<TrainSample>& samples, LossFn&& loss_fn, float lr) {
  GRPO_PROFILE("actor_update");
  UpdateStats st;
  st.lr = lr;
  const bool dist = comm_->size() > 1;
  enter_training();
  const RankPlan rp = plan_rank(lengths_of(samples), mb_, comm_->rank(), comm_->size());
  st.micro_batches = rp.plan.micro_batches.size();
  grads_.zero();
  float* shard = dist ? static_cast<float*>(shard_grads_.data()) : grads_.flat().f32();
  std::vector<float> lp, ent, dlp, dent;
  std::vector<int64_t> row_of;
  double nonfinite = 0;
  const size_t count = rp.plan.micro_batches.size();
  for (size_t k = 0; k < count; ++k) {
    const MicroBatch& m = rp.plan.micro_batches[k];
    const bool reduce = dist && (dp_.reduce_per_micro_batch || k + 1 == count);
    // Reducing every micro-batch: the previous micro-batch's buckets read the gradients until waited for.
    auto start_reduction = [&] {
      if (!reduce) return;
      if (dp_.reduce_per_micro_batch && k > 0) {
        reducer_->wait();
        grads_.zero();
      }
      reducer_->arm(grads_.flat().f32(), shard, dp_.reduce_per_micro_batch && k > 0);
    };
    if (m.sequences.empty()) {  // this rank has fewer micro-batches' worth of sequences than another
      start_reduction();
      if (windows_) empty_pass(true);  // the layer gathers (and buckets) in the other ranks' order
      if (reduce) reducer_->launch_rest();
      continue;
    }
    PackedBatch b = build_batch(samples, m, mb_.pad, &row_of);
    const int64_t T = b.T();
    st.tokens += T;
    st.useful_tokens += m.real_tokens;
    lp.resize(T);
    ent.resize(T);
    dec_.forward(b, lp.data(), ent.data());
    dlp.assign(T, 0.0f);
    dent.assign(T, 0.0f);
    ops::PolicyLossStats ls;
    for (size_t j = 0; j < m.sequences.size(); ++j) {
      const TrainSample& s = samples[m.sequences[j]];
      const int64_t first = row_of[j] + s.prompt_len - 1, n = s.response_len();
      if (n == 0) continue;
      loss_fn(m.sequences[j], lp.data() + first, ent.data() + first, dlp.data() + first, dent.data() + first, n, ls);
    }
    if (!std::isfinite(ls.loss)) nonfinite += 1;
    st.loss += ls.loss;
    st.pg_loss += ls.pg_loss;
    st.kl += ls.kl;
    st.entropy += ls.entropy;
    st.pg_clipfrac += ls.clipped;
    st.ppo_kl += ls.ppo_kl;
    st.response_tokens += static_cast<int64_t>(ls.tokens);
    start_reduction();
    dec_.backward(dlp.data(), dent.data(), grad_tensors_);  // an armed reducer starts buckets from the hooks
    if (reduce) reducer_->launch_rest();
  }
  double sum_sq = 0;
  if (dist) {
    reducer_->wait();
    // Every statistic (and the skip decision) over all ranks.
    double g[] = {st.loss, st.pg_loss, st.kl, st.entropy, st.pg_clipfrac, st.ppo_kl,
                  static_cast<double>(st.response_tokens), static_cast<double>(st.tokens), nonfinite,
                  ops::sum_squares(shard, part_.size(comm_->rank())), static_cast<double>(st.useful_tokens)};
    comm_->all_reduce_sum(g, std::size(g));
    st.loss = g[0], st.pg_loss = g[1], st.kl = g[2], st.entropy = g[3], st.pg_clipfrac = g[4], st.ppo_kl = g[5];
    st.response_tokens = static_cast<int64_t>(g[6]);
    st.tokens = static_cast<int64_t>(g[7]);
    nonfinite = g[8];
    sum_sq = g[9];
    st.useful_tokens = static_cast<int64_t>(g[10]);
  } else {
    sum_sq = ops::sum_squares(shard, grads_.numel());
  }
  st.packing_efficiency = st.tokens > 0 ? static_cast<double>(st.useful_tokens) / static_cast<double>(st.tokens) : 1.0;
  const double ntok = std::max<int64_t>(1, st.response_tokens);
  st.pg_clipfrac /= ntok;
  st.ppo_kl /= ntok;
  if (nonfinite > 0) {
    st.skipped = true;
    return st;
  }
  StepReport r = adam_.step_shard(w_.params().flat().f32(), shard, std::sqrt(sum_sq), adam_cfg_, lr);
  st.grad_norm = r.grad_norm;
  st.skipped = r.skipped;
  if (!r.skipped && (dist || w_.has_bf16())) {
    auto t0 = std::chrono::steady_clock::now();
    if (windows_)  // ZeRO-3: the root stays whole; layers are gathered when next read
      windows_->after_step();
    else
      sync_->run();
    st.update_weights_s = seconds_since(t0);
  }
  return st;
}

UpdateStats Actor::update_policy(const std::vector<TrainSample>& samples, const ops::PolicyLossConfig& loss,
                                 LossAggMode agg, float loss_scale_factor, float tis_cap, float lr) {
  std::vector<int64_t> resp;
  for (const TrainSample& s : samples) resp.push_back(s.loss_masked ? 0 : s.response_len());
  const std::vector<float> seq_w = sequence_loss_weights(resp, agg, loss_scale_factor);
  std::vector<float> w, adv, tis, ones, old;
  auto fn = [&](int64_t i, const float* lp, const float* ent, float* dlp, float* dent, int64_t n,
                ops::PolicyLossStats& ls) {
    const TrainSample& s = samples[i];
    w.assign(n, seq_w[i]);
    adv.assign(n, s.advantage);
    const float* old_lp = s.old_logprobs.empty() ? lp : s.old_logprobs.data();
    GRPO_CHECK(s.old_logprobs.empty() || static_cast<int64_t>(s.old_logprobs.size()) == n,
               "[actor] sample ", i, ": old_logprobs has ", s.old_logprobs.size(), " entries, expected ", n);
    GRPO_CHECK(loss.kl_coef == 0 || static_cast<int64_t>(s.ref_logprobs.size()) == n, "[actor] sample ", i,
               ": ref_logprobs missing while the KL coefficient is non-zero");
    const float* tis_w = nullptr;
    if (tis_cap > 0) {
      GRPO_CHECK(static_cast<int64_t>(s.rollout_logprobs.size()) == n, "[actor] sample ", i,
                 ": rollout_logprobs needed for truncated importance sampling");
      tis.resize(n);
      truncated_importance_weights(tis.data(), old_lp, s.rollout_logprobs.data(), n, tis_cap);
      tis_w = tis.data();
    }
    // With old == current (one epoch, one mini-batch), copy so the kernel sees a detached value.
    if (s.old_logprobs.empty()) {
      old.assign(lp, lp + n);
      old_lp = old.data();
    }
    ops::policy_loss(dlp, dent, &ls, lp, old_lp, s.ref_logprobs.empty() ? nullptr : s.ref_logprobs.data(),
                     adv.data(), ent, w.data(), tis_w, n, loss);
  };
  return run_update(samples, fn, lr);
}

UpdateStats Actor::update_sft(const std::vector<TrainSample>& samples, float lr) {
  int64_t total = 0;
  for (const TrainSample& s : samples) total += s.loss_masked ? 0 : s.response_len();
  const float wt = total > 0 ? 1.0f / total : 0.0f;
  auto fn = [&](int64_t i, const float* lp, const float* ent, float* dlp, float* dent, int64_t n,
                ops::PolicyLossStats& ls) {
    const float wi = samples[i].loss_masked ? 0.0f : wt;
    for (int64_t t = 0; t < n; ++t) {
      dlp[t] = -wi;
      ls.loss -= wi * lp[t];
      ls.entropy += wi * ent[t];
    }
    ls.tokens += samples[i].loss_masked ? 0 : n;
  };
  return run_update(samples, fn, lr);
}

void Actor::gather_weights() {
  gather_for_rollout();
  sync_->gather_masters(0);
}

Actor::FullMoments Actor::gather_for_checkpoint() {
  if (comm_->size() == 1) return {adam_.m(), adam_.v(), adam_.end()};
  gather_weights();
  const bool root = comm_->rank() == 0;
  if (root && full_m_.size() == 0) {
    full_m_ = Buffer(static_cast<size_t>(part_.total()) * sizeof(float));
    full_v_ = Buffer(static_cast<size_t>(part_.total()) * sizeof(float));
  }
  std::vector<int64_t> off(part_.offsets.size());
  for (size_t r = 0; r < off.size(); ++r) off[r] = part_.offsets[r] * 4;
  comm::Request a = comm_->gather(adam_.m(), full_m_.data(), off, 0);
  comm::Request b = comm_->gather(adam_.v(), full_v_.data(), off, 0);
  comm_->wait(a);
  comm_->wait(b);
  if (!root) return {};
  return {static_cast<const float*>(full_m_.data()), static_cast<const float*>(full_v_.data()), part_.total()};
}

void Actor::load_moments(const float* m_full, const float* v_full, int64_t optimizer_steps) {
  const int64_t lo = adam_.begin(), n = adam_.end() - adam_.begin();
  if (n > 0) {
    std::memcpy(adam_.m(), m_full + lo, static_cast<size_t>(n) * sizeof(float));
    std::memcpy(adam_.v(), v_full + lo, static_cast<size_t>(n) * sizeof(float));
  }
  adam_.set_steps(optimizer_steps);
}

}  // namespace grpo::train
