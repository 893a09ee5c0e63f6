// Inference step over a paged KV cache (see infer.h). Same layer structure as the training decoder
// (decoder.cpp), with paged attention, decode-sized matmuls (GEMV for small batches) and no saved state;
// Qwen3-VL prompts are encoded once (vision tower, M-RoPE positions) by encode_prompt.
#include "model/infer.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/profiler.h"
#include "kernels/ops.h"
#include "kernels/vision_ops.h"
#include "model/layer_utils.h"
#include "model/mrope.h"

namespace grpo {

namespace {

struct Buffers {
  float *x, *h, *qkv, *q, *k, *v, *rstd, *o, *tmp, *gu, *act, *attn_ws, *hr;  // see workspace_bytes
  float *mcos, *msin;  // [T, D/2] M-RoPE rows (Qwen3-VL)
  float* lora_u;       // [T, 3r] LoRA scratch (r = 0: none)
  bf16_t* x_bf;
};

// Carves the step's buffers for T tokens and R logits rows (base == nullptr: only measures).
size_t carve(const ModelConfig& c, int64_t T, int64_t R, int64_t block_size, int64_t lora_rank, char* base,
             Buffers* b) {
  const int64_t C = c.hidden_size, H = c.num_attention_heads, K = c.num_key_value_heads, D = c.head_dim,
                F = c.intermediate_size, Q = H * D, KV = K * D;
  Carver carver(base);
  auto f = [&](int64_t n) { return carver.take<float>(n); };
  b->x = f(T * C);         // [T, C] residual stream
  b->h = f(T * C);         // [T, C] normed
  b->qkv = f(T * (Q + 2 * KV));
  b->q = f(T * Q);         // [T, H, D]
  b->k = f(T * KV);        // [T, K, D]
  b->v = f(T * KV);
  b->rstd = f(T * std::max<int64_t>(H, 1));
  b->o = f(T * Q);         // [T, H, D]
  b->tmp = f(T * C);       // [T, C]
  b->gu = f(T * 2 * F);    // [T, 2F]
  b->act = f(T * F);       // [T, F]
  b->attn_ws = f(ops::paged_attention_ws_floats(T, H, block_size));
  b->hr = f(R * C);        // [R, C] rows whose logits are wanted
  b->mcos = c.has_vision() ? f(T * D / 2) : nullptr;
  b->msin = c.has_vision() ? f(T * D / 2) : nullptr;
  b->lora_u = lora_rank > 0 ? f(T * 3 * lora_rank) : nullptr;
  b->x_bf = carver.take<bf16_t>(ops::gemv_x_scratch_elems(T, std::max({C, F, Q})));  // [T, max(C, F, Q)], padded
  return carver.size();
}
}  // namespace

InferenceModel::InferenceModel(ModelWeights& weights, ComputeMode mode, ops::DecodeMatmul matmul)
    : w_(weights), mode_(mode), matmul_(matmul) {
  rope_ = make_rope_tables(w_.config(), w_.config().max_position_embeddings);
  GRPO_CHECK(mode_ == ComputeMode::BF16 || !w_.frozen_bf16(), "[infer] f32 compute over a base frozen in bf16 (its "
             "GEMM weights have no f32 copy); use bf16 compute");
  if (mode_ == ComputeMode::BF16) w_.bf16();
  if (w_.config().has_vision()) mrope_axes_ = mrope_axes(w_.config());
}

PromptVision InferenceModel::encode_prompt(const std::vector<int32_t>& prompt, const std::vector<PicturePtr>& pictures,
                                           const std::string& where) {
  const ModelConfig& c = w_.config();
  GRPO_CHECK(c.has_vision(), "[infer] ", where, ": pictures given but ", c.architecture, " has no vision tower");
  const int64_t n = static_cast<int64_t>(prompt.size()), C = c.hidden_size;
  PromptVision pv;
  std::vector<ImageGrid> grids;
  for (size_t j = 0; j < pictures.size(); ++j) {
    const Picture& p = *pictures[j];
    GRPO_CHECK(static_cast<int64_t>(p.pixel_values.size()) == p.grid.patches() * c.vision.patch_dim(), "[infer] ",
               where, ": picture ", j, " has ", p.pixel_values.size(), " pixel values, its grid (", p.grid.t, ", ",
               p.grid.h, ", ", p.grid.w, ") needs ", p.grid.patches(), " rows of patch_dim ", c.vision.patch_dim());
    grids.push_back(p.grid);
  }
  pv.positions.resize(3 * n);
  std::vector<uint8_t> picture_pad(n);
  const SequencePictures pics{grids.data(), static_cast<int64_t>(grids.size()), /*extra_pads_are_text=*/false};
  pv.rope_delta = mrope_positions(c, prompt.data(), n, pics, pv.positions.data(), n, picture_pad.data(), where);
  pv.pad_index.assign(n, -1);
  int64_t pads = 0;
  for (int64_t i = 0; i < n; ++i)
    if (picture_pad[i]) pv.pad_index[i] = static_cast<int32_t>(pads++);
  for (size_t j = 0; j < grids.size(); ++j)
    pv.pad_picture.insert(pv.pad_picture.end(), grids[j].patches() / c.vision.merge_factor(), static_cast<int32_t>(j));
  if (pictures.empty()) return pv;
  GRPO_PROFILE("encode_prompt_vision");
  const auto t0 = std::chrono::steady_clock::now();
  if (!vision_) vision_ = std::make_unique<VisionTower>(w_, VisionOptions{mode_, false});
  std::vector<float> pixels;  // the pictures' rows, concatenated
  for (const PicturePtr& p : pictures) pixels.insert(pixels.end(), p->pixel_values.begin(), p->pixel_values.end());
  vision_->set_lora(lora_);  // the tower's adapters, as in training
  vision_->forward(pixels.data(), grids, where);
  GRPO_CHECK(vision_->merged_rows() == pads, "[infer] ", where, ": ", pads, " <|image_pad|> tokens for ",
             vision_->merged_rows(), " image features");
  const int64_t K = static_cast<int64_t>(vision_->num_deepstack());
  pv.feature_width = (1 + K) * C;
  pv.features.resize(pads * pv.feature_width);
  for (int64_t i = 0; i < pads; ++i) {
    float* row = pv.features.data() + i * pv.feature_width;
    std::copy_n(vision_->image_embeds() + i * C, C, row);
    for (int64_t k = 0; k < K; ++k) std::copy_n(vision_->deepstack(k) + i * C, C, row + (1 + k) * C);
  }
  pv.patches = vision_->patch_rows();
  pv.vision_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return pv;
}

size_t InferenceModel::workspace_bytes(int64_t max_tokens, int64_t max_rows, int64_t block_size) const {
  return workspace_bytes_for(w_.config(), max_tokens, max_rows, block_size, lora_ ? lora_->rank() : 0);
}

size_t InferenceModel::workspace_bytes_for(const ModelConfig& c, int64_t max_tokens, int64_t max_rows,
                                           int64_t block_size, int64_t lora_rank) {
  Buffers b;
  return carve(c, max_tokens, max_rows, block_size, lora_rank, nullptr, &b);
}

void InferenceModel::matmul(float* y, const float* x, bf16_t* x_bf, const void* w32, const void* w16, int64_t T,
                            int64_t N, int64_t K) const {
  const bool bf = mode_ == ComputeMode::BF16;
  ops::decode_matmul(y, x, bf ? x_bf : nullptr, bf ? w16 : w32, bf ? DType::BF16 : DType::F32, T, N, K, matmul_);
}

void InferenceModel::lora(int64_t l, LoraGroupIndex gi, float* y, const float* x, float* u, int64_t T) const {
  if (!lora_) return;
  LoraModule mods[3];
  const float* A = nullptr;
  float* unused = nullptr;
  const int g = lora_->group(l, gi, nullptr, mods, &A, &unused);
  if (g == 0) return;
  const int64_t r = lora_->rank(), gr = g * r;
  const LoraSlotShape sh = lora_slot_shape(w_.config(), static_cast<LoraSlot>(kLoraGroups[gi].first));
  ops::decode_matmul(u, x, nullptr, A, DType::F32, T, gr, sh.in, matmul_);  // [T, g r]: the group's A at once
  for (int j = 0; j < g; ++j) {
    const LoraModule& m = mods[j];
    ops::add_low_rank_t(y + m.col, sh.packed_rows, u + j * r, gr, m.B, r, T, m.N, r, lora_->scale());
  }
}

void InferenceModel::forward(const InferStep& st, const ops::PagedKvView& kv, float* logits, Workspace& ws) const {
  GRPO_PROFILE("infer_forward");
  const ModelConfig& c = w_.config();
  const int64_t T = st.T, R = st.R, C = c.hidden_size, H = c.num_attention_heads, K = c.num_key_value_heads,
                D = c.head_dim, F = c.intermediate_size, Q = H * D, KV = K * D, V = c.vocab_size;
  const float eps = static_cast<float>(c.rms_norm_eps), scale = 1.0f / std::sqrt(static_cast<float>(D));
  GRPO_CHECK(kv.head_dim == D && kv.num_kv_heads == K && kv.num_layers == c.num_hidden_layers,
             "[infer] KV cache shape does not match the model");
  Buffers b;
  const int64_t lora_rank = lora_ ? lora_->rank() : 0;
  size_t need = carve(c, T, R, kv.block_size, lora_rank, nullptr, &b);
  char* base = static_cast<char*>(ws.take_bytes(need, "inference step"));
  carve(c, T, R, kv.block_size, lora_rank, base, &b);

  const ModelTensors& p32 = w_.f32();
  const ModelTensors* p16 = mode_ == ComputeMode::BF16 ? &const_cast<ModelWeights&>(w_).bf16() : nullptr;
  auto F32 = [](void* q) { return static_cast<const float*>(q); };
  ops::embedding_forward(b.x, st.tokens, F32(p32.embed), T, C);
  // Qwen3-VL: image-pad rows take their picture's features; M-RoPE rows from the three positions.
  int64_t deepstack = 0;
  if (st.features) {
    deepstack = static_cast<int64_t>(c.vision.deepstack_visual_indexes.size());
    for (int64_t t = 0; t < T; ++t)
      if (st.features[t]) std::copy_n(st.features[t], C, b.x + t * C);
  }
  if (st.mrope_positions) {
    GRPO_CHECK(c.has_vision(), "[infer] M-RoPE positions for a model without them");
    ops::mrope_tables(b.mcos, b.msin, st.mrope_positions, mrope_axes_.data(), rope_.cos.data(), rope_.sin.data(), T,
                      rope_.positions, rope_.half);
  }
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const LayerTensors& p = p32.layers[l];
    const LayerTensors* pb = p16 ? &p16->layers[l] : nullptr;
    ops::rmsnorm_forward(b.h, b.rstd, b.x, F32(p.attn_norm), T, C, eps);
    matmul(b.qkv, b.h, b.x_bf, p.wqkv, pb ? pb->wqkv : nullptr, T, Q + 2 * KV, C);
    lora(l, kLoraQkvGroup, b.qkv, b.h, b.lora_u, T);
    if (p.bqkv) add_bias(b.qkv, F32(p.bqkv), T, Q + 2 * KV);
    split_qkv(b.q, b.k, b.v, b.qkv, T, Q, KV);
    if (c.qk_norm) {
      ops::rmsnorm_forward(b.q, b.rstd, b.q, F32(p.q_norm), T * H, D, eps);
      ops::rmsnorm_forward(b.k, b.rstd, b.k, F32(p.k_norm), T * K, D, eps);
    }
    if (st.mrope_positions) {
      ops::rope_rows_forward(b.q, b.mcos, b.msin, T, H, D);
      ops::rope_rows_forward(b.k, b.mcos, b.msin, T, K, D);
    } else {
      ops::rope_forward(b.q, st.positions, rope_.cos.data(), rope_.sin.data(), T, H, D);
      ops::rope_forward(b.k, st.positions, rope_.cos.data(), rope_.sin.data(), T, K, D);
    }
    ops::paged_kv_write(kv, l, b.k, b.v, st.slots, T);
    ops::paged_attention(b.o, b.q, kv, l, st.block_table_indptr, st.block_table, st.seq_index, st.positions, T, st.S,
                         H, scale, b.attn_ws);
    matmul(b.tmp, b.o, b.x_bf, p.wo, pb ? pb->wo : nullptr, T, C, Q);
    lora(l, kLoraOGroup, b.tmp, b.o, b.lora_u, T);
    ops::add_inplace(b.x, b.tmp, T * C);
    ops::rmsnorm_forward(b.h, b.rstd, b.x, F32(p.mlp_norm), T, C, eps);
    matmul(b.gu, b.h, b.x_bf, p.wgu, pb ? pb->wgu : nullptr, T, 2 * F, C);
    lora(l, kLoraGateUpGroup, b.gu, b.h, b.lora_u, T);
    ops::swiglu_forward(b.act, b.gu, T, F);
    matmul(b.tmp, b.act, b.x_bf, p.wdown, pb ? pb->wdown : nullptr, T, C, F);
    lora(l, kLoraDownGroup, b.tmp, b.act, b.lora_u, T);
    ops::add_inplace(b.x, b.tmp, T * C);
    if (l < deepstack)  // DeepStack feature l joins the image-pad rows after text layer l
      for (int64_t t = 0; t < T; ++t)
        if (st.features[t]) {
          const float* f = st.features[t] + (1 + l) * C;
          float* x = b.x + t * C;
          for (int64_t i = 0; i < C; ++i) x[i] += f[i];
        }
  }
  for (int64_t r = 0; r < R; ++r) {
    GRPO_CHECK(st.logits_rows[r] >= 0 && st.logits_rows[r] < T, "[infer] logits row out of range");
    std::copy_n(b.x + st.logits_rows[r] * C, C, b.hr + r * C);
  }
  ops::rmsnorm_forward(b.hr, b.rstd, b.hr, F32(p32.final_norm), R, C, eps);
  matmul(logits, b.hr, b.x_bf, p32.lm_head, p16 ? p16->lm_head : nullptr, R, V, C);
}

}  // namespace grpo
