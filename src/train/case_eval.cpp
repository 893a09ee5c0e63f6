// Reference-case evaluation (see case_eval.h).
#include "train/case_eval.h"

#include <algorithm>
#include <cstring>

#include "kernels/ops.h"
#include "train/aggregation.h"
#include "train/policy_objective.h"

namespace grpo::train {

std::vector<int64_t> case_ints(const SafetensorsFile& f, const std::string& name) {
  const StTensor* t = f.find(name);
  GRPO_CHECK(t, "[case] ", f.path(), ": missing tensor \"", name, "\"");
  int64_t n = st_numel(t->shape);
  std::vector<int64_t> out(n);
  if (t->dtype == StDType::I64) {
    std::memcpy(out.data(), t->data, n * 8);
  } else if (t->dtype == StDType::I32) {
    for (int64_t i = 0; i < n; ++i) {
      int32_t v;
      std::memcpy(&v, t->data + 4 * i, 4);
      out[i] = v;
    }
  } else {
    fail("[case] ", f.path(), ": tensor \"", name, "\" has dtype ", st_dtype_name(t->dtype), ", expected I64 or I32");
  }
  return out;
}

std::vector<float> case_floats(const SafetensorsFile& f, const std::string& name) {
  const StTensor* t = f.find(name);
  GRPO_CHECK(t, "[case] ", f.path(), ": missing tensor \"", name, "\"");
  std::vector<float> out(st_numel(t->shape));
  tensor_to_f32(*t, out.data(), out.size(), f.path());
  return out;
}

namespace {

CaseTensor vec(std::vector<float> v) {
  CaseTensor t;
  t.shape = {static_cast<int64_t>(v.size())};
  t.data = std::move(v);
  return t;
}

float json_float(const nlohmann::json& j, const char* key, float dflt) {
  if (!j.contains(key)) return dflt;
  GRPO_CHECK(j[key].is_number(), "[case] grpo json: field \"", key, "\" must be a number");
  return j[key].get<float>();
}

CaseTensor matrix(const float* data, int64_t rows, int64_t cols) {
  CaseTensor t;
  t.shape = {rows, cols};
  t.data.assign(data, data + rows * cols);
  return t;
}

// Qwen3-VL: M-RoPE positions [3, T], rope_deltas [S], and with pictures the tower's intermediates under the
// reference's names (vision_pos_embeds, vision_block_input, image_embeds, deepstack_embeds.k).
void add_vision_outputs(const Decoder& dec, int64_t T, CaseOutputs* out) {
  const std::vector<int32_t>& pos3 = dec.mrope_positions();
  CaseTensor p;
  p.shape = {3, T};
  p.data.assign(pos3.begin(), pos3.end());
  (*out)["position_ids"] = std::move(p);
  CaseTensor d;
  d.shape = {static_cast<int64_t>(dec.rope_deltas().size())};
  d.data.assign(dec.rope_deltas().begin(), dec.rope_deltas().end());
  (*out)["rope_deltas"] = std::move(d);
  if (!dec.had_pictures()) return;
  const VisionTower& v = *dec.vision();
  const int64_t N = v.patch_rows(), Ng = v.merged_rows(), Dv = v.hidden_size(), O = v.out_size();
  (*out)["vision_pos_embeds"] = matrix(v.position_embeds(), N, Dv);
  (*out)["vision_block_input"] = matrix(v.block_input(), N, Dv);
  (*out)["image_embeds"] = matrix(v.image_embeds(), Ng, O);
  for (size_t k = 0; k < v.num_deepstack(); ++k)
    (*out)["deepstack_embeds." + std::to_string(k)] = matrix(v.deepstack(k), Ng, O);
}

}  // namespace

namespace {

// The case's packed sequences, and for Qwen3-VL the pictures of their <|image_pad|> runs.
PackedBatch case_batch(const ModelConfig& c, const SafetensorsFile& cf) {
  std::vector<int64_t> ids64 = case_ints(cf, "input_ids");
  std::vector<int64_t> seq_lens = case_ints(cf, "seq_lens");
  std::vector<int32_t> ids(ids64.begin(), ids64.end());
  PackedBatch batch = PackedBatch::from_packed(ids, seq_lens, c.vocab_size);
  if (cf.find("pixel_values")) {  // Qwen3-VL: the pictures of the case's <|image_pad|> runs
    GRPO_CHECK(c.has_vision(), "[case] ", cf.path(), ": the case has pixel_values but the model (", c.architecture,
               ") has no vision tower");
    const std::vector<int64_t> thw = case_ints(cf, "image_grid_thw");
    GRPO_CHECK(thw.size() % 3 == 0, "[case] ", cf.path(), ": image_grid_thw must be [pictures, 3]");
    std::vector<ImageGrid> grids;
    for (size_t i = 0; i < thw.size(); i += 3) grids.push_back({thw[i], thw[i + 1], thw[i + 2]});
    const std::vector<float> pixels = case_floats(cf, "pixel_values");
    batch.add_pictures(pixels.data(), static_cast<int64_t>(pixels.size()), grids);
    // The case lists the pictures in order of appearance: each sequence takes those its pads cover.
    size_t next = 0;
    for (int64_t s = 0; s < batch.S(); ++s) {
      int64_t pads = 0, count = 0;
      for (int64_t t = batch.cu_seqlens[s]; t < batch.cu_seqlens[s + 1]; ++t) pads += batch.ids[t] == c.image_token_id;
      for (; pads > 0 && next < grids.size(); ++next, ++count) pads -= grids[next].patches() / c.vision.merge_factor();
      GRPO_CHECK(pads == 0, "[case] ", cf.path(), ": the <|image_pad|> tokens of sequence ", s,
                 " do not match the pictures of image_grid_thw");
      batch.sequence_pictures[s] = static_cast<int32_t>(count);
    }
    GRPO_CHECK(next == grids.size(), "[case] ", cf.path(), ": image_grid_thw has ", grids.size(),
               " pictures, the sequences' pads cover ", next);
  }
  return batch;
}

// The forward's values at the targets: the positions with a next token inside their sequence, in order
// (the indexing of token_logprobs).
struct TargetValues {
  std::vector<int64_t> tgt;
  std::vector<float> lp, ent;  // log-probabilities and entropies at tgt
};

// The forward: logits, the tower's outputs, token_logprobs and entropy (at the targets when the case's
// entropy has one per target).
TargetValues add_forward_outputs(Decoder& dec, const PackedBatch& batch, const ModelConfig& c,
                                 const SafetensorsFile& cf, CaseOutputs& out) {
  const int64_t T = batch.T(), V = c.vocab_size;
  std::vector<float> logprob(T), entropy(T);
  dec.forward(batch, logprob.data(), entropy.data());

  CaseTensor logits;
  logits.shape = {T, V};
  logits.data.resize(T * V);
  dec.full_logits(logits.data.data());
  out["logits"] = std::move(logits);
  if (c.has_vision()) add_vision_outputs(dec, T, &out);

  TargetValues tv;
  std::vector<int64_t>& tgt = tv.tgt;
  for (int64_t t = 0; t < T; ++t)
    if (batch.targets[t] >= 0) tgt.push_back(t);
  const int64_t N = tgt.size();
  tv.lp.resize(N);
  tv.ent.resize(N);
  for (int64_t i = 0; i < N; ++i) {
    tv.lp[i] = logprob[tgt[i]];
    tv.ent[i] = entropy[tgt[i]];
  }
  out["token_logprobs"] = vec(tv.lp);
  const StTensor* ref_entropy = cf.find("entropy");
  bool entropy_at_targets = ref_entropy && st_numel(ref_entropy->shape) == N && N != T;
  out["entropy"] = vec(entropy_at_targets ? tv.ent : entropy);
  return tv;
}

// The gradients of the loss with respect to each position's log-probability and entropy ([T] each).
struct LossGradients {
  std::vector<float> dlogprob, dentropy;
};

// No GRPO settings: the mean negative log-likelihood of the targets.
void add_nll_loss(const TargetValues& tv, CaseOutputs& out, LossGradients& g) {
  const int64_t N = tv.tgt.size();
  double loss = 0;
  for (float v : tv.lp) loss -= v;
  loss /= std::max<int64_t>(N, 1);
  out["loss"] = vec({static_cast<float>(loss)});
  for (int64_t t : tv.tgt) g.dlogprob[t] = -1.0f / N;
}

// The policy objective's settings of a case's "grpo" object.
PolicyObjectiveConfig case_policy_config(const nlohmann::json& j) {
  PolicyObjectiveConfig pc;
  float clip = json_float(j, "clip_ratio", 0.2f);
  pc.clip_ratio_low = json_float(j, "clip_ratio_low", clip);
  pc.clip_ratio_high = json_float(j, "clip_ratio_high", clip);
  pc.clip_ratio_c = json_float(j, "clip_ratio_c", 3.0f);
  pc.kl_coef = json_float(j, "kl_loss_coef", 0.0f);
  pc.kl_type = parse_kl_penalty(j.value("kl_loss_type", "low_var_kl"));
  pc.entropy_coef = json_float(j, "entropy_coeff", 0.0f);
  return pc;
}

// GRPO: the policy objective's loss under each aggregation mode, and the gradients and clip fraction of the
// mode the case's gradients are for.
void add_grpo_losses(const nlohmann::json& j, const SafetensorsFile& cf, const PackedBatch& batch,
                     const TargetValues& tv, CaseOutputs& out, LossGradients& g) {
  const std::vector<int64_t>& tgt = tv.tgt;
  const int64_t N = tgt.size();
  std::vector<float> mask = case_floats(cf, "response_mask"), old_lp = case_floats(cf, "old_logprobs"),
                     ref_lp = case_floats(cf, "ref_logprobs"), adv_seq = case_floats(cf, "advantages");
  GRPO_CHECK(static_cast<int64_t>(mask.size()) == N && static_cast<int64_t>(old_lp.size()) == N &&
                 static_cast<int64_t>(ref_lp.size()) == N,
             "[case] ", cf.path(), ": response_mask/old_logprobs/ref_logprobs must have ", N, " entries");
  GRPO_CHECK(static_cast<int64_t>(adv_seq.size()) == batch.S(), "[case] ", cf.path(), ": advantages must have ",
             batch.S(), " entries (one per sequence)");
  const PolicyObjectiveConfig pc = case_policy_config(j);
  const float scale_factor = json_float(j, "loss_scale_factor", 1.0f);
  const LossAggMode grad_mode = parse_loss_agg_mode(j.value("gradients_for", "token-mean"));

  // Per-target-token advantages, per-sequence response counts and each sequence's first target token.
  std::vector<float> adv(N);
  std::vector<int64_t> resp(batch.S(), 0), begin(batch.S() + 1, 0);
  for (int64_t i = 0, s = 0; i < N; ++i) {
    while (tgt[i] >= batch.cu_seqlens[s + 1]) ++s;
    adv[i] = adv_seq[s];
    resp[s] += mask[i] != 0.0f;
    begin[s + 1] = i + 1;
  }
  for (int64_t s = 1; s <= batch.S(); ++s) begin[s] = std::max(begin[s], begin[s - 1]);
  const int64_t nonempty = std::count_if(resp.begin(), resp.end(), [](int64_t n) { return n > 0; });
  std::vector<float> dlp(N), dent(N);
  for (LossAggMode mode : {LossAggMode::TokenMean, LossAggMode::SeqMeanTokenSum, LossAggMode::SeqMeanTokenMean,
                           LossAggMode::SeqMeanTokenSumNorm}) {
    // These cases were made with verl before 1dda039, whose seq-mean-token-sum-norm divided the masked token
    // sum by loss_scale_factor alone; verl now (and training here) also divides by the number of sequences.
    const float legacy_scale = scale_factor / static_cast<float>(std::max<int64_t>(1, nonempty));
    const std::vector<float> sw =
        sequence_loss_weights(resp, mode, mode == LossAggMode::SeqMeanTokenSumNorm ? legacy_scale : scale_factor);
    PolicyBatch b;
    b.begin = begin;
    b.logp = tv.lp.data();
    b.old_logp = old_lp.data();
    b.adv = adv.data();
    b.mask = mask.data();
    b.pg_seq_weight = sw.data();
    b.seq_weight = sw.data();
    b.ref_logp = ref_lp.data();
    b.entropy = tv.ent.data();
    PolicyStats st;
    policy_objective(pc, b, dlp.data(), dent.data(), &st);
    out["loss." + std::string(loss_agg_mode_name(mode))] = vec({static_cast<float>(st.loss)});
    if (mode == grad_mode) {
      out["pg_clipfrac"] = vec({static_cast<float>(st.tokens > 0 ? st.clipfrac / st.tokens : 0.0)});
      for (int64_t i = 0; i < N; ++i) {
        g.dlogprob[tgt[i]] = dlp[i];
        g.dentropy[tgt[i]] = dent[i];
      }
    }
  }
}

// The backward: the gradient of every parameter (with LoRA, of every adapter tensor).
void add_parameter_gradients(Decoder& dec, const ModelConfig& c, const CaseOptions& opt, LossGradients& g,
                             CaseOutputs& out) {
  Arena grads(DType::F32);
  if (opt.lora) {
    opt.lora->declare(grads);
    grads.allocate();
    grads.zero();
    const LoraTensors lg = opt.lora->resolve(grads);
    dec.backward(g.dlogprob.data(), g.dentropy.data(), nullptr, &lg);
  } else {
    declare_parameters(c, grads);
    grads.allocate();
    dec.backward(g.dlogprob.data(), g.dentropy.data(), resolve_tensors(c, grads));
  }
  for (const auto& [name, view] : grads.entries()) {
    CaseTensor t;
    t.shape.assign(view.shape.dims.begin(), view.shape.dims.begin() + view.shape.ndim);
    t.data.assign(view.f32(), view.f32() + view.numel());
    out["grad." + name] = std::move(t);
  }
}

}  // namespace

CaseOutputs evaluate_case(ModelWeights& weights, const SafetensorsFile& cf, const nlohmann::json* grpo,
                          const CaseOptions& opt) {
  const ModelConfig& c = weights.config();
  const PackedBatch batch = case_batch(c, cf);
  DecoderOptions dopt;
  dopt.mode = opt.mode;
  dopt.checkpoint_activations = opt.checkpoint_activations;
  dopt.lm_head_chunk = opt.lm_head_chunk;
  dopt.kernels = opt.kernels;
  Decoder dec(weights, dopt);
  dec.set_lora(opt.lora);
  CaseOutputs out;
  const TargetValues tv = add_forward_outputs(dec, batch, c, cf, out);
  LossGradients g{std::vector<float>(batch.T(), 0.0f), std::vector<float>(batch.T(), 0.0f)};
  if (!grpo)
    add_nll_loss(tv, out, g);
  else
    add_grpo_losses(*grpo, cf, batch, tv, out, g);
  add_parameter_gradients(dec, c, opt, g, out);
  return out;
}

}  // namespace grpo::train
