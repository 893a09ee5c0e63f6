// Training-step benchmark (see train_bench.h).
#include "bench/train_bench.h"

#include <chrono>

#include "core/rng.h"
#include "train/actor.h"

namespace grpo::train {

double training_step_flops(const ModelConfig& c, const std::vector<int64_t>& seq_lens) {
  const double C = c.hidden_size, H = c.num_attention_heads, K = c.num_key_value_heads, D = c.head_dim,
               F = c.intermediate_size, V = c.vocab_size, L = c.num_hidden_layers;
  double T = 0, attn = 0;
  for (int64_t n : seq_lens) {
    T += n;
    attn += 2.0 * H * D * static_cast<double>(n) * (n + 1);  // QK^T and PV over the causal half
  }
  const double per_token_matmul = 2.0 * (C * (H * D + 2 * K * D) + H * D * C + 3 * C * F) * L + 2.0 * C * V;
  return 3.0 * (T * per_token_matmul + L * attn);
}

TrainBenchResult run_train_bench(ModelWeights& w, const TrainBenchOptions& opt) {
  GRPO_CHECK(opt.seq_len >= 2 && opt.tokens >= opt.seq_len, "[bench train] need tokens >= seq_len >= 2, got tokens ",
             opt.tokens, ", seq_len ", opt.seq_len);
  GRPO_CHECK(opt.seq_len <= w.config().max_position_embeddings, "[bench train] seq_len ", opt.seq_len,
             " exceeds max_position_embeddings ", w.config().max_position_embeddings);
  const int64_t S = opt.tokens / opt.seq_len, V = w.config().vocab_size;
  Rng rng(opt.seed);
  std::vector<TrainSample> samples(S);
  std::vector<int64_t> lens;
  for (TrainSample& s : samples) {
    s.tokens.resize(opt.seq_len);
    for (int32_t& t : s.tokens) t = static_cast<int32_t>(rng.below(V));
    s.prompt_len = 1;
    lens.push_back(opt.seq_len);
  }
  MicroBatching mb;
  mb.dynamic = true;
  mb.max_tokens = S * opt.seq_len;
  AdamWConfig adam;
  adam.lr = 1e-4f;
  std::unique_ptr<LoraAdapters> lora;
  if (opt.lora_rank > 0) {
    LoraConfig lc;
    lc.rank = opt.lora_rank;
    lc.alpha = 2.0 * static_cast<double>(opt.lora_rank);
    lc.target = ModuleSelector::from_json("all-linear", "bench train");
    lora = std::make_unique<LoraAdapters>(w.config(), lc, "bench train --lora-rank", /*vision_frozen=*/true);
    lora->init_default(opt.seed);
  }
  Actor actor(w, opt.decoder, mb, adam, nullptr, {}, /*freeze_vision_tower=*/lora != nullptr, lora.get());
  TrainBenchResult r;
  r.flop_per_step = training_step_flops(w.config(), lens);
  for (int i = 0; i < opt.warmup_steps; ++i) r.first_loss = actor.update_sft(samples, adam.lr).loss;
  if (opt.profile) {
    Profiler::clear();
    Profiler::enable(true);
  }
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < opt.steps; ++i) r.last_loss = actor.update_sft(samples, adam.lr).loss;
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (opt.profile) {
    Profiler::enable(false);
    r.profile = Profiler::summary();
  }
  r.seconds_per_step = secs / std::max(1, opt.steps);
  r.tokens_per_s = S * opt.seq_len / r.seconds_per_step;
  r.gflops = r.flop_per_step / r.seconds_per_step / 1e9;
  r.activation_bytes = actor.decoder().workspace_bytes();
  return r;
}

}  // namespace grpo::train
