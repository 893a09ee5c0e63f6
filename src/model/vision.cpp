// Vision tower forward/backward (see vision.h). Per block (pre-norm):
//   h1 = LN1(x); qkv = h1 Wqkv^T + b; q, k = rotary2d(q, k); o = attn(q, k, v) within each picture
//   x_mid = x + o Wproj^T + b; h2 = LN2(x_mid); f1 = h2 Wfc1^T + b; x_out = x_mid + gelu_tanh(f1) Wfc2^T + b
// Mergers: fc2(gelu_erf(fc1(LN(x) viewed [Ng, M]))) (main) and fc2(gelu_erf(fc1(LN_M(x viewed [Ng, M])))).
#include "model/vision.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>

#include "core/profiler.h"
#include "kernels/ops.h"
#include "kernels/vision_ops.h"
#include "model/layer_utils.h"

namespace grpo {

namespace {
float* F(void* p) { return static_cast<float*>(p); }
const float* CF(const void* p) { return static_cast<const float*>(p); }
const LoraPair kNoAdapter{};
}  // namespace

VisionTower::VisionTower(ModelWeights& weights, VisionOptions opt) : w_(weights), v_(weights.config().vision), opt_(opt) {
  GRPO_CHECK(weights.config().has_vision(), "[vision] ", weights.config().architecture, " has no vision tower");
  if (opt_.mode == ComputeMode::BF16) w_.bf16();
  ds_after_block_.assign(v_.depth, -1);
  for (size_t k = 0; k < v_.deepstack_visual_indexes.size(); ++k) ds_after_block_[v_.deepstack_visual_indexes[k]] = k;
  ds_.resize(v_.deepstack_visual_indexes.size());
}

size_t VisionTower::carve(bool dry_run) {
  char* base = dry_run ? nullptr : static_cast<char*>(ws_.take_bytes(ws_.capacity(), "vision activations"));
  return carve_layout(v_, opt_, N_, Ng_, lora_rank(), base, acts_, main_, ds_, s_);
}

size_t VisionTower::activation_bytes(const VisionConfig& v, const VisionOptions& opt, int64_t patch_rows,
                                     int64_t lora_rank) {
  std::vector<BlockActs> acts;
  MergerActs main_merger{};
  std::vector<MergerActs> ds(v.deepstack_visual_indexes.size());
  Scratch s{};
  return carve_layout(v, opt, patch_rows, patch_rows / v.merge_factor(), lora_rank, nullptr, acts, main_merger, ds,
                      s);
}

size_t VisionTower::carve_layout(const VisionConfig& vc, const VisionOptions& opt, int64_t N, int64_t Ng,
                                 int64_t lora_rank, char* base, std::vector<BlockActs>& acts, MergerActs& main_merger,
                                 std::vector<MergerActs>& ds, Scratch& s) {
  const int64_t D = vc.hidden_size, Fv = vc.intermediate_size, H = vc.num_heads,
                hd = vc.head_dim(), Pd = vc.patch_dim(), M = vc.merged_dim(), O = vc.out_hidden_size;
  const bool bf = opt.mode == ComputeMode::BF16, ckpt = opt.checkpoint_activations;
  Carver carver(base);
  auto f = [&](int64_t n) { return carver.take<float>(n); };
  auto h = [&](int64_t n) { return carver.take<bf16_t>(n); };
  const int64_t r = lora_rank;
  auto full_set = [&](BlockActs& a) {
    a.h1 = f(N * D);
    a.mean1 = f(N);
    a.rstd1 = f(N);
    a.q = f(N * D);
    a.k = f(N * D);
    a.v = f(N * D);
    a.o = f(N * D);
    a.lse = f(N * H);
    a.x_mid = f(N * D);
    a.h2 = f(N * D);
    a.mean2 = f(N);
    a.rstd2 = f(N);
    a.f1 = f(N * Fv);
    a.act = f(N * Fv);
    a.h1_bf = bf ? h(N * D) : nullptr;
    a.o_bf = bf ? h(N * D) : nullptr;
    a.h2_bf = bf ? h(N * D) : nullptr;
    a.act_bf = bf ? h(N * Fv) : nullptr;
    for (float*& u : a.lora_u) u = r > 0 ? f(N * r) : nullptr;
  };
  acts.resize(vc.depth);
  BlockActs shared{};
  if (ckpt) full_set(shared);
  for (int64_t b = 0; b < vc.depth; ++b) {
    if (ckpt)
      acts[b] = shared;
    else
      full_set(acts[b]);
    acts[b].x_in = f(N * D);
  }
  auto merger = [&](MergerActs& m, bool main) {
    m.in_norm = f(Ng * M);
    m.mean = f(main ? N : Ng);
    m.rstd = f(main ? N : Ng);
    m.f1 = f(Ng * M);
    m.act = f(Ng * M);
    m.out = f(Ng * O);
    m.dout = f(Ng * O);
    m.in_bf = bf ? h(Ng * M) : nullptr;
    m.act_bf = bf ? h(Ng * M) : nullptr;
    for (float*& u : m.lora_u) u = r > 0 ? f(Ng * r) : nullptr;
  };
  merger(main_merger, true);
  for (MergerActs& m : ds) merger(m, false);
  s.pos = f(N * D);
  s.x_final = f(N * D);
  s.qkv = f(N * 3 * D);
  s.dx = f(N * D);
  s.dtmp = f(N * D);
  s.dO = f(N * D);
  s.dq = f(N * D);
  s.dk = f(N * D);
  s.dv = f(N * D);
  s.dqkv = f(N * 3 * D);
  s.dact = f(N * Fv);
  s.dm_act = f(Ng * M);
  s.dm_in = f(Ng * M);
  s.attn_ws = f(ops::attention_ws_floats(N, H, H, hd));
  s.ln_ws = f(std::max(ops::layernorm_backward_ws_floats(N, D), ops::layernorm_backward_ws_floats(Ng, M)));
  s.pix_bf = bf ? h(N * Pd) : nullptr;
  s.dy_bf = bf ? h(std::max(N * std::max(3 * D, Fv), Ng * std::max(M, O))) : nullptr;
  s.lora_du = r > 0 ? f(N * r) : nullptr;
  s.norm_sink = f(2 * std::max(D, M));
  return carver.size();
}

void VisionTower::block_forward(int64_t b, BlockActs& a, float* x_out) {
  GRPO_PROFILE("vision_block_forward");
  const int64_t N = N_, D = v_.hidden_size, Fv = v_.intermediate_size, H = v_.num_heads, hd = v_.head_dim();
  const float eps = static_cast<float>(v_.layer_norm_eps);
  const VisionBlockTensors& p = w_.f32().vision.blocks[b];
  const VisionBlockTensors* pb = opt_.mode == ComputeMode::BF16 ? &w_.bf16().vision.blocks[b] : nullptr;
  auto w16 = [&](void* VisionBlockTensors::*m) { return pb ? pb->*m : nullptr; };
  const VisionLayout& L = layout_;
  auto lora = [&](TowerSlot sl, float* y, const float* x) {
    const int k = static_cast<int>(sl);
    lora_forward(lora_ ? lora_->tensors().tower[b][k] : kNoAdapter, tower_slot_shape(v_, sl), y, x, a.lora_u[k], N);
  };

  ops::layernorm_forward(a.h1, a.mean1, a.rstd1, a.x_in, CF(p.norm1_w), CF(p.norm1_b), N, D, eps);
  linear_forward(opt_.mode, s_.qkv, a.h1, a.h1_bf, p.wqkv, w16(&VisionBlockTensors::wqkv), N, 3 * D, D);
  lora(TowerSlot::Qkv, s_.qkv, a.h1);
  ops::bias_add(s_.qkv, CF(p.bqkv), N, 3 * D);
  split_qkv(a.q, a.k, a.v, s_.qkv, N, D, D);
  ops::rope_rows_forward(a.q, L.rope_cos.data(), L.rope_sin.data(), N, H, hd);
  ops::rope_rows_forward(a.k, L.rope_cos.data(), L.rope_sin.data(), N, H, hd);
  const int64_t S = static_cast<int64_t>(L.cu_seqlens.size()) - 1;
  ops::bidirectional_attention_forward(a.o, a.lse, a.q, a.k, a.v, L.cu_seqlens.data(), S, N, H, H, hd,
                                       1.0f / std::sqrt(static_cast<float>(hd)), s_.attn_ws);
  linear_forward(opt_.mode, a.x_mid, a.o, a.o_bf, p.wproj, w16(&VisionBlockTensors::wproj), N, D, D);
  lora(TowerSlot::Proj, a.x_mid, a.o);
  ops::bias_add(a.x_mid, CF(p.bproj), N, D);
  ops::add_inplace(a.x_mid, a.x_in, N * D);
  ops::layernorm_forward(a.h2, a.mean2, a.rstd2, a.x_mid, CF(p.norm2_w), CF(p.norm2_b), N, D, eps);
  linear_forward(opt_.mode, a.f1, a.h2, a.h2_bf, p.wfc1, w16(&VisionBlockTensors::wfc1), N, Fv, D);
  lora(TowerSlot::Fc1, a.f1, a.h2);
  ops::bias_gelu_forward(a.act, a.f1, CF(p.bfc1), N, Fv, ops::Gelu::Tanh);
  linear_forward(opt_.mode, x_out, a.act, a.act_bf, p.wfc2, w16(&VisionBlockTensors::wfc2), N, D, Fv);
  lora(TowerSlot::Fc2, x_out, a.act);
  ops::bias_add(x_out, CF(p.bfc2), N, D);
  ops::add_inplace(x_out, a.x_mid, N * D);
}

void VisionTower::block_backward(int64_t b, BlockActs& a, const VisionBlockTensors* g, const LoraTensors* lg,
                                 bool need_dx) {
  GRPO_PROFILE("vision_block_backward");
  GRPO_CHECK(need_dx || !g, "[vision] a trained tower's block needs its input gradient");
  const int64_t N = N_, D = v_.hidden_size, Fv = v_.intermediate_size, H = v_.num_heads, hd = v_.head_dim();
  const VisionBlockTensors& p = w_.f32().vision.blocks[b];
  const VisionBlockTensors* pb = opt_.mode == ComputeMode::BF16 ? &w_.bf16().vision.blocks[b] : nullptr;
  auto w16 = [&](void* VisionBlockTensors::*m) { return pb ? pb->*m : nullptr; };
  // A frozen base (g null): no weight or bias gradients; the norms' go to a sink.
  auto GW = [&](void* VisionBlockTensors::*m) { return g ? F(g->*m) : nullptr; };
  float* const sink_w = s_.norm_sink;
  float* const sink_b = s_.norm_sink + std::max(D, v_.merged_dim());
  auto GN = [&](void* VisionBlockTensors::*m, float* sink) { return g ? F(g->*m) : sink; };
  auto bias_grad = [&](void* VisionBlockTensors::*m, const float* dy, int64_t n) {
    if (g) ops::bias_grad(F(g->*m), dy, N, n);
  };
  auto lora = [&](TowerSlot sl, float* dx, const float* dy, const float* x) {
    const int k = static_cast<int>(sl);
    lora_backward(lora_ ? lora_->tensors().tower[b][k] : kNoAdapter, lg ? &lg->tower[b][k] : nullptr,
                  tower_slot_shape(v_, sl), dx, dy, x, a.lora_u[k], N);
  };
  const VisionLayout& L = layout_;

  // MLP: s_.dx holds dL/dx_out on entry.
  linear_backward(opt_.mode, s_.dact, GW(&VisionBlockTensors::wfc2), s_.dx, a.act, a.act_bf, p.wfc2,
                  w16(&VisionBlockTensors::wfc2), N, D, Fv, s_.dy_bf);
  lora(TowerSlot::Fc2, s_.dact, s_.dx, a.act);
  bias_grad(&VisionBlockTensors::bfc2, s_.dx, D);
  ops::gelu_backward(s_.dact, GW(&VisionBlockTensors::bfc1), s_.dact, a.f1, N, Fv, ops::Gelu::Tanh);
  linear_backward(opt_.mode, s_.dtmp, GW(&VisionBlockTensors::wfc1), s_.dact, a.h2, a.h2_bf, p.wfc1,
                  w16(&VisionBlockTensors::wfc1), N, Fv, D, s_.dy_bf);
  lora(TowerSlot::Fc1, s_.dtmp, s_.dact, a.h2);
  ops::layernorm_backward(s_.dtmp, GN(&VisionBlockTensors::norm2_w, sink_w), GN(&VisionBlockTensors::norm2_b, sink_b),
                          s_.dtmp, a.x_mid, CF(p.norm2_w), a.mean2, a.rstd2, N, D, s_.ln_ws);
  ops::add_inplace(s_.dx, s_.dtmp, N * D);  // dL/dx_mid
  // Attention.
  linear_backward(opt_.mode, s_.dO, GW(&VisionBlockTensors::wproj), s_.dx, a.o, a.o_bf, p.wproj,
                  w16(&VisionBlockTensors::wproj), N, D, D, s_.dy_bf);
  lora(TowerSlot::Proj, s_.dO, s_.dx, a.o);
  bias_grad(&VisionBlockTensors::bproj, s_.dx, D);
  const int64_t S = static_cast<int64_t>(L.cu_seqlens.size()) - 1;
  ops::bidirectional_attention_backward(s_.dq, s_.dk, s_.dv, s_.dO, a.q, a.k, a.v, a.o, a.lse, L.cu_seqlens.data(), S,
                                        N, H, H, hd, 1.0f / std::sqrt(static_cast<float>(hd)), s_.attn_ws);
  ops::rope_rows_backward(s_.dq, L.rope_cos.data(), L.rope_sin.data(), N, H, hd);
  ops::rope_rows_backward(s_.dk, L.rope_cos.data(), L.rope_sin.data(), N, H, hd);
  merge_qkv(s_.dqkv, s_.dq, s_.dk, s_.dv, N, D, D);
  bias_grad(&VisionBlockTensors::bqkv, s_.dqkv, 3 * D);
  if (!need_dx) {  // the lowest block that trains (a frozen base): only its qkv adapter's gradient is left
    lora(TowerSlot::Qkv, nullptr, s_.dqkv, a.h1);
    return;
  }
  linear_backward(opt_.mode, s_.dtmp, GW(&VisionBlockTensors::wqkv), s_.dqkv, a.h1, a.h1_bf, p.wqkv,
                  w16(&VisionBlockTensors::wqkv), N, 3 * D, D, s_.dy_bf);
  lora(TowerSlot::Qkv, s_.dtmp, s_.dqkv, a.h1);
  ops::layernorm_backward(s_.dtmp, GN(&VisionBlockTensors::norm1_w, sink_w), GN(&VisionBlockTensors::norm1_b, sink_b),
                          s_.dtmp, a.x_in, CF(p.norm1_w), a.mean1, a.rstd1, N, D, s_.ln_ws);
  ops::add_inplace(s_.dx, s_.dtmp, N * D);  // dL/dx_in
}

void VisionTower::lora_forward(const LoraPair& p, LoraShape sh, float* y, const float* x, float* u, int64_t T) {
  if (!p.A) return;
  lora_linear_forward(y, sh.out, x, p.A, p.B, u, T, sh.out, sh.in, lora_->rank(), lora_->scale());
}

void VisionTower::lora_backward(const LoraPair& p, const LoraPair* gp, LoraShape sh, float* dx, const float* dy,
                                const float* x, const float* u, int64_t T) {
  if (!p.A) return;
  lora_linear_backward(dx, gp ? gp->A : nullptr, gp ? gp->B : nullptr, dy, sh.out, x, p.A, p.B, u, s_.lora_du, T,
                       sh.out, sh.in, lora_->rank(), lora_->scale());
}

void VisionTower::merger_forward(int64_t mi, const MergerTensors& p, const MergerTensors* pb, MergerActs& m,
                                 const float* in) {
  GRPO_PROFILE("vision_merger_forward");
  const int64_t Ng = Ng_, M = v_.merged_dim(), O = v_.out_hidden_size;
  const float eps = static_cast<float>(v_.layer_norm_eps);
  auto lora = [&](MergerSlot sl, float* y, const float* x) {
    const int k = static_cast<int>(sl);
    lora_forward(lora_ ? lora_->tensors().mergers[mi][k] : kNoAdapter, merger_slot_shape(v_, sl), y, x, m.lora_u[k], Ng);
  };
  if (mi == 0)
    ops::layernorm_forward(m.in_norm, m.mean, m.rstd, in, CF(p.norm_w), CF(p.norm_b), N_, v_.hidden_size, eps);
  else
    ops::layernorm_forward(m.in_norm, m.mean, m.rstd, in, CF(p.norm_w), CF(p.norm_b), Ng, M, eps);
  linear_forward(opt_.mode, m.f1, m.in_norm, m.in_bf, p.wfc1, pb ? pb->wfc1 : nullptr, Ng, M, M);
  lora(MergerSlot::Fc1, m.f1, m.in_norm);
  ops::bias_gelu_forward(m.act, m.f1, CF(p.bfc1), Ng, M, ops::Gelu::Erf);
  linear_forward(opt_.mode, m.out, m.act, m.act_bf, p.wfc2, pb ? pb->wfc2 : nullptr, Ng, O, M);
  lora(MergerSlot::Fc2, m.out, m.act);
  ops::bias_add(m.out, CF(p.bfc2), Ng, O);
  std::fill(m.dout, m.dout + Ng * O, 0.0f);
}

void VisionTower::merger_backward(int64_t mi, const MergerTensors& p, const MergerTensors* pb, const MergerTensors* g,
                                  const LoraTensors* lg, MergerActs& m, const float* in, float* dx) {
  GRPO_PROFILE("vision_merger_backward");
  const int64_t Ng = Ng_, M = v_.merged_dim(), O = v_.out_hidden_size;
  auto lora = [&](MergerSlot sl, float* din, const float* dy, const float* x) {
    const int k = static_cast<int>(sl);
    lora_backward(lora_ ? lora_->tensors().mergers[mi][k] : kNoAdapter, lg ? &lg->mergers[mi][k] : nullptr,
                  merger_slot_shape(v_, sl), din, dy, x, m.lora_u[k], Ng);
  };
  float* const sink_w = s_.norm_sink;
  float* const sink_b = s_.norm_sink + std::max(v_.hidden_size, M);
  linear_backward(opt_.mode, s_.dm_act, g ? F(g->wfc2) : nullptr, m.dout, m.act, m.act_bf, p.wfc2,
                  pb ? pb->wfc2 : nullptr, Ng, O, M, s_.dy_bf);
  lora(MergerSlot::Fc2, s_.dm_act, m.dout, m.act);
  if (g) ops::bias_grad(F(g->bfc2), m.dout, Ng, O);
  ops::gelu_backward(s_.dm_act, g ? F(g->bfc1) : nullptr, s_.dm_act, m.f1, Ng, M, ops::Gelu::Erf);
  linear_backward(opt_.mode, s_.dm_in, g ? F(g->wfc1) : nullptr, s_.dm_act, m.in_norm, m.in_bf, p.wfc1,
                  pb ? pb->wfc1 : nullptr, Ng, M, M, s_.dy_bf);
  lora(MergerSlot::Fc1, s_.dm_in, s_.dm_act, m.in_norm);
  float* dw = g ? F(g->norm_w) : sink_w;
  float* db = g ? F(g->norm_b) : sink_b;
  if (mi == 0) {
    ops::layernorm_backward(dx, dw, db, s_.dm_in, in, CF(p.norm_w), m.mean, m.rstd, N_, v_.hidden_size, s_.ln_ws);
  } else {
    ops::layernorm_backward(s_.dm_in, dw, db, s_.dm_in, in, CF(p.norm_w), m.mean, m.rstd, Ng, M, s_.ln_ws);
    ops::add_inplace(dx, s_.dm_in, Ng * M);
  }
}

namespace {

std::atomic<int64_t> g_forward_us{0}, g_backward_us{0}, g_forward_patches{0}, g_backward_patches{0};
std::atomic<double> g_forward_flops{0}, g_backward_flops{0};

// Adds the scope's microseconds and patch rows to the process-wide counters of vision_work().
class WorkTimer {
 public:
  WorkTimer(std::atomic<int64_t>& us, std::atomic<int64_t>& patches, int64_t rows)
      : us_(us), t0_(std::chrono::steady_clock::now()) {
    patches.fetch_add(rows, std::memory_order_relaxed);
  }
  ~WorkTimer() {
    const auto d = std::chrono::steady_clock::now() - t0_;
    us_.fetch_add(std::chrono::duration_cast<std::chrono::microseconds>(d).count(), std::memory_order_relaxed);
  }

 private:
  std::atomic<int64_t>& us_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace

VisionWork vision_work() {
  return {g_forward_us.load() * 1e-6,  g_backward_us.load() * 1e-6, g_forward_patches.load(),
          g_backward_patches.load(),   g_forward_flops.load(),      g_backward_flops.load()};
}

std::pair<double, double> vision_forward_flops(const VisionConfig& v, const std::vector<int32_t>& cu_seqlens) {
  const double D = v.hidden_size, F = v.intermediate_size, M = v.merged_dim(), O = v.out_hidden_size;
  const double N = cu_seqlens.empty() ? 0 : cu_seqlens.back();
  const double mergers = 1.0 + static_cast<double>(v.deepstack_visual_indexes.size());
  const double gemm = 2.0 * N * v.patch_dim() * D + v.depth * 2.0 * N * (3 * D * D + D * D + 2 * D * F) +
                      mergers * 2.0 * (N / v.merge_factor()) * (M * M + M * O);
  double pairs = 0;  // query-key pairs within the segments
  for (size_t i = 0; i + 1 < cu_seqlens.size(); ++i) {
    const double S = cu_seqlens[i + 1] - cu_seqlens[i];
    pairs += S * S;
  }
  return {gemm, v.depth * 4.0 * pairs * D};
}

void VisionTower::forward(const float* pixels, const std::vector<ImageGrid>& grids, const std::string& where) {
  GRPO_PROFILE("vision_forward");
  int64_t all_rows = 0;
  for (const ImageGrid& g : grids) all_rows += g.patches();
  const WorkTimer timer(g_forward_us, g_forward_patches, all_rows);
  int64_t rows = 0;
  for (const ImageGrid& g : grids) rows += g.patches();
  validate_image_grids(v_, grids, rows, where);
  GRPO_CHECK(rows > 0, "[vision] ", where, ": no pictures");
  make_vision_layout(v_, grids, &layout_);
  const auto [gemm_flops, attention_flops] = vision_forward_flops(v_, layout_.cu_seqlens);
  g_forward_flops.fetch_add(gemm_flops + attention_flops, std::memory_order_relaxed);
  N_ = rows;
  Ng_ = rows / v_.merge_factor();
  pixels_ = pixels;
  const size_t need = carve(/*dry_run=*/true);
  if (need > ws_.capacity()) ws_.reserve(need, cat("the vision tower's activations for ", rows, " patch rows"));
  ws_.reset();
  carve(/*dry_run=*/false);

  const int64_t N = N_, D = v_.hidden_size, Pd = v_.patch_dim();
  const VisionTensors& p = w_.f32().vision;
  const VisionTensors* pb = opt_.mode == ComputeMode::BF16 ? &w_.bf16().vision : nullptr;
  float* x = acts_[0].x_in;
  linear_forward(opt_.mode, x, pixels, s_.pix_bf, p.patch_w, pb ? pb->patch_w : nullptr, N, D, Pd);
  ops::bias_add(x, CF(p.patch_b), N, D);
  ops::bilinear_embed_forward(s_.pos, layout_.pos_index.data(), layout_.pos_weight.data(), CF(p.pos_embed), N,
                              v_.num_position_embeddings, D);
  ops::add_inplace(x, s_.pos, N * D);
  for (int64_t b = 0; b < v_.depth; ++b) {
    float* out = b + 1 < v_.depth ? acts_[b + 1].x_in : s_.x_final;
    if (hooks_) hooks_->vision_forward_block(b);
    block_forward(b, acts_[b], out);
    if (ds_after_block_[b] >= 0) {
      const int64_t k = ds_after_block_[b];
      merger_forward(1 + k, p.deepstack[k], pb ? &pb->deepstack[k] : nullptr, ds_[k], out);
    }
  }
  merger_forward(0, p.merger, pb ? &pb->merger : nullptr, main_, s_.x_final);
}

void VisionTower::backward(const VisionTensors* g, const LoraTensors* lg) {
  GRPO_PROFILE("vision_backward");
  GRPO_CHECK(N_ > 0, "[vision] backward() without forward()");
  GRPO_CHECK(!g || g->patch_w, "[vision] backward() into an arena without the vision tower");
  if (!lora_) lg = nullptr;
  GRPO_CHECK(g || lg, "[vision] backward() with neither the tower's weights nor adapters of it to train");
  const WorkTimer timer(g_backward_us, g_backward_patches, N_);
  // A frozen base: the blocks below the first adapted one have nothing to train (a DeepStack merger fed by
  // one of them still may).
  const int64_t stop = g ? 0 : lora_->first_tower_block();
  {
    const auto [gemm_flops, attention_flops] = vision_forward_flops(v_, layout_.cu_seqlens);
    const double D = v_.hidden_size, F = v_.intermediate_size;
    const double block_gemm = 2.0 * N_ * (4 * D * D + 2 * D * F), block_attention = attention_flops / v_.depth;
    const double blocks = static_cast<double>(v_.depth - stop);  // blocks backpropagated (and recomputed)
    const double recomputed = opt_.checkpoint_activations ? blocks * (block_gemm + block_attention) : 0.0;
    // A frozen base: the input-gradient GEMMs only (1x the forward's) of those blocks and the mergers.
    const double mergers_gemm = gemm_flops - 2.0 * N_ * v_.patch_dim() * D - v_.depth * block_gemm;
    const double backward = g ? 2.0 * gemm_flops + 2.5 * attention_flops
                              : blocks * (block_gemm + 2.5 * block_attention) + mergers_gemm;
    g_backward_flops.fetch_add(backward + recomputed, std::memory_order_relaxed);
  }
  const int64_t N = N_, D = v_.hidden_size, Pd = v_.patch_dim();
  const VisionTensors& p = w_.f32().vision;
  const VisionTensors* pb = opt_.mode == ComputeMode::BF16 ? &w_.bf16().vision : nullptr;
  auto merger_trains = [&](int64_t mi) {
    for (const LoraPair& q : lora_->tensors().mergers[mi])
      if (q.A) return true;
    return false;
  };
  merger_backward(0, p.merger, pb ? &pb->merger : nullptr, g ? &g->merger : nullptr, lg, main_, s_.x_final, s_.dx);
  for (int64_t b = v_.depth - 1; b >= 0; --b) {
    float* out = b + 1 < v_.depth ? acts_[b + 1].x_in : s_.x_final;
    if (ds_after_block_[b] >= 0) {
      const int64_t k = ds_after_block_[b];
      if (g || b >= stop || merger_trains(1 + k))
        merger_backward(1 + k, p.deepstack[k], pb ? &pb->deepstack[k] : nullptr, g ? &g->deepstack[k] : nullptr, lg,
                        ds_[k], out, s_.dx);
    }
    const bool run = b >= stop;
    if (opt_.checkpoint_activations) {
      GRPO_PROFILE("vision_recompute_block");
      if (hooks_) hooks_->vision_forward_block(b);
      if (run) block_forward(b, acts_[b], out);
    }
    if (hooks_) hooks_->vision_backward_block(b);
    if (run) block_backward(b, acts_[b], g ? &g->blocks[b] : nullptr, lg, /*need_dx=*/g || b > stop);
    if (hooks_) hooks_->vision_block_done(b);
  }
  if (!g) return;
  // Patch embedding (no gradient for the pixels) and the position table.
  linear_backward(opt_.mode, nullptr, F(g->patch_w), s_.dx, pixels_, s_.pix_bf, p.patch_w, pb ? pb->patch_w : nullptr,
                  N, D, Pd, s_.dy_bf);
  ops::bias_grad(F(g->patch_b), s_.dx, N, D);
  ops::bilinear_embed_backward(F(g->pos_embed), s_.dx, layout_.pos_index.data(), layout_.pos_weight.data(), N,
                               v_.num_position_embeddings, D);
}

void vision_hook_pass(DecoderHooks& hooks, int64_t depth, bool backward, bool checkpoint_activations) {
  if (!backward) {
    for (int64_t b = 0; b < depth; ++b) hooks.vision_forward_block(b);
    return;
  }
  for (int64_t b = depth - 1; b >= 0; --b) {
    if (checkpoint_activations) hooks.vision_forward_block(b);
    hooks.vision_backward_block(b);
    hooks.vision_block_done(b);
  }
}

}  // namespace grpo
