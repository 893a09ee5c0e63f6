// Decoder forward/backward (see decoder.h). Per layer (pre-norm):
//   h1 = rmsnorm(x); qkv = h1 Wqkv^T (+b); q,k = rope(qk_norm(q,k)); o = attn(q,k,v); x_mid = x + o Wo^T
//   h2 = rmsnorm(x_mid); gu = h2 Wgu^T; act = silu(gate) * up; x_out = x_mid + act Wdown^T
#include "model/decoder.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/profiler.h"
#include "kernels/ops.h"
#include "kernels/vision_ops.h"
#include "model/layer_utils.h"
#include "model/mrope.h"

namespace grpo {

namespace {
// The output layer's workspace: chunk rows of logits at a time (the whole batch with full logits).
int64_t output_layer_floats(const DecoderKernels& k, const ModelConfig& c, const DecoderOptions& opt, int64_t T) {
  return k.lm_head_ws_floats(k.full_logits ? T : opt.lm_head_chunk, c.vocab_size, c.hidden_size);
}
}  // namespace

ComputeMode parse_compute_mode(const std::string& s) {
  if (s == "f32" || s == "float32") return ComputeMode::F32;
  if (s == "bf16" || s == "bfloat16") return ComputeMode::BF16;
  fail("[dtype] expected f32 or bf16, got \"", s, "\"");
}

Decoder::Decoder(ModelWeights& weights, DecoderOptions opt)
    : w_(weights), c_(weights.config()), opt_(opt), k_(opt.kernels ? opt.kernels : &fused_kernels()) {
  GRPO_CHECK(opt_.lm_head_chunk > 0, "[decoder] lm_head_chunk must be positive");
  GRPO_CHECK(opt_.mode == ComputeMode::BF16 || !w_.frozen_bf16(), "[decoder] f32 compute over a base frozen in bf16 "
             "(its GEMM weights have no f32 copy); use bf16 compute");
  rope_ = make_rope_tables(c_, c_.max_position_embeddings);
  if (opt_.mode == ComputeMode::BF16) w_.bf16();
  if (c_.has_vision()) {
    vision_ = std::make_unique<VisionTower>(w_, VisionOptions{opt_.mode, opt_.checkpoint_activations});
    mrope_axes_ = mrope_axes(c_);
  }
}

void Decoder::set_hooks(DecoderHooks* hooks) {
  hooks_ = hooks;
  if (vision_) vision_->set_hooks(hooks);
}

size_t Decoder::carve(int64_t T, bool dry_run) {
  int64_t longest = 0;
  for (int64_t s = 0; s < batch_->S(); ++s) longest = std::max<int64_t>(longest, batch_->seq_len(s));
  const bool mrope = c_.has_vision() && batch_->has_pictures();
  char* base = dry_run ? nullptr : static_cast<char*>(ws_.take_bytes(ws_.capacity(), "decoder activations"));
  return carve_layout(c_, opt_, *k_, T, longest, mrope, lora_ ? lora_->rank() : 0, base, acts_, x_final_, s_);
}

size_t Decoder::activation_bytes(const ModelConfig& c, const DecoderOptions& opt, int64_t tokens,
                                 int64_t longest_sequence, bool pictures, int64_t lora_rank) {
  std::vector<LayerActs> acts;
  float* x_final = nullptr;
  Scratch s{};
  return carve_layout(c, opt, opt.kernels ? *opt.kernels : fused_kernels(), tokens, longest_sequence,
                      pictures && c.has_vision(), lora_rank, nullptr, acts, x_final, s);
}

size_t Decoder::output_layer_bytes(const ModelConfig& c, const DecoderOptions& opt, int64_t tokens) {
  return sizeof(float) * output_layer_floats(opt.kernels ? *opt.kernels : fused_kernels(), c, opt, tokens);
}

size_t Decoder::carve_layout(const ModelConfig& c, const DecoderOptions& opt, const DecoderKernels& kernels, int64_t T,
                             int64_t longest, bool mrope, int64_t lora_rank, char* base, std::vector<LayerActs>& acts,
                             float*& x_final, Scratch& s) {
  const int64_t C = c.hidden_size, H = c.num_attention_heads, K = c.num_key_value_heads, D = c.head_dim,
                F = c.intermediate_size, L = c.num_hidden_layers, Q = H * D, KV = K * D, W = Q + 2 * KV;
  const bool bf = opt.mode == ComputeMode::BF16, ckpt = opt.checkpoint_activations;
  Carver carver(base);
  auto f = [&](int64_t n) { return carver.take<float>(n); };
  auto h = [&](int64_t n) { return carver.take<bf16_t>(n); };
  auto full_set = [&](LayerActs& a) {
    a.h1 = f(T * C);
    a.rstd1 = f(T);
    a.q = f(T * Q);
    a.k = f(T * KV);
    a.v = f(T * KV);
    a.q_pre = c.qk_norm ? f(T * Q) : a.q;
    a.k_pre = c.qk_norm ? f(T * KV) : a.k;
    a.q_rstd = c.qk_norm ? f(T * H) : nullptr;
    a.k_rstd = c.qk_norm ? f(T * K) : nullptr;
    a.o = f(T * Q);
    a.lse = f(T * H);
    a.x_mid = f(T * C);
    a.h2 = f(T * C);
    a.rstd2 = f(T);
    a.gu = f(T * 2 * F);
    a.act = f(T * F);
    a.h1_bf = bf ? h(T * C) : nullptr;
    a.o_bf = bf ? h(T * Q) : nullptr;
    a.h2_bf = bf ? h(T * C) : nullptr;
    a.act_bf = bf ? h(T * F) : nullptr;
    for (size_t gi = 0; gi < a.lora_u.size(); ++gi) {
      const LoraGroup& g = kLoraGroups[gi];
      a.lora_u[gi] = lora_rank > 0 ? f(T * (g.last - g.first + 1) * lora_rank) : nullptr;
    }
  };
  acts.resize(L);
  LayerActs shared{};
  if (ckpt) full_set(shared);
  for (int64_t l = 0; l < L; ++l) {
    if (ckpt)
      acts[l] = shared;
    else
      full_set(acts[l]);
    acts[l].x_in = f(T * C);
  }
  x_final = f(T * C);
  s.qkv = f(T * W);
  s.dx = f(T * C);
  s.dtmp = f(T * C);
  s.dact = f(T * F);
  s.dgu = f(T * 2 * F);
  s.dO = f(T * Q);
  s.dq = f(T * Q);
  s.dk = f(T * KV);
  s.dv = f(T * KV);
  s.dqkv = f(T * W);
  s.dy_bf = bf ? h(T * std::max({2 * F, W, C, Q})) : nullptr;
  s.attn_ws = f(kernels.attention_ws_floats(kernels.attention_ws_per_sequence ? longest : T, H, K, D));
  s.rms_ws = f(std::max(kernels.rmsnorm_backward_ws_floats(T, C), kernels.rmsnorm_backward_ws_floats(T * H, D)));
  s.head_ws = f(output_layer_floats(kernels, c, opt, T));
  s.h_final = f(T * C);
  s.rstd_final = f(T);
  s.h_final_bf = bf ? h(T * C) : nullptr;
  s.lse_head = f(T);
  s.entropy_head = f(T);
  s.mcos = mrope ? f(T * D / 2) : nullptr;
  s.msin = mrope ? f(T * D / 2) : nullptr;
  s.lora_du = lora_rank > 0 ? f(T * 3 * lora_rank) : nullptr;
  const bool lora_bf = lora_rank > 0 && bf;
  s.lora_w_bf = lora_bf ? h(3 * lora_rank * std::max({Q, C, F})) : nullptr;
  s.lora_u_bf = lora_bf ? h(T * 3 * lora_rank) : nullptr;
  s.lora_du_bf = lora_bf ? h(T * 3 * lora_rank) : nullptr;
  s.norm_sink = f(std::max(C, D));
  return carver.size();
}

void Decoder::rope(float* x, int64_t nh, bool backward) {
  const int64_t T = T_, D = c_.head_dim;
  const int32_t* pos = batch_->positions.data();
  if (pictures_)
    (backward ? ops::rope_rows_backward : ops::rope_rows_forward)(x, s_.mcos, s_.msin, T, nh, D);
  else
    (backward ? k_->rope_backward : k_->rope_forward)(x, pos, rope_.cos.data(), rope_.sin.data(), T, nh, D);
}

void Decoder::prepare_pictures(const PackedBatch& batch) {
  const int64_t T = batch.T(), S = batch.S();
  GRPO_CHECK(static_cast<int64_t>(batch.sequence_pictures.size()) == S, "[decoder] the batch gives picture counts for ",
             batch.sequence_pictures.size(), " of its ", S, " sequences");
  pos3_.resize(3 * T);
  rope_deltas_.resize(S);
  picture_pad_.resize(T);
  pad_rows_.clear();
  int64_t next = 0;
  for (int64_t s = 0; s < S; ++s) {
    const int64_t start = batch.cu_seqlens[s], count = batch.sequence_pictures[s];
    GRPO_CHECK(count >= 0 && next + count <= static_cast<int64_t>(batch.image_grids.size()), "[decoder] sequence ", s,
               " claims ", count, " pictures, the batch has ", batch.image_grids.size() - next, " left");
    // Pads past a sequence's pictures are text: a response may sample the pad token.
    const SequencePictures pics{batch.image_grids.data() + next, count, /*extra_pads_are_text=*/true};
    rope_deltas_[s] = grpo::mrope_positions(c_, batch.ids.data() + start, batch.seq_len(s), pics, pos3_.data() + start,
                                            T, picture_pad_.data() + start, cat("batch sequence ", s));
    next += count;
  }
  GRPO_CHECK(next == static_cast<int64_t>(batch.image_grids.size()), "[decoder] the batch has ",
             batch.image_grids.size(), " pictures, its sequences claim ", next);
  for (int64_t t = 0; t < T; ++t)
    if (picture_pad_[t]) pad_rows_.push_back(static_cast<int32_t>(t));
  pictures_ = batch.has_pictures();
  if (!pictures_) return;
  const int64_t rows = static_cast<int64_t>(batch.pixel_values.size()) / c_.vision.patch_dim();
  GRPO_CHECK(rows * c_.vision.patch_dim() == static_cast<int64_t>(batch.pixel_values.size()), "[decoder] pixel_values has ",
             batch.pixel_values.size(), " floats, not a multiple of patch_dim ", c_.vision.patch_dim());
  validate_image_grids(c_.vision, batch.image_grids, rows, "batch");
  vision_->forward(batch.pixel_values.data(), batch.image_grids, "batch");
  GRPO_CHECK(vision_->merged_rows() == static_cast<int64_t>(pad_rows_.size()), "[decoder] ", pad_rows_.size(),
             " <|image_pad|> tokens for ", vision_->merged_rows(), " image features");
}

void Decoder::linear(float* out, const float* in, bf16_t* in_bf, const void* w32, const void* w16, int64_t T,
                     int64_t N, int64_t K) {
  linear_forward(opt_.mode, out, in, in_bf, w32, w16, T, N, K);
}

void Decoder::linear_backward(float* din, float* dW, const float* dout, const float* in, const bf16_t* in_bf,
                              const void* w32, const void* w16, int64_t T, int64_t N, int64_t K) {
  grpo::linear_backward(opt_.mode, din, dW, dout, in, in_bf, w32, w16, T, N, K, s_.dy_bf);
}

LoraBf16 Decoder::lora_bf16(const bf16_t* in_bf) const {
  return LoraBf16{in_bf, s_.dy_bf, s_.lora_w_bf, s_.lora_u_bf, s_.lora_du_bf};
}

void Decoder::lora_forward(int64_t l, LayerActs& a, LoraGroupIndex gi, float* out, const float* in,
                           const bf16_t* in_bf) {
  if (!lora_) return;
  LoraModule mods[3];
  const float* A = nullptr;
  float* dA = nullptr;
  const int g = lora_->group(l, gi, nullptr, mods, &A, &dA);
  if (g == 0) return;
  const LoraSlotShape sh = lora_slot_shape(c_, static_cast<LoraSlot>(kLoraGroups[gi].first));
  const LoraBf16 bf = lora_bf16(in_bf);
  lora_group_forward(out, sh.packed_rows, in, A, mods, g, a.lora_u[gi], T_, sh.in, lora_->rank(), lora_->scale(),
                     opt_.mode == ComputeMode::BF16 ? &bf : nullptr);
}

void Decoder::lora_backward(int64_t l, LayerActs& a, LoraGroupIndex gi, const LoraTensors* lg, float* din,
                            const float* dout, const float* in, const bf16_t* in_bf) {
  if (!lora_) return;
  LoraModule mods[3];
  const float* A = nullptr;
  float* dA = nullptr;
  const int g = lora_->group(l, gi, lg, mods, &A, &dA);
  if (g == 0) return;
  const LoraSlotShape sh = lora_slot_shape(c_, static_cast<LoraSlot>(kLoraGroups[gi].first));
  const LoraBf16 bf = lora_bf16(in_bf);
  lora_group_backward(din, dA, dout, sh.packed_rows, in, A, mods, g, a.lora_u[gi], s_.lora_du, T_, sh.in,
                      lora_->rank(), lora_->scale(), opt_.mode == ComputeMode::BF16 ? &bf : nullptr);
}

void Decoder::layer_forward(int64_t l, LayerActs& a, float* x_out) {
  GRPO_PROFILE("layer_forward");
  const int64_t T = T_, C = c_.hidden_size, H = c_.num_attention_heads, K = c_.num_key_value_heads,
                D = c_.head_dim, F = c_.intermediate_size, Q = H * D, KV = K * D;
  const float eps = static_cast<float>(c_.rms_norm_eps);
  const LayerTensors& p = w_.f32().layers[l];
  const LayerTensors* pb = opt_.mode == ComputeMode::BF16 ? &w_.bf16().layers[l] : nullptr;
  auto w16 = [&](void* LayerTensors::*m) { return pb ? pb->*m : nullptr; };
  const PackedBatch& b = *batch_;

  k_->rmsnorm_forward(a.h1, a.rstd1, a.x_in, static_cast<float*>(p.attn_norm), T, C, eps);
  linear(s_.qkv, a.h1, a.h1_bf, p.wqkv, w16(&LayerTensors::wqkv), T, Q + 2 * KV, C);
  lora_forward(l, a, kLoraQkvGroup, s_.qkv, a.h1, a.h1_bf);
  if (p.bqkv) add_bias(s_.qkv, static_cast<float*>(p.bqkv), T, Q + 2 * KV);
  split_qkv(a.q_pre, a.k_pre, a.v, s_.qkv, T, Q, KV);
  if (c_.qk_norm) {
    k_->rmsnorm_forward(a.q, a.q_rstd, a.q_pre, static_cast<float*>(p.q_norm), T * H, D, eps);
    k_->rmsnorm_forward(a.k, a.k_rstd, a.k_pre, static_cast<float*>(p.k_norm), T * K, D, eps);
  }
  rope(a.q, H, /*backward=*/false);
  rope(a.k, K, /*backward=*/false);
  k_->attention_forward(a.o, a.lse, a.q, a.k, a.v, b.cu_seqlens.data(), b.S(), T, H, K, D,
                         1.0f / std::sqrt(static_cast<float>(D)), s_.attn_ws);
  linear(a.x_mid, a.o, a.o_bf, p.wo, w16(&LayerTensors::wo), T, C, Q);
  lora_forward(l, a, kLoraOGroup, a.x_mid, a.o, a.o_bf);
  k_->add_inplace(a.x_mid, a.x_in, T * C);
  k_->rmsnorm_forward(a.h2, a.rstd2, a.x_mid, static_cast<float*>(p.mlp_norm), T, C, eps);
  linear(a.gu, a.h2, a.h2_bf, p.wgu, w16(&LayerTensors::wgu), T, 2 * F, C);
  lora_forward(l, a, kLoraGateUpGroup, a.gu, a.h2, a.h2_bf);
  k_->swiglu_forward(a.act, a.gu, T, F);
  linear(x_out, a.act, a.act_bf, p.wdown, w16(&LayerTensors::wdown), T, C, F);
  lora_forward(l, a, kLoraDownGroup, x_out, a.act, a.act_bf);
  k_->add_inplace(x_out, a.x_mid, T * C);
}

void Decoder::layer_backward(int64_t l, LayerActs& a, const ModelTensors* g, const LoraTensors* lg) {
  GRPO_PROFILE("layer_backward");
  const int64_t T = T_, C = c_.hidden_size, H = c_.num_attention_heads, K = c_.num_key_value_heads,
                D = c_.head_dim, F = c_.intermediate_size, Q = H * D, KV = K * D;
  const LayerTensors& p = w_.f32().layers[l];
  const LayerTensors* pb = opt_.mode == ComputeMode::BF16 ? &w_.bf16().layers[l] : nullptr;
  auto w16 = [&](void* LayerTensors::*m) { return pb ? pb->*m : nullptr; };
  // A frozen base (g null): no weight gradients; the norms' go to a sink.
  const LayerTensors* gl = g ? &g->layers[l] : nullptr;
  auto G = [](void* q) { return static_cast<float*>(q); };
  auto GW = [&](void* LayerTensors::*m) { return gl ? G(gl->*m) : nullptr; };
  auto GN = [&](void* LayerTensors::*m) { return gl ? G(gl->*m) : s_.norm_sink; };
  const PackedBatch& b = *batch_;

  // MLP: s_.dx holds dL/dx_out on entry.
  linear_backward(s_.dact, GW(&LayerTensors::wdown), s_.dx, a.act, a.act_bf, p.wdown, w16(&LayerTensors::wdown), T,
                  C, F);
  lora_backward(l, a, kLoraDownGroup, lg, s_.dact, s_.dx, a.act, a.act_bf);
  k_->swiglu_backward(s_.dgu, s_.dact, a.gu, T, F);
  linear_backward(s_.dtmp, GW(&LayerTensors::wgu), s_.dgu, a.h2, a.h2_bf, p.wgu, w16(&LayerTensors::wgu), T, 2 * F,
                  C);
  lora_backward(l, a, kLoraGateUpGroup, lg, s_.dtmp, s_.dgu, a.h2, a.h2_bf);
  k_->rmsnorm_backward(s_.dtmp, GN(&LayerTensors::mlp_norm), s_.dtmp, a.x_mid, G(p.mlp_norm), a.rstd2, T, C,
                       s_.rms_ws);
  k_->add_inplace(s_.dx, s_.dtmp, T * C);  // dL/dx_mid
  // Attention.
  linear_backward(s_.dO, GW(&LayerTensors::wo), s_.dx, a.o, a.o_bf, p.wo, w16(&LayerTensors::wo), T, C, Q);
  lora_backward(l, a, kLoraOGroup, lg, s_.dO, s_.dx, a.o, a.o_bf);
  k_->attention_backward(s_.dq, s_.dk, s_.dv, s_.dO, a.q, a.k, a.v, a.o, a.lse, b.cu_seqlens.data(), b.S(), T, H,
                          K, D, 1.0f / std::sqrt(static_cast<float>(D)), s_.attn_ws);
  rope(s_.dq, H, /*backward=*/true);
  rope(s_.dk, K, /*backward=*/true);
  if (c_.qk_norm) {
    k_->rmsnorm_backward(s_.dq, GN(&LayerTensors::q_norm), s_.dq, a.q_pre, G(p.q_norm), a.q_rstd, T * H, D,
                         s_.rms_ws);
    k_->rmsnorm_backward(s_.dk, GN(&LayerTensors::k_norm), s_.dk, a.k_pre, G(p.k_norm), a.k_rstd, T * K, D,
                         s_.rms_ws);
  }
  merge_qkv(s_.dqkv, s_.dq, s_.dk, s_.dv, T, Q, KV);
  if (gl && gl->bqkv) bias_grad(G(gl->bqkv), s_.dqkv, T, Q + 2 * KV);
  linear_backward(s_.dtmp, GW(&LayerTensors::wqkv), s_.dqkv, a.h1, a.h1_bf, p.wqkv, w16(&LayerTensors::wqkv), T,
                  Q + 2 * KV, C);
  lora_backward(l, a, kLoraQkvGroup, lg, s_.dtmp, s_.dqkv, a.h1, a.h1_bf);
  k_->rmsnorm_backward(s_.dtmp, GN(&LayerTensors::attn_norm), s_.dtmp, a.x_in, G(p.attn_norm), a.rstd1, T, C,
                       s_.rms_ws);
  k_->add_inplace(s_.dx, s_.dtmp, T * C);  // dL/dx_in
}

void Decoder::forward(const PackedBatch& batch, float* logprob, float* entropy) {
  GRPO_PROFILE("decoder_forward");
  const int64_t T = batch.T(), C = c_.hidden_size, V = c_.vocab_size, L = c_.num_hidden_layers;
  GRPO_CHECK(T > 0, "[decoder] empty batch");
  for (int64_t s = 0; s < batch.S(); ++s)
    GRPO_CHECK(batch.seq_len(s) <= rope_.positions, "[decoder] sequence ", s, " has ", batch.seq_len(s),
               " tokens, more than max_position_embeddings ", rope_.positions);
  for (int64_t t = 0; t < T; ++t)
    GRPO_CHECK(batch.ids[t] >= 0 && batch.ids[t] < V, "[decoder] token ", t, " has id ", batch.ids[t],
               ", expected 0 <= id < vocab_size ", V);
  GRPO_CHECK(!batch.has_pictures() || c_.has_vision(), "[decoder] the batch has pictures but ", c_.architecture,
             " has no vision tower");
  batch_ = &batch;
  T_ = T;
  pictures_ = false;
  if (c_.has_vision()) prepare_pictures(batch);
  if (hooks_ && c_.has_vision() && !pictures_)  // no tower to run: its events still come, in the same order
    vision_hook_pass(*hooks_, c_.vision.depth, /*backward=*/false, opt_.checkpoint_activations);
  size_t need = carve(T, /*dry_run=*/true);
  if (need > ws_.capacity()) ws_.reserve(need, cat("the decoder's activations for ", T, " tokens"));
  ws_.reset();
  carve(T, /*dry_run=*/false);

  const bool bf = opt_.mode == ComputeMode::BF16;
  k_->embedding_forward(acts_[0].x_in, batch.ids.data(), static_cast<float*>(w_.f32().embed), T, C);
  const int64_t deepstack = pictures_ ? static_cast<int64_t>(vision_->num_deepstack()) : 0;
  if (pictures_) {
    const int64_t n = static_cast<int64_t>(pad_rows_.size());
    scatter_rows(acts_[0].x_in, pad_rows_.data(), vision_->image_embeds(), n, C);
    ops::mrope_tables(s_.mcos, s_.msin, pos3_.data(), mrope_axes_.data(), rope_.cos.data(), rope_.sin.data(), T,
                      rope_.positions, rope_.half);
  }
  for (int64_t l = 0; l < L; ++l) {
    if (hooks_) hooks_->forward_layer(l);
    float* x_out = l + 1 < L ? acts_[l + 1].x_in : x_final_;
    layer_forward(l, acts_[l], x_out);
    if (l < deepstack)  // DeepStack: the features of merger l join the image rows after text layer l
      add_to_rows(x_out, pad_rows_.data(), vision_->deepstack(l), static_cast<int64_t>(pad_rows_.size()), C);
  }
  k_->rmsnorm_forward(s_.h_final, s_.rstd_final, x_final_, static_cast<float*>(w_.f32().final_norm), T, C,
                       static_cast<float>(c_.rms_norm_eps));
  const void* h = s_.h_final;
  const void* W = w_.f32().lm_head;
  if (bf) {
    ops::f32_to_bf16(s_.h_final_bf, s_.h_final, T * C);
    h = s_.h_final_bf;
    W = w_.bf16().lm_head;
  }
  k_->lm_head_forward(logprob, entropy, s_.lse_head, h, W, bf ? DType::BF16 : DType::F32, batch.targets.data(), T,
                       C, V, opt_.logit_scale, opt_.lm_head_chunk, s_.head_ws);
  std::copy(entropy, entropy + T, s_.entropy_head);
}

void Decoder::backward(const float* dlogprob, const float* dentropy, const ModelTensors& g) {
  backward(dlogprob, dentropy, &g, nullptr);
}

void Decoder::backward(const float* dlogprob, const float* dentropy, const ModelTensors* gp, const LoraTensors* lg) {
  GRPO_PROFILE("decoder_backward");
  GRPO_CHECK(!lg || lora_, "[decoder] backward() given LoRA gradients but no adapters are attached");
  GRPO_CHECK(batch_, "[decoder] backward() without forward()");
  const int64_t T = T_, C = c_.hidden_size, V = c_.vocab_size, L = c_.num_hidden_layers;
  const bool bf = opt_.mode == ComputeMode::BF16;
  auto G = [](void* q) { return static_cast<float*>(q); };
  k_->lm_head_backward(s_.dtmp, gp ? G(gp->lm_head) : nullptr, dlogprob, dentropy,
                       bf ? static_cast<void*>(s_.h_final_bf) : s_.h_final, bf ? w_.bf16().lm_head : w_.f32().lm_head,
                       bf ? DType::BF16 : DType::F32, batch_->targets.data(), s_.lse_head, s_.entropy_head, T, C, V,
                       opt_.logit_scale, opt_.lm_head_chunk, s_.head_ws);
  k_->rmsnorm_backward(s_.dx, gp ? G(gp->final_norm) : s_.norm_sink, s_.dtmp, x_final_, G(w_.f32().final_norm), s_.rstd_final, T, C,
                        s_.rms_ws);
  if (hooks_) hooks_->head_done();
  // The tower's gradient: through the image rows' embeddings and the DeepStack additions (not for a frozen
  // tower, whose gradient arena has no vision tensors, unless LoRA adapts some of its linears).
  const bool tower_weights = gp && gp->vision.patch_w;
  const bool tower_lora = lg && lora_->has_tower();
  const bool into_vision = pictures_ && (tower_weights || tower_lora);
  const int64_t n_pads = static_cast<int64_t>(pad_rows_.size());
  const int64_t deepstack = into_vision ? static_cast<int64_t>(vision_->num_deepstack()) : 0;
  for (int64_t l = L - 1; l >= 0; --l) {
    if (l < deepstack) gather_rows(vision_->deepstack_grad(l), s_.dx, pad_rows_.data(), n_pads, C);
    if (opt_.checkpoint_activations) {
      GRPO_PROFILE("recompute_layer");
      if (hooks_) hooks_->forward_layer(l);
      layer_forward(l, acts_[l], l + 1 < L ? acts_[l + 1].x_in : x_final_);
    }
    if (hooks_) hooks_->backward_layer(l);
    layer_backward(l, acts_[l], gp, lg);
    if (hooks_) hooks_->layer_done(l);
  }
  if (pictures_) {  // image rows replaced their embeddings: no gradient for the pad token's row
    if (into_vision) gather_rows(vision_->image_embeds_grad(), s_.dx, pad_rows_.data(), n_pads, C);
    for (int32_t row : pad_rows_) std::fill_n(s_.dx + int64_t{row} * C, C, 0.0f);
  }
  if (gp) k_->embedding_backward(G(gp->embed), s_.dx, batch_->ids.data(), T, C);
  if (into_vision)
    vision_->backward(tower_weights ? &gp->vision : nullptr, tower_lora ? lg : nullptr);
  else if (hooks_ && tower_weights)  // a trained tower without pictures in this batch
    vision_hook_pass(*hooks_, c_.vision.depth, /*backward=*/true, opt_.checkpoint_activations);
  if (hooks_) hooks_->embedding_done();
}

void Decoder::full_logits(float* out) {
  GRPO_CHECK(batch_, "[decoder] full_logits() without forward()");
  const int64_t T = T_, C = c_.hidden_size, V = c_.vocab_size;
  if (opt_.mode == ComputeMode::BF16)
    ops::gemm(ops::Trans::N, ops::Trans::T, T, V, C, opt_.logit_scale, s_.h_final_bf, C, w_.bf16().lm_head, C, 0.0f,
              out, V, DType::BF16);
  else
    ops::gemm(ops::Trans::N, ops::Trans::T, T, V, C, opt_.logit_scale, s_.h_final, C, w_.f32().lm_head, C, 0.0f, out,
              V, DType::F32);
}

}  // namespace grpo
