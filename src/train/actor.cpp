// The actor's micro-batched, data-parallel updates and log-prob passes (see actor.h).
#include "core/clock.h"
#include "train/actor.h"

#include <algorithm>
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

std::vector<int> home_ranks_of(const std::vector<TrainSample>& samples, int ranks) {
  std::vector<int> home;
  bool any = false;
  for (size_t i = 0; i < samples.size(); ++i) {
    const int h = samples[i].home_rank;
    GRPO_CHECK(h >= -1 && h < ranks, "[actor] sample ", i, " has home rank ", h, ", expected -1 or below ", ranks);
    any = any || h >= 0;
    home.push_back(h);
  }
  if (!any || ranks == 1) home.clear();
  return home;
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

// The optimizer's shard of the trained elements [0, trained): this rank's part of the partition, clipped
// (a frozen vision tower lies after the trained text prefix, inside the partition).
std::pair<int64_t, int64_t> trained_shard(const comm::Partition& part, int rank, const ModelConfig& c, bool with_vision) {
  Arena a(DType::F32);
  declare_parameters(c, a, with_vision);
  return {std::min(part.begin(rank), a.numel()), std::min(part.end(rank), a.numel())};
}

}  // namespace

comm::Partition parameter_partition(int64_t layout_numel, int ranks) {
  return comm::Partition::even(layout_numel, ranks, /*align=*/16);
}

MicroBatchPlan plan_micro_batches(const std::vector<int64_t>& lengths, const MicroBatching& mb) {
  return mb.dynamic ? pack_by_token_budget(lengths, mb.max_tokens, mb.pad)
                    : split_fixed(lengths, mb.micro_batch_size, mb.pad);
}

RankPlan plan_rank(const std::vector<int64_t>& lengths, const MicroBatching& mb, int rank, int ranks,
                   const std::vector<int>& home_ranks) {
  RankPlan rp;
  if (ranks == 1) {
    rp.plan = plan_micro_batches(lengths, mb);
    for (size_t i = 0; i < lengths.size(); ++i) rp.sequences.push_back(static_cast<int64_t>(i));
    return rp;
  }
  std::vector<std::vector<int64_t>> shares;
  if (home_ranks.empty()) {
    shares = balanced_partitions(lengths, ranks);
  } else {
    GRPO_CHECK(home_ranks.size() == lengths.size(), "[actor] ", home_ranks.size(), " home ranks for ",
               lengths.size(), " sequences");
    shares.resize(ranks);
    std::vector<int64_t> load(ranks, 0), free;
    for (size_t i = 0; i < lengths.size(); ++i) {
      if (home_ranks[i] < 0) {
        free.push_back(static_cast<int64_t>(i));
        continue;
      }
      shares[home_ranks[i]].push_back(static_cast<int64_t>(i));
      load[home_ranks[i]] += lengths[i];
    }
    std::stable_sort(free.begin(), free.end(), [&](int64_t a, int64_t b) { return lengths[a] > lengths[b]; });
    for (int64_t i : free) {
      const int r = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
      shares[r].push_back(i);
      load[r] += lengths[i];
    }
    for (auto& sh : shares) std::sort(sh.begin(), sh.end());
  }
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
             comm::Communicator* comm, const DataParallel& dp, bool freeze_vision_tower, LoraAdapters* lora)
    : w_(weights),
      lora_(lora),
      dec_(weights, dopt),
      mb_(mb),
      adam_cfg_(adam),
      own_comm_(comm ? nullptr : std::make_unique<comm::LocalCommunicator>()),
      comm_(comm ? comm : own_comm_.get()),
      dp_(dp),
      part_(parameter_partition(lora ? lora->params().numel() : weights.params().numel(), comm_->size())),
      // A frozen tower: the moments cover the text part, a prefix of the layout.
      adam_(lora ? AdamW(lora->params().numel(), part_.begin(comm_->rank()), part_.end(comm_->rank()))
                 : AdamW(weights.config(), trained_shard(part_, comm_->rank(), weights.config(), !freeze_vision_tower).first,
                         trained_shard(part_, comm_->rank(), weights.config(), !freeze_vision_tower).second,
                         /*with_vision=*/!freeze_vision_tower)),
      grads_(DType::F32) {
  if (lora_) {  // ZeRO-3 (dp.zero3) too: the frozen base stays whole on every rank (actor.h says why)
    dec_.set_lora(lora_);
    lora_->declare(grads_);
    grads_.allocate();
    grads_.zero();
    lora_grad_tensors_ = lora_->resolve(grads_);
    if (comm_->size() > 1) shard_grads_ = Buffer(static_cast<size_t>(part_.size(comm_->rank())) * sizeof(float));
    return;
  }
  declare_parameters(weights.config(), grads_, /*with_vision=*/!freeze_vision_tower);
  grads_.allocate();
  grad_tensors_ = resolve_tensors(weights.config(), grads_);
  sync_ = std::make_unique<ParamSync>(w_, *comm_, part_);
  if (comm_->size() > 1) {
    // A frozen tower's part of the shard is never reduced into: zero, out of the gradient norm.
    shard_grads_ = Buffer(static_cast<size_t>(part_.size(comm_->rank())) * sizeof(float));
    std::memset(shard_grads_.data(), 0, shard_grads_.size());
    reducer_ = std::make_unique<GradReducer>(*comm_, part_, weights.config(), grads_, dp.reduce_wire, dp.bucket_elems,
                                             dp.overlap);
    if (dp.zero3) {
      windows_ = std::make_unique<ParamWindows>(*sync_, weights.config(), w_.params(),
                                                /*tower_backward=*/!freeze_vision_tower);
      windows_->drop_stale_masters();  // (bf16 mode; the rollout reads the whole bf16 shadow)
    }
    // Reducing every micro-batch while the backward runs: each bucket's gradients are released once reduced,
    // so the whole layout's gradients are never resident at once.
    release_grads_ = dp.reduce_per_micro_batch && dp.overlap;
    if (release_grads_) reducer_->release_into(&grads_);
    hooks_.reducer = reducer_.get();
    hooks_.windows = windows_.get();
    dec_.set_hooks(&hooks_);
  }
}

void Actor::zero_grads() {
  if (release_grads_)
    grads_.zero_and_release(0, grads_.numel());
  else
    grads_.zero();
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

std::vector<int64_t> Actor::share(const std::vector<TrainSample>& samples) const {
  return plan_rank(lengths_of(samples), mb_, comm_->rank(), comm_->size(), home_ranks_of(samples, comm_->size()))
      .sequences;
}

void Actor::share_logprobs(Decoder& dec, const std::vector<TrainSample>& samples,
                           std::vector<std::vector<float>>* logprobs, const MicroBatching* mb) {
  GRPO_PROFILE("response_logprobs");
  const bool own = &dec == &dec_;
  if (own) enter_training();
  const MicroBatching& batching = mb ? *mb : mb_;
  const RankPlan rp = plan_rank(lengths_of(samples), batching, comm_->rank(), comm_->size(),
                                home_ranks_of(samples, comm_->size()));
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
  const ModelConfig& c = w_.config();
  const int64_t L = c.num_hidden_layers;
  const bool ckpt = dec_.options().checkpoint_activations;
  if (c.has_vision()) vision_hook_pass(hooks_, c.vision.depth, /*backward=*/false, ckpt);
  for (int64_t l = 0; l < L; ++l) hooks_.forward_layer(l);
  if (!backward) return;
  hooks_.head_done();
  for (int64_t l = L - 1; l >= 0; --l) {
    if (ckpt) hooks_.forward_layer(l);
    hooks_.backward_layer(l);
    hooks_.layer_done(l);
  }
  if (c.has_vision() && grad_tensors_.vision.patch_w) vision_hook_pass(hooks_, c.vision.depth, /*backward=*/true, ckpt);
  hooks_.embedding_done();
}

// loss_fn(spans, logp, entropy, dlogp, dentropy, stats): the loss of one micro-batch whose per-row
// log-probs are logp[0..T) etc., its sequences' responses at `spans`; writes the gradients of the response
// rows (the others stay 0) and adds to stats.
template <typename LossFn>
UpdateStats Actor::run_update(const std::vector<TrainSample>& samples, LossFn&& loss_fn, float lr) {
  GRPO_PROFILE("actor_update");
  UpdateStats st;
  st.lr = lr;
  const bool dist = comm_->size() > 1;
  enter_training();
  const RankPlan rp = plan_rank(lengths_of(samples), mb_, comm_->rank(), comm_->size(),
                                home_ranks_of(samples, comm_->size()));
  st.micro_batches = rp.plan.micro_batches.size();
  zero_grads();
  float* shard = dist ? static_cast<float*>(shard_grads_.data()) : grads_.flat().f32();
  std::vector<float> lp, ent, dlp, dent;
  std::vector<int64_t> row_of;
  double nonfinite = 0;
  const size_t count = rp.plan.micro_batches.size();
  for (size_t k = 0; k < count; ++k) {
    const MicroBatch& m = rp.plan.micro_batches[k];
    const bool reduce = dist && !lora_ && (dp_.reduce_per_micro_batch || k + 1 == count);
    // Reducing every micro-batch: the previous micro-batch's buckets read the gradients until waited for.
    auto start_reduction = [&] {
      if (!reduce) return;
      if (dp_.reduce_per_micro_batch && k > 0) {
        reducer_->wait();
        if (!release_grads_) grads_.zero();  // (released buckets read zero already)
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
    // The micro-batch's response tokens: sequence j's log-probs start at row_of[j] + prompt_len - 1.
    std::vector<ResponseSpan> spans;
    for (size_t j = 0; j < m.sequences.size(); ++j) {
      const TrainSample& s = samples[m.sequences[j]];
      spans.push_back({m.sequences[j], row_of[j] + s.prompt_len - 1, s.response_len()});
    }
    PolicyStats ls;
    loss_fn(spans, lp.data(), ent.data(), dlp.data(), dent.data(), ls);
    if (!std::isfinite(ls.loss)) nonfinite += 1;
    st.loss += ls.loss;
    st.pg_loss += ls.pg_loss;
    st.kl += ls.kl;
    st.entropy += ls.entropy;
    st.pg_clipfrac += ls.clipfrac;
    st.pg_clipfrac_lower += ls.clipfrac_lower;
    st.ppo_kl += ls.ppo_kl;
    st.response_tokens += static_cast<int64_t>(ls.tokens);
    start_reduction();
    if (lora_)
      dec_.backward(dlp.data(), dent.data(), nullptr, &lora_grad_tensors_);
    else
      dec_.backward(dlp.data(), dent.data(), grad_tensors_);  // an armed reducer starts buckets from the hooks
    if (reduce) reducer_->launch_rest();
  }
  const double sum_sq = reduce_update(st, shard, nonfinite);
  // Reduced into this rank's shard: the whole layout's gradient pages go back to the system until the next
  // update writes them (they are not held through the rollout and the save).
  if (dist && !lora_) grads_.discard(0, grads_.numel());
  st.packing_efficiency = st.tokens > 0 ? static_cast<double>(st.useful_tokens) / static_cast<double>(st.tokens) : 1.0;
  const double ntok = std::max<int64_t>(1, st.response_tokens);
  st.pg_clipfrac /= ntok;
  st.pg_clipfrac_lower /= ntok;
  st.ppo_kl /= ntok;
  if (nonfinite > 0) {
    st.skipped = true;
    return st;
  }
  step_and_sync(st, shard, sum_sq, lr);
  return st;
}

double Actor::reduce_update(UpdateStats& st, float* shard, double& nonfinite) {
  const bool dist = comm_->size() > 1;
  double sum_sq = 0;
  if (dist) {
    if (lora_) {  // the adapters' gradients are small: one reduction after the last micro-batch
      comm::Request r = comm_->reduce_scatter(grads_.flat().f32(), 0, grads_.numel(), part_, shard, dp_.reduce_wire,
                                              /*accumulate=*/false);
      comm_->wait(r);
    } else {
      reducer_->wait();
    }
    // Every statistic (and the skip decision) over all ranks.
    double g[] = {st.loss, st.pg_loss, st.kl, st.entropy, st.pg_clipfrac, st.ppo_kl,
                  static_cast<double>(st.response_tokens), static_cast<double>(st.tokens), nonfinite,
                  ops::sum_squares(shard, part_.size(comm_->rank())), static_cast<double>(st.useful_tokens),
                  st.pg_clipfrac_lower};
    comm_->all_reduce_sum(g, std::size(g));
    st.loss = g[0], st.pg_loss = g[1], st.kl = g[2], st.entropy = g[3], st.pg_clipfrac = g[4], st.ppo_kl = g[5];
    st.response_tokens = static_cast<int64_t>(g[6]);
    st.tokens = static_cast<int64_t>(g[7]);
    nonfinite = g[8];
    sum_sq = g[9];
    st.useful_tokens = static_cast<int64_t>(g[10]);
    st.pg_clipfrac_lower = g[11];
  } else {
    sum_sq = ops::sum_squares(shard, grads_.numel());
  }
  return sum_sq;
}

void Actor::step_and_sync(UpdateStats& st, float* shard, double sum_sq, float lr) {
  const bool dist = comm_->size() > 1;
  float* trained = lora_ ? lora_->params().flat().f32() : w_.params().flat().f32();
  StepReport r = adam_.step_shard(trained, shard, std::sqrt(sum_sq), adam_cfg_, lr);
  st.grad_norm = r.grad_norm;
  st.skipped = r.skipped;
  if (!r.skipped && lora_ && dist) {  // every rank's updated adapter shard to every rank (the rollout reads them)
    comm::WaitLabel label(comm_, "update_weights");
    auto t0 = std::chrono::steady_clock::now();
    std::vector<int64_t> off(part_.offsets.size());
    for (size_t k = 0; k < off.size(); ++k) off[k] = part_.offsets[k] * static_cast<int64_t>(sizeof(float));
    comm::Request g = comm_->all_gather(trained, off);
    comm_->wait(g);
    st.update_weights_s = seconds_since(t0);
  } else if (!r.skipped && !lora_ && (dist || w_.has_bf16())) {
    comm::WaitLabel label(comm_, "update_weights");  // its communication is told apart from the update's
    auto t0 = std::chrono::steady_clock::now();
    if (windows_) {  // ZeRO-3: the root stays whole; layers are gathered when next read
      windows_->after_step();
    } else if (dist && grads_.numel() < part_.total()) {  // a frozen tower has not changed: the text prefix
      comm::Request q = sync_->start(0, grads_.numel(), 0);
      sync_->finish(0, grads_.numel(), 0, q);
    } else {
      sync_->run();
    }
    st.update_weights_s = seconds_since(t0);
  }
}

UpdateStats Actor::update_policy(const std::vector<TrainSample>& samples, const PolicyObjectiveConfig& loss,
                                 LossAggMode agg, float loss_scale_factor, const RolloutCorrection& correction,
                                 float lr) {
  // Tokens in the loss: the response's, none for a masked sample, less those rollout_rs rejects (before the
  // weights: rejected tokens leave the aggregation's counts, as in verl).
  std::vector<std::vector<float>> keep(samples.size());
  std::vector<int64_t> resp;
  RolloutMismatch mm;
  mm.is_min = INFINITY;
  for (size_t i = 0; i < samples.size(); ++i) {
    const TrainSample& s = samples[i];
    const int64_t n = s.response_len();
    keep[i].assign(n, s.loss_masked ? 0.0f : 1.0f);
    if (!s.response_mask.empty()) {
      GRPO_CHECK(static_cast<int64_t>(s.response_mask.size()) == n, "[actor] sample ", i, ": response_mask has ",
                 s.response_mask.size(), " entries, expected ", n);
      for (int64_t t = 0; t < n; ++t) keep[i][t] *= s.response_mask[t] ? 1.0f : 0.0f;
    }
    if (!correction.rejection.empty() && !s.loss_masked) {
      GRPO_CHECK(static_cast<int64_t>(s.old_logprobs.size()) == n && static_cast<int64_t>(s.rollout_logprobs.size()) == n,
                 "[actor] sample ", i, ": rollout_rs needs its old and rollout log-probs");
      const std::vector<float> in_loss = keep[i];
      rollout_rejection_mask(keep[i].data(), s.old_logprobs.data(), s.rollout_logprobs.data(), in_loss.data(), n,
                             correction.rejection);
      mm.rs_tokens += static_cast<double>(n);
      for (float k : keep[i]) mm.rs_rejected += k == 0.0f;
    }
    int64_t count = 0;
    for (float k : keep[i]) count += k != 0.0f;
    resp.push_back(count);
  }
  const std::vector<float> pg_w = sequence_loss_weights(resp, effective_loss_agg_mode(loss.mode, agg), loss_scale_factor);
  const std::vector<float> seq_w = sequence_loss_weights(resp, agg, loss_scale_factor);
  // The micro-batch's responses gathered into contiguous arrays for the objective, and its gradients back.
  std::vector<int64_t> begin;
  std::vector<float> lp_c, ent_c, old_c, ref_c, adv_c, mask_c, is_c, pw_c, w_c, dlp_c, dent_c;
  auto fn = [&](const std::vector<ResponseSpan>& spans, const float* lp, const float* ent, float* dlp, float* dent,
                PolicyStats& ls) {
    begin.assign(1, 0);
    for (auto* v : {&lp_c, &ent_c, &old_c, &ref_c, &adv_c, &mask_c, &is_c, &pw_c, &w_c}) v->clear();
    for (const ResponseSpan& r : spans) {
      const TrainSample& s = samples[r.sample];
      const int64_t n = r.n;
      GRPO_CHECK(s.old_logprobs.empty() || static_cast<int64_t>(s.old_logprobs.size()) == n, "[actor] sample ",
                 r.sample, ": old_logprobs has ", s.old_logprobs.size(), " entries, expected ", n);
      GRPO_CHECK(loss.kl_coef == 0 || static_cast<int64_t>(s.ref_logprobs.size()) == n, "[actor] sample ", r.sample,
                 ": ref_logprobs missing while the KL coefficient is non-zero");
      GRPO_CHECK(s.token_advantages.empty() || static_cast<int64_t>(s.token_advantages.size()) == n, "[actor] sample ",
                 r.sample, ": token_advantages has ", s.token_advantages.size(), " entries, expected ", n);
      lp_c.insert(lp_c.end(), lp + r.first, lp + r.first + n);
      ent_c.insert(ent_c.end(), ent + r.first, ent + r.first + n);
      // With old == current (one epoch, one mini-batch), a detached copy of the current log-probs.
      if (s.old_logprobs.empty())
        old_c.insert(old_c.end(), lp + r.first, lp + r.first + n);
      else
        old_c.insert(old_c.end(), s.old_logprobs.begin(), s.old_logprobs.end());
      if (loss.kl_coef != 0) ref_c.insert(ref_c.end(), s.ref_logprobs.begin(), s.ref_logprobs.end());
      if (s.token_advantages.empty())
        adv_c.insert(adv_c.end(), n, s.advantage);
      else
        adv_c.insert(adv_c.end(), s.token_advantages.begin(), s.token_advantages.end());
      mask_c.insert(mask_c.end(), keep[r.sample].begin(), keep[r.sample].end());
      if (correction.level != RolloutIsLevel::Off) {
        GRPO_CHECK(static_cast<int64_t>(s.rollout_logprobs.size()) == n, "[actor] sample ", r.sample,
                   ": rollout_logprobs needed for the rollout importance weights");
        is_c.resize(is_c.size() + n);
        rollout_is_weights(is_c.data() + is_c.size() - n, old_c.data() + old_c.size() - n, s.rollout_logprobs.data(),
                           mask_c.data() + mask_c.size() - n, n, correction.level, correction.threshold);
      }
      if (static_cast<int64_t>(s.rollout_logprobs.size()) == n) {
        const size_t o = old_c.size() - n;
        for (int64_t t = 0; t < n; ++t) {
          if (mask_c[mask_c.size() - n + t] == 0.0f) continue;
          const double d = std::abs(std::exp(static_cast<double>(s.rollout_logprobs[t])) - std::exp(static_cast<double>(old_c[o + t])));
          mm.tokens += 1, mm.diff_sum += d, mm.diff_sq += d * d, mm.diff_max = std::max(mm.diff_max, d);
          if (correction.level == RolloutIsLevel::Off) continue;
          const double w = is_c[o + t];
          mm.is_sum += w, mm.is_min = std::min(mm.is_min, w), mm.is_max = std::max(mm.is_max, w);
        }
      }
      pw_c.push_back(pg_w[r.sample]);
      w_c.push_back(seq_w[r.sample]);
      begin.push_back(begin.back() + n);
    }
    dlp_c.resize(lp_c.size());
    dent_c.resize(lp_c.size());
    PolicyBatch b;
    b.begin = begin;
    b.logp = lp_c.data();
    b.old_logp = old_c.data();
    b.adv = adv_c.data();
    b.mask = mask_c.data();
    b.pg_seq_weight = pw_c.data();
    b.seq_weight = w_c.data();
    b.is_weight = is_c.empty() ? nullptr : is_c.data();
    b.ref_logp = ref_c.empty() ? nullptr : ref_c.data();
    b.entropy = ent_c.data();
    policy_objective(loss, b, dlp_c.data(), dent_c.data(), &ls);
    for (size_t j = 0; j < spans.size(); ++j) {
      std::copy(dlp_c.begin() + begin[j], dlp_c.begin() + begin[j + 1], dlp + spans[j].first);
      std::copy(dent_c.begin() + begin[j], dent_c.begin() + begin[j + 1], dent + spans[j].first);
    }
  };
  UpdateStats st = run_update(samples, fn, lr);
  if (comm_->size() > 1) {  // sums over ranks; max and min through one slot per rank
    const int R = comm_->size(), me = comm_->rank();
    std::vector<double> g(3 + 3 * R, 0.0);
    g[0] = mm.tokens, g[1] = mm.diff_sum, g[2] = mm.diff_sq;
    // rs_tokens / rs_rejected: every rank saw the whole mini-batch (the same counts), nothing to add
    g[3 + me] = mm.diff_max, g[3 + R + me] = mm.is_max, g[3 + 2 * R + me] = -mm.is_min;
    comm_->all_reduce_sum(g.data(), static_cast<int64_t>(g.size()));
    const double is_sum = comm_->all_reduce_sum(mm.is_sum);
    mm.tokens = g[0], mm.diff_sum = g[1], mm.diff_sq = g[2], mm.is_sum = is_sum;
    mm.diff_max = *std::max_element(g.begin() + 3, g.begin() + 3 + R);
    mm.is_max = *std::max_element(g.begin() + 3 + R, g.begin() + 3 + 2 * R);
    mm.is_min = -*std::max_element(g.begin() + 3 + 2 * R, g.end());
  }
  if (!std::isfinite(mm.is_min)) mm.is_min = 0;
  st.rollout = mm;
  return st;
}

int64_t TrainSample::model_tokens() const {
  if (response_mask.empty()) return response_len();
  int64_t n = 0;
  for (const uint8_t m : response_mask) n += m != 0;
  return n;
}

UpdateStats Actor::update_sft(const std::vector<TrainSample>& samples, float lr) {
  int64_t total = 0;
  for (const TrainSample& s : samples) total += s.loss_masked ? 0 : s.model_tokens();
  const float wt = total > 0 ? 1.0f / total : 0.0f;
  auto fn = [&](const std::vector<ResponseSpan>& spans, const float* lp, const float* ent, float* dlp, float*,
                PolicyStats& ls) {
    for (const ResponseSpan& r : spans) {
      const TrainSample& s = samples[r.sample];
      for (int64_t t = r.first; t < r.first + r.n; ++t) {
        const bool in = !s.loss_masked && (s.response_mask.empty() || s.response_mask[t - r.first]);
        const float wi = in ? wt : 0.0f;
        dlp[t] = -wi;
        ls.loss -= wi * lp[t];
        ls.entropy += wi * ent[t];
      }
      ls.tokens += s.loss_masked ? 0 : s.model_tokens();
    }
  };
  return run_update(samples, fn, lr);
}

void Actor::with_whole_weights(const std::function<void()>& write) {
  // LoRA: the base is frozen and the adapters are whole on every rank; f32 mode: the weights are the masters.
  if (!sync_ || comm_->size() == 1 || !w_.has_bf16()) {
    gather_for_rollout();
    write();
    return;
  }
  const bool root = comm_->rank() == 0;
  Arena& shadow = *w_.bf16_arena();
  if (root) shadow.discard(0, shadow.numel());
  sync_->gather_masters(0);
  write();
  if (!root) return;
  w_.refresh_bf16();
  sync_->drop_stale_masters(0, part_.total());  // the other ranks' GEMM masters, gathered for the save
}

Actor::FullMoments Actor::gather_for_checkpoint() {
  if (comm_->size() == 1) return {adam_.m(), adam_.v(), adam_.end()};
  const bool root = comm_->rank() == 0;
  const int64_t n = grads_.numel();  // the trained elements (a frozen tower's lie past them)
  if (root && full_m_.size() == 0) {
    full_m_ = Buffer(static_cast<size_t>(n) * sizeof(float));
    full_v_ = Buffer(static_cast<size_t>(n) * sizeof(float));
  }
  std::vector<int64_t> off(part_.offsets.size());
  for (size_t r = 0; r < off.size(); ++r) off[r] = std::min(part_.offsets[r], n) * 4;
  comm::Request a = comm_->gather(adam_.m(), full_m_.data(), off, 0);
  comm::Request b = comm_->gather(adam_.v(), full_v_.data(), off, 0);
  comm_->wait(a);
  comm_->wait(b);
  if (!root) return {};
  return {static_cast<const float*>(full_m_.data()), static_cast<const float*>(full_v_.data()), n};
}

Actor::MomentRange Actor::moment_range() const {
  const int64_t n = grads_.numel();  // the trained elements (a frozen tower's lie past them)
  const int64_t lo = std::min(adam_.begin(), n), hi = std::min(adam_.end(), n);
  return {lo, hi, adam_.m(), adam_.v()};
}

Actor::MasterRange Actor::master_range() const {
  GRPO_CHECK(!lora_, "[checkpoint] LoRA's base is frozen: it has no master shard to save");
  const int64_t lo = part_.begin(comm_->rank()), hi = part_.end(comm_->rank());
  return {lo, hi, w_.params().flat().f32() + lo};
}

void Actor::load_moment_range(const float* m, const float* v, int64_t optimizer_steps) {
  const MomentRange r = moment_range();
  if (r.hi > r.lo) {
    std::memcpy(adam_.m(), m, static_cast<size_t>(r.hi - r.lo) * sizeof(float));
    std::memcpy(adam_.v(), v, static_cast<size_t>(r.hi - r.lo) * sizeof(float));
  }
  adam_.set_steps(optimizer_steps);
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
