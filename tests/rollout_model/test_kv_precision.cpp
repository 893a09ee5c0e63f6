// bf16 and int8 KV caches against the f32 cache on a real (small, random) model: the mean KL divergence
// of the next-token distributions over generated positions, teacher-forced on the f32 greedy
// continuation so that every cache sees the same tokens.
//
// Why the bounds: bf16 stores k and v with 8 mantissa bits (relative rounding error <= 2^-9), int8 with
// a per-(token, head) absmax scale (error <= max|x| / 254 per element). Both perturb attention scores and
// outputs by a small relative amount delta, and the KL divergence between two softmaxes whose logits
// differ by O(delta) is O(delta^2): for the ~1e-3 relative errors here that is ~1e-6, far below the
// ~1e-3 of llama.cpp's q8_0 cache. Measured on the reference models: bf16 ~1e-6, int8 ~1e-5; we bound bf16
// by 1e-5 and int8 by 1e-4 (about 8x margin) and print what we measured.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "core/arena.h"
#include "model/infer.h"
#include "test_util.h"

using namespace grpo;

namespace {

using grpo::test::kReferenceModels;

// One sequence over a private paged cache: prefill, then one token per step; returns logits per step.
class SingleSequence {
 public:
  SingleSequence(ModelWeights& w, ops::KvDType dtype, int64_t max_tokens) : model_(w, ComputeMode::F32) {
    const ModelConfig& c = w.config();
    kv_.dtype = dtype;
    kv_.num_layers = c.num_hidden_layers;
    kv_.num_kv_heads = c.num_key_value_heads;
    kv_.head_dim = c.head_dim;
    kv_.block_size = 16;
    kv_.num_blocks = (max_tokens + 15) / 16;
    const int64_t elems = kv_.num_layers * kv_.layer_elems();
    k_ = Buffer(elems * ops::kv_dtype_size(dtype));
    v_ = Buffer(elems * ops::kv_dtype_size(dtype));
    kv_.k = k_.data();
    kv_.v = v_.data();
    if (dtype == ops::KvDType::I8) {
      ks_ = Buffer(elems / c.head_dim * sizeof(float));
      vs_ = Buffer(elems / c.head_dim * sizeof(float));
      kv_.k_scale = static_cast<float*>(ks_.data());
      kv_.v_scale = static_cast<float*>(vs_.data());
    }
    for (int32_t b = 0; b < kv_.num_blocks; ++b) table_.push_back(b);
    ws_.reserve(model_.workspace_bytes(max_tokens, 1, kv_.block_size));
    V_ = c.vocab_size;
  }
  // Feeds tokens (at positions len_.. len_+n) and returns the logits after the last one.
  std::vector<float> feed(const std::vector<int32_t>& tokens) {
    const int64_t T = tokens.size();
    std::vector<int32_t> pos(T), seq(T, 0), slots(T);
    for (int64_t t = 0; t < T; ++t) pos[t] = slots[t] = static_cast<int32_t>(len_ + t);
    int32_t indptr[2] = {0, static_cast<int32_t>(table_.size())};
    int32_t row = static_cast<int32_t>(T - 1);
    InferStep st{tokens.data(), pos.data(), seq.data(), slots.data(), T, 1, indptr, table_.data(), &row, 1};
    std::vector<float> logits(V_);
    ws_.reset();
    model_.forward(st, kv_, logits.data(), ws_);
    len_ += T;
    return logits;
  }

 private:
  InferenceModel model_;
  ops::PagedKvView kv_;
  Buffer k_, v_, ks_, vs_;
  std::vector<int32_t> table_;
  Workspace ws_;
  int64_t len_ = 0, V_ = 0;
};

std::vector<double> softmax(const std::vector<float>& z) {
  double m = *std::max_element(z.begin(), z.end()), s = 0;
  std::vector<double> p(z.size());
  for (size_t i = 0; i < z.size(); ++i) s += p[i] = std::exp(z[i] - m);
  for (double& v : p) v /= s;
  return p;
}

double kl(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<double> p = softmax(a), q = softmax(b);
  double d = 0;
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] > 0) d += p[i] * (std::log(p[i]) - std::log(q[i]));
  return d;
}

double mean_kl(const std::string& model, ops::KvDType dtype) {
  auto w = ModelWeights::load(kReferenceModels + model);
  std::vector<int32_t> prompt = {1, 5, 9, 2, 7, 3, 3, 8, 20, 11, 42, 17, 4, 4, 90, 2, 33};
  const int steps = 40;
  SingleSequence ref(*w, ops::KvDType::F32, prompt.size() + steps + 1), other(*w, dtype, prompt.size() + steps + 1);
  std::vector<float> a = ref.feed(prompt), b = other.feed(prompt);
  double total = 0;
  for (int s = 0; s < steps; ++s) {
    total += kl(a, b);
    int32_t next = static_cast<int32_t>(std::max_element(a.begin(), a.end()) - a.begin());
    a = ref.feed({next});
    b = other.feed({next});
  }
  return total / steps;
}

TEST(KvPrecision, Bf16AndInt8StayCloseToF32) {
  for (std::string m : {"qwen3", "qwen2"}) {
    double kb = mean_kl(m, ops::KvDType::BF16), ki = mean_kl(m, ops::KvDType::I8);
    std::printf("%s: mean KL to the f32 cache over 40 generated positions: bf16 %.3g, int8 %.3g\n", m.c_str(), kb, ki);
    EXPECT_LT(kb, 1e-5) << m;
    EXPECT_LT(ki, 1e-4) << m;
    EXPECT_GT(ki, 0.0) << m << ": int8 identical to f32 means the cache dtype was not used";
  }
}

}  // namespace
