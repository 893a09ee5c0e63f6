// The actor's micro-batched updates and log-prob passes (see actor.h).
#include "train/actor.h"

#include <chrono>
#include <cmath>

#include "core/profiler.h"

namespace grpo::train {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

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

}  // namespace

MicroBatchPlan plan_micro_batches(const std::vector<int64_t>& lengths, const MicroBatching& mb) {
  return mb.dynamic ? pack_by_token_budget(lengths, mb.max_tokens, mb.pad)
                    : split_fixed(lengths, mb.micro_batch_size, mb.pad);
}

void response_logprobs(Decoder& dec, const std::vector<TrainSample>& samples, const MicroBatching& mb,
                       std::vector<std::vector<float>>* logprobs, std::vector<std::vector<float>>* entropy) {
  GRPO_PROFILE("response_logprobs");
  MicroBatchPlan plan = plan_micro_batches(lengths_of(samples), mb);
  logprobs->assign(samples.size(), {});
  if (entropy) entropy->assign(samples.size(), {});
  std::vector<float> lp, ent;
  std::vector<int64_t> row_of;
  for (const MicroBatch& m : plan.micro_batches) {
    PackedBatch b = build_batch(samples, m, mb.pad, &row_of);
    lp.resize(b.T());
    ent.resize(b.T());
    dec.forward(b, lp.data(), ent.data());
    for (size_t j = 0; j < m.sequences.size(); ++j) {
      const TrainSample& s = samples[m.sequences[j]];
      const int64_t first = row_of[j] + s.prompt_len - 1;
      (*logprobs)[m.sequences[j]].assign(lp.begin() + first, lp.begin() + first + s.response_len());
      if (entropy) (*entropy)[m.sequences[j]].assign(ent.begin() + first, ent.begin() + first + s.response_len());
    }
  }
}

Actor::Actor(ModelWeights& weights, const DecoderOptions& dopt, const MicroBatching& mb, const AdamWConfig& adam,
             bool freeze_vision_tower)
    : w_(weights),
      dec_(weights, dopt),
      mb_(mb),
      adam_cfg_(adam),
      adam_(weights.config(), !freeze_vision_tower),
      grads_(DType::F32) {
  declare_parameters(weights.config(), grads_, !freeze_vision_tower);
  grads_.allocate();
  grad_tensors_ = resolve_tensors(weights.config(), grads_);
}

// loss_fn(sample, row_first, n, logp, entropy, dlogp, dentropy, stats): per-response-token loss of one
// sample whose response log-probs are logp[0..n) etc.; writes the gradients and adds to stats.
template <typename LossFn>
UpdateStats Actor::run_update(const std::vector<TrainSample>& samples, LossFn&& loss_fn, float lr) {
  GRPO_PROFILE("actor_update");
  UpdateStats st;
  st.lr = lr;
  MicroBatchPlan plan = plan_micro_batches(lengths_of(samples), mb_);
  st.micro_batches = plan.micro_batches.size();
  grads_.zero();
  std::vector<float> lp, ent, dlp, dent;
  std::vector<int64_t> row_of;
  bool finite = true;
  for (const MicroBatch& m : plan.micro_batches) {
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
    if (!std::isfinite(ls.loss)) finite = false;
    st.loss += ls.loss;
    st.pg_loss += ls.pg_loss;
    st.kl += ls.kl;
    st.entropy += ls.entropy;
    st.pg_clipfrac += ls.clipped;
    st.ppo_kl += ls.ppo_kl;
    st.response_tokens += static_cast<int64_t>(ls.tokens);
    dec_.backward(dlp.data(), dent.data(), grad_tensors_);
  }
  st.packing_efficiency = st.tokens > 0 ? static_cast<double>(st.useful_tokens) / static_cast<double>(st.tokens) : 1.0;
  const double ntok = std::max<int64_t>(1, st.response_tokens);
  st.pg_clipfrac /= ntok;
  st.ppo_kl /= ntok;
  if (!finite) {
    st.skipped = true;
    return st;
  }
  StepReport r = adam_.step(w_.params(), grads_, adam_cfg_, lr);
  st.grad_norm = r.grad_norm;
  st.skipped = r.skipped;
  if (!r.skipped && w_.has_bf16()) {
    auto t0 = std::chrono::steady_clock::now();
    w_.refresh_bf16();
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

}  // namespace grpo::train
