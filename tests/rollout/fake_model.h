// A small deterministic RolloutModel for the engine tests: random embeddings (+ a position signal), two
// attention layers over the paged KV cache (paged_kv_write + paged_attention, GQA 4:2) with residuals, and a
// fixed random projection to the vocabulary. Logits depend on the whole prefix through the cache, and every
// token's result is independent of the rest of the batch (gemv and paged attention are per row), so shared
// prefixes, the prefix cache, preemption and batch composition must all give bit-identical results.
// Also a toy detokenizer: token i is one lowercase letter, except two tokens that are halves of "é".
#pragma once
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "core/rng.h"
#include "kernels/paged_ops.h"
#include "rollout/engine.h"
#include "rollout/model_interface.h"

namespace grpo::rollout::fake {

class FakeModel : public RolloutModel {
 public:
  static constexpr int64_t V = 40, L = 2, K = 2, H = 4, D = 8, C = H * D;
  explicit FakeModel(int64_t block_size = 16, int64_t max_positions = 256, float logit_scale = 3.0f,
                     uint64_t seed = 7)
      : block_size_(block_size), max_pos_(max_positions), logit_scale_(logit_scale) {
    Rng rng(seed);
    auto fill = [&](std::vector<float>& w, int64_t n, float s) {
      w.resize(n);
      for (float& x : w) x = static_cast<float>(rng.normal()) * s;
    };
    fill(emb_, V * C, 1.0f);
    for (int64_t l = 0; l < L; ++l) {
      fill(wq_[l], C * C, 1.0f / std::sqrt(float(C)));
      fill(wk_[l], K * D * C, 1.0f / std::sqrt(float(C)));
      fill(wv_[l], K * D * C, 1.0f / std::sqrt(float(C)));
      fill(wo_[l], C * C, 1.0f / std::sqrt(float(C)));
    }
    fill(wout_, V * C, 1.0f / std::sqrt(float(C)));
  }
  int64_t vocab_size() const override { return V; }
  int64_t num_layers() const override { return L; }
  int64_t num_kv_heads() const override { return K; }
  int64_t head_dim() const override { return D; }
  int64_t max_positions() const override { return max_pos_; }
  size_t workspace_bytes(int64_t T, int64_t S) const override {
    return static_cast<size_t>((6 * T * C + ops::paged_attention_ws_floats(T, H, block_size_)) * 4 + 16 * 64);
  }
  void forward(const ForwardBatch& b, const ops::PagedKvView& kv, float* logits, Workspace& ws) override {
    ++forward_calls;
    const int64_t T = b.T;
    float* x = ws.take<float>(T * C, "fake x");          // [T, C]
    float* q = ws.take<float>(T * C, "fake q");          // [T, H, D]
    float* k = ws.take<float>(T * K * D, "fake k");      // [T, K, D]
    float* v = ws.take<float>(T * K * D, "fake v");      // [T, K, D]
    float* att = ws.take<float>(T * C, "fake att");      // [T, H, D]
    float* proj = ws.take<float>(T * C, "fake proj");    // [T, C]
    float* aws = ws.take<float>(ops::paged_attention_ws_floats(T, H, kv.block_size), "fake attention ws");
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < C; ++c)
        x[t * C + c] = emb_[b.tokens[t] * C + c] + 0.5f * std::sin(0.37f * (c + 1) * b.positions[t]);
    for (int64_t l = 0; l < L; ++l) {
      ops::gemv(q, x, wq_[l].data(), DType::F32, T, C, C);
      ops::gemv(k, x, wk_[l].data(), DType::F32, T, K * D, C);
      ops::gemv(v, x, wv_[l].data(), DType::F32, T, K * D, C);
      ops::paged_kv_write(kv, l, k, v, b.slots, T);
      ops::paged_attention(att, q, kv, l, b.block_table_indptr, b.block_table, b.seq_index, b.positions, T, b.S, H,
                           1.0f / std::sqrt(float(D)), aws);
      ops::gemv(proj, att, wo_[l].data(), DType::F32, T, C, C);
      for (int64_t i = 0; i < T * C; ++i) x[i] += proj[i];
    }
    float* rows = ws.take<float>(b.R * C, "fake rows");  // [R, C]
    for (int64_t r = 0; r < b.R; ++r)
      for (int64_t c = 0; c < C; ++c) rows[r * C + c] = x[b.logits_rows[r] * C + c];
    ops::gemv(logits, rows, wout_.data(), DType::F32, b.R, V, C);
    for (int64_t i = 0; i < b.R * V; ++i) logits[i] *= logit_scale_;
  }
  int64_t forward_calls = 0;

 private:
  int64_t block_size_, max_pos_;
  float logit_scale_;
  std::vector<float> emb_, wout_;
  std::vector<float> wq_[L], wk_[L], wv_[L], wo_[L];
};

// Token i < 26 is the letter 'a' + i; 26..35 are digits; 36 is a space; 37 and 38 are the two bytes of "é";
// 39 is "</s>". Bytes ending in an incomplete UTF-8 sequence decode to U+FFFD, like a real tokenizer.
inline std::string fake_decode(std::span<const int32_t> ids) {
  std::string s;
  for (int32_t t : ids) {
    if (t < 26) s += static_cast<char>('a' + t);
    else if (t < 36) s += static_cast<char>('0' + t - 26);
    else if (t == 36) s += ' ';
    else if (t == 37) s += '\xC3';
    else if (t == 38) s += '\xA9';
    else s += "</s>";
  }
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const bool lead = c == 0xC3, cont = c == 0xA9;
    if (lead && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0xA9) {
      out += s.substr(i, 2);
      ++i;
    } else if (lead || cont) {
      out += "\xEF\xBF\xBD";
    } else {
      out += s[i];
    }
  }
  return out;
}

// The engine tests' configuration: 4-token blocks, a KV budget of kv_bytes, 64 tokens and 16 sequences a step.
inline EngineConfig engine_config(int64_t kv_bytes = 4 << 20, bool prefix_cache = true) {
  EngineConfig c;
  c.block_size = 4;
  c.kv_memory_bytes = kv_bytes;
  c.prefix_cache = prefix_cache;
  c.token_budget = 64;
  c.max_seqs = 16;
  return c;
}

// Bytes of `blocks` KV blocks of FakeModel with 4-token f32 blocks.
inline int64_t bytes_of_blocks(int64_t blocks) {
  return blocks * 2 * FakeModel::L * FakeModel::K * 4 * FakeModel::D * 4;
}

}  // namespace grpo::rollout::fake
