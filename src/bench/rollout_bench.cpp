// Rollout benchmark (see rollout_bench.h).
#include "bench/rollout_bench.h"

#include <algorithm>

#include "core/rng.h"
#include "rollout/decoder_model.h"

namespace grpo::rollout {

RolloutBenchResult run_rollout_bench(ModelWeights& w, const RolloutBenchOptions& opt, bool optimised) {
  const ModelConfig& c = w.config();
  GRPO_CHECK(opt.prompts >= 1 && opt.n >= 1 && opt.prompt_len >= 1 && opt.max_new_tokens >= 1,
             "[bench rollout] prompts, n, prompt length and new tokens must be >= 1");
  GRPO_CHECK(opt.prompt_len + opt.max_new_tokens <= c.max_position_embeddings, "[bench rollout] prompt length + ",
             "new tokens exceed the model's context of ", c.max_position_embeddings);
  Rng rng(opt.seed);
  std::vector<Request> reqs;
  for (int64_t p = 0; p < opt.prompts; ++p) {
    Request r;
    for (int64_t t = 0; t < opt.prompt_len; ++t) r.prompt.push_back(static_cast<int32_t>(rng.below(c.vocab_size)));
    r.sampling.temperature = 1.0f;
    r.max_new_tokens = static_cast<int32_t>(opt.max_new_tokens);
    r.seed = opt.seed;
    if (optimised) {  // one request with n samples: the prompt is prefilled once and shared
      r.n = static_cast<int32_t>(opt.n);
      r.id = p;
      reqs.push_back(std::move(r));
    } else {  // n separate requests: each sample prefills its own copy of the prompt
      for (int64_t k = 0; k < opt.n; ++k) {
        Request q = r;
        q.id = p * opt.n + k;
        reqs.push_back(std::move(q));
      }
    }
  }
  EngineConfig ec;
  ec.kv_dtype = optimised ? (opt.mode == ComputeMode::BF16 ? ops::KvDType::BF16 : ops::KvDType::F32) : ops::KvDType::F32;
  ec.prefix_cache = optimised;
  ec.continuous_batching = optimised;
  ec.max_seqs = opt.prompts * opt.n;
  ec.token_budget = std::max<int64_t>(512, ec.max_seqs);
  const int64_t seq_blocks = (opt.prompt_len + opt.max_new_tokens + ec.block_size - 1) / ec.block_size + 1;
  const int64_t bytes_per_token =
      2 * c.num_hidden_layers * c.num_key_value_heads * c.head_dim * ops::kv_dtype_size(ec.kv_dtype);
  ec.kv_memory_bytes = ec.max_seqs * seq_blocks * ec.block_size * bytes_per_token;
  DecoderRolloutModel model(w, opt.mode, ec.block_size, optimised ? opt.matmul : ops::DecodeMatmul::OneDnn);
  if (optimised) model.set_lora(opt.lora);
  Engine engine(model, ec);
  RolloutBenchResult r;
  const KvCache& kv = engine.kv_cache();
  const int64_t block_bytes = kv.view().bytes_per_block();
  auto track = [&](const Progress&) {
    int64_t used = 0, shared = 0;
    for (int32_t b = 0; b < kv.num_blocks(); ++b) {
      used += kv.ref_count(b) > 0;
      shared += kv.ref_count(b) > 1;
    }
    r.kv_bytes = std::max(r.kv_bytes, used * block_bytes);
    r.blocks_shared = std::max(r.blocks_shared, shared);
    return true;
  };
  engine.generate(reqs, track);
  const EngineStats& st = engine.stats();
  r.seconds = st.elapsed_s;
  r.generated = st.generated_tokens;
  r.prefilled = st.prefill_tokens;
  r.gen_tokens_per_s = r.generated / std::max(1e-9, r.seconds);
  r.prefill_tokens_per_s = r.prefilled / std::max(1e-9, st.prefill_s);
  const int64_t first_tokens = std::min(r.generated, opt.prompts * opt.n);
  r.decode_tokens_per_s = static_cast<double>(r.generated - first_tokens) / std::max(1e-9, r.seconds - st.prefill_s);
  return r;
}

int64_t decode_weight_bytes(const ModelWeights& w, ComputeMode mode) {
  const ModelConfig& c = w.config();
  const int64_t C = c.hidden_size, Q = c.num_attention_heads * c.head_dim, KV = c.num_key_value_heads * c.head_dim,
                F = c.intermediate_size, V = c.vocab_size;
  const int64_t wsize = mode == ComputeMode::BF16 ? 2 : 4, f32 = 4;
  int64_t per_layer = ((Q + 2 * KV) * C + C * Q + 2 * F * C + C * F) * wsize  // wqkv, wo, wgu, wdown
                      + 2 * C * f32;                                          // attn_norm, mlp_norm
  if (c.qkv_bias) per_layer += (Q + 2 * KV) * f32;
  if (c.qk_norm) per_layer += 2 * c.head_dim * f32;
  return c.num_hidden_layers * per_layer + C * f32  // final norm
         + V * C * wsize                             // lm_head (the embedding table when tied)
         + C * f32;                                  // the input embedding's row of the token
}

double matmul_flops_per_token(const ModelConfig& c) {
  const double C = static_cast<double>(c.hidden_size), Q = static_cast<double>(c.num_attention_heads * c.head_dim),
               KV = static_cast<double>(c.num_key_value_heads * c.head_dim),
               F = static_cast<double>(c.intermediate_size), V = static_cast<double>(c.vocab_size);
  const double per_layer = (Q + 2 * KV) * C + C * Q + 3 * F * C;  // wqkv, wo, gate + up, down
  return 2 * (static_cast<double>(c.num_hidden_layers) * per_layer + V * C);
}

Roofline generation_roofline(int64_t weight_bytes, double flops_per_token, double bandwidth_bytes_per_s,
                             double gemm_peak_flops_per_s, int64_t batch) {
  const double read_s = static_cast<double>(weight_bytes) / bandwidth_bytes_per_s,
               compute_s = static_cast<double>(batch) * flops_per_token / gemm_peak_flops_per_s;
  Roofline r;
  r.decode_compute_bound = compute_s > read_s;
  r.decode_tokens_per_s = static_cast<double>(batch) / std::max(read_s, compute_s);
  r.prefill_tokens_per_s = gemm_peak_flops_per_s / flops_per_token;
  return r;
}

}  // namespace grpo::rollout
