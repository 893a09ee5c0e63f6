// Benchmarks of the rollout kernels: small-batch GEMV vs ops::gemm (oneDNN) over the decode batch sizes
// B = 1..128 for the shapes N=1536,K=512 and N=512,K=1536 in f32 and bf16 (the crossover sets
// ops::gemv_max_batch), the gemv through 8 Qwen3-0.6B layers streaming from DRAM (B = 1, 16, 64, 512), a
// plain read of the same bytes for comparison, paged attention decode over f32 /
// bf16 / int8 caches (two model shapes) and the sampler's softmax numerators. Reported: bytes/s of weights
// (or KV, or logits) read and FLOP/s. Also the whole rollout engine on the 25M-parameter "small" Qwen3
// shape (random weights): generated tokens per second.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "core/arena.h"
#include "core/dtype.h"
#include "core/rng.h"
#include "kernels/measure.h"
#include "kernels/ops.h"
#include "kernels/paged_ops.h"
#include "model/presets.h"
#include "model/weights.h"
#include "rollout/decoder_model.h"
#include "rollout/engine.h"

#include "bench_util.h"

using namespace grpo;

namespace {

using grpo::bench::normal_floats;

// n values of T, 64-byte aligned as the engine's arenas and workspaces are (a std::vector this large comes
// from mmap, 16 bytes past a page boundary, so that half of its 32-byte loads would straddle cache lines).
template <typename T>
struct Aligned {
  Buffer buf;
  explicit Aligned(int64_t n) : buf(static_cast<size_t>(n) * sizeof(T), "a benchmark buffer") {}
  T* data() const { return static_cast<T*>(buf.data()); }
};

Aligned<float> random_aligned(int64_t n, uint64_t seed) {
  Aligned<float> a(n);
  const std::vector<float> v = normal_floats(n, seed);
  std::copy(v.begin(), v.end(), a.data());
  return a;
}

struct Weights {
  Aligned<float> f32;
  Aligned<bf16_t> bf16;
  Weights(int64_t N, int64_t K) : f32(random_aligned(N * K, 1)), bf16(N * K) {
    for (int64_t i = 0; i < N * K; ++i) bf16.data()[i] = f32_to_bf16(f32.data()[i]);
  }
  const void* data(DType t) const { return t == DType::BF16 ? static_cast<const void*>(bf16.data()) : f32.data(); }
};

void set_counters(benchmark::State& st, int64_t B, int64_t N, int64_t K, DType t) {
  const double bytes = static_cast<double>(N * K * dtype_size(t));
  st.counters["W_bytes/s"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["FLOP/s"] = benchmark::Counter(2.0 * B * N * K, benchmark::Counter::kIsIterationInvariantRate);
}

// args: B, N, K, dtype (0 f32, 1 bf16)
void BM_Gemv(benchmark::State& st) {
  const int64_t B = st.range(0), N = st.range(1), K = st.range(2);
  const DType t = st.range(3) ? DType::BF16 : DType::F32;
  Weights w(N, K);
  Aligned<float> x = random_aligned(B * K, 2), y(B * N);
  Aligned<bf16_t> xb(ops::gemv_x_scratch_elems(B, K));
  for (auto _ : st) {
    ops::gemv(y.data(), x.data(), w.data(t), t, B, N, K, xb.data());
    benchmark::DoNotOptimize(y.data());
  }
  set_counters(st, B, N, K, t);
}

// ops::gemm as decode_matmul calls it above the crossover (x converted to bf16 for bf16 weights).
void BM_GemmDecode(benchmark::State& st) {
  const int64_t B = st.range(0), N = st.range(1), K = st.range(2);
  const DType t = st.range(3) ? DType::BF16 : DType::F32;
  Weights w(N, K);
  Aligned<float> x = random_aligned(B * K, 2), y(B * N);
  Aligned<bf16_t> xb(B * K);
  for (auto _ : st) {
    if (t == DType::BF16) {
      ops::f32_to_bf16(xb.data(), x.data(), B * K);
      ops::gemm(ops::Trans::N, ops::Trans::T, B, N, K, 1.0f, xb.data(), K, w.data(t), K, 0.0f, y.data(), N, t);
    } else {
      ops::gemm(ops::Trans::N, ops::Trans::T, B, N, K, 1.0f, x.data(), K, w.data(t), K, 0.0f, y.data(), N, t);
    }
    benchmark::DoNotOptimize(y.data());
  }
  set_counters(st, B, N, K, t);
}

void DecodeShapes(benchmark::internal::Benchmark* b) {
  for (int64_t t : {0, 1})
    for (auto [N, K] : {std::pair<int64_t, int64_t>{1536, 512}, {512, 1536}})
      for (int64_t B : {1, 2, 4, 8, 16, 32, 64, 128}) b->Args({B, N, K, t});
  b->ArgNames({"B", "N", "K", "bf16"});
}
// One row against weights far larger than the caches (128 MiB in bf16, 256 MiB in f32): single-sequence
// decode's W_bytes/s, to hold against BM_PlainRead's DRAM rate.
void DramShapes(benchmark::internal::Benchmark* b) {
  for (int64_t t : {0, 1}) b->Args({1, 16384, 4096, t});
  b->ArgNames({"B", "N", "K", "bf16"});
}
// Decode at a real size: B rows through the four matmuls of 8 Qwen3-0.6B layers in turn (qkv [4096, 1024],
// o [1024, 2048], gate-up [6144, 1024], down [1024, 3072]; 252 MB in bf16), so that W streams from DRAM as in
// a model's decode step, not from a cache a repeated call would keep it in. B = 1 is bandwidth-bound, B = 16
// to 64 near both bounds, B = 512 (a prefill chunk of the engine's token budget) compute-bound.
void BM_GemvLayers(benchmark::State& st) {
  const int64_t B = st.range(0), layers = 8;
  const std::pair<int64_t, int64_t> shapes[] = {{4096, 1024}, {1024, 2048}, {6144, 1024}, {1024, 3072}};
  std::vector<Aligned<bf16_t>> w;
  int64_t params = 0;
  for (int64_t l = 0; l < layers; ++l)
    for (auto [N, K] : shapes) {
      w.emplace_back(N * K);
      std::fill_n(w.back().data(), N * K, f32_to_bf16(0.01f * static_cast<float>(l + 1)));
      params += N * K;
    }
  Aligned<float> x = random_aligned(B * 6144, 2), y(B * 6144);
  Aligned<bf16_t> xb(ops::gemv_x_scratch_elems(B, 6144));
  for (auto _ : st) {
    for (int64_t l = 0, i = 0; l < layers; ++l)
      for (auto [N, K] : shapes) ops::gemv(y.data(), x.data(), w[i++].data(), DType::BF16, B, N, K, xb.data());
    benchmark::DoNotOptimize(y.data());
  }
  st.counters["W_bytes/s"] = benchmark::Counter(2.0 * params, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["FLOP/s"] = benchmark::Counter(2.0 * B * params, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_GemvLayers)->Arg(1)->Arg(16)->Arg(64)->Arg(512)->ArgNames({"B"})->UseRealTime();
BENCHMARK(BM_Gemv)->Apply(DecodeShapes);
BENCHMARK(BM_Gemv)->Apply(DramShapes);
BENCHMARK(BM_GemmDecode)->Apply(DecodeShapes);

// A plain read (sum) of `bytes`: the bandwidth ceiling of GEMV at B=1 (3 MiB: the weights above, in cache;
// 256 MiB: DRAM).
void BM_PlainRead(benchmark::State& st) {
  const int64_t n = st.range(0) / 4;
  const Aligned<float> x = random_aligned(n, 3);
  for (auto _ : st) benchmark::DoNotOptimize(sum_for_bandwidth(x.data(), n));
  st.counters["bytes/s"] = benchmark::Counter(static_cast<double>(n * 4), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_PlainRead)->Arg(1536 * 512 * 4)->Arg(256 << 20);

// Decode attention: S sequences of `ctx` cached tokens, one query token each; heads H, kv heads K, head dim D
// (16, 8, 128: Qwen3-0.6B; 8, 4, 64: the small preset of `grpo bench rollout`).
void BM_PagedAttentionDecode(benchmark::State& st) {
  const int64_t S = st.range(0), ctx = st.range(1), bs = 16;
  const auto dt = static_cast<ops::KvDType>(st.range(2));
  const int64_t H = st.range(3), K = H / 2, D = st.range(4);
  const int64_t blocks_per_seq = (ctx + bs - 1) / bs, nblocks = S * blocks_per_seq;
  const int64_t elems = nblocks * K * bs * D;
  // the pool as the engine's is: an arena buffer (64-byte aligned, transparent huge pages where offered)
  const int64_t bytes = elems * ops::kv_dtype_size(dt);
  Aligned<uint8_t> k(bytes), v(bytes);
  std::vector<float> ks(nblocks * K * bs, 0.01f), vs(nblocks * K * bs, 0.01f);
  for (int64_t i = 0; i < bytes; ++i)
    k.data()[i] = v.data()[i] = static_cast<uint8_t>(i * 7 % 61);  // small finite values
  ops::PagedKvView kv{k.data(), v.data(), dt == ops::KvDType::I8 ? ks.data() : nullptr,
                      dt == ops::KvDType::I8 ? vs.data() : nullptr, dt, 1, nblocks, K, bs, D};
  std::vector<int32_t> indptr(S + 1), table(nblocks), seq(S), pos(S, static_cast<int32_t>(ctx - 1));
  std::iota(table.begin(), table.end(), 0);
  std::iota(seq.begin(), seq.end(), 0);
  for (int64_t s = 0; s <= S; ++s) indptr[s] = static_cast<int32_t>(s * blocks_per_seq);
  auto q = normal_floats(S * H * D, 4);
  std::vector<float> o(S * H * D), ws(ops::paged_attention_ws_floats(S, H, bs));
  for (auto _ : st) {
    ops::paged_attention(o.data(), q.data(), kv, 0, indptr.data(), table.data(), seq.data(), pos.data(), S, S, H,
                         0.088f, ws.data());
    benchmark::DoNotOptimize(o.data());
  }
  const double kv_bytes = 2.0 * S * ctx * K * D * ops::kv_dtype_size(dt);
  st.counters["KV_bytes/s"] = benchmark::Counter(kv_bytes, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["FLOP/s"] = benchmark::Counter(4.0 * S * ctx * H * D, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_PagedAttentionDecode)
    ->ArgsProduct({{1, 16, 64}, {512}, {0, 1, 2}, {16}, {128}})
    ->ArgsProduct({{16, 128}, {96}, {0, 1, 2}, {8}, {64}})
    ->ArgNames({"S", "ctx", "kv_dtype", "H", "D"});

// The sampler's softmax numerators over a vocabulary of V logits (Qwen3's 151,936 and the small preset's
// 384): bytes of logits read and numerators written.
void BM_SoftmaxNumerators(benchmark::State& st) {
  const int64_t V = st.range(0);
  auto x = normal_floats(V, 5);
  std::vector<float> p(V);
  for (auto _ : st) {
    const ops::SoftmaxRow row = ops::softmax_numerators(p.data(), x.data(), V, 1.0f);
    benchmark::DoNotOptimize(row.sum);
  }
  st.counters["bytes/s"] = benchmark::Counter(8.0 * V, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_SoftmaxNumerators)->Arg(384)->Arg(151936)->ArgNames({"V"});

// The engine end to end: args requests, n (samples per request), compute mode (0 f32, 1 bf16); prompts of
// 64 random tokens, 64 new tokens each, temperature 1. 128 x 1 is the llama.cpp comparison of
// performance-facts.md (~1,850 generated tokens/s); 16 x 8 is a GRPO group batch (prompt prefilled once).
void BM_RolloutEngine(benchmark::State& st) {
  const int64_t requests = st.range(0), n = st.range(1);
  const ComputeMode mode = st.range(2) ? ComputeMode::BF16 : ComputeMode::F32;
  ModelWeights weights(preset_config("qwen3", "small"));
  Rng rng(11);
  const TensorView flat = weights.params().flat();
  for (int64_t i = 0; i < flat.numel(); ++i) flat.f32()[i] = static_cast<float>(rng.normal() * 0.02);
  rollout::EngineConfig cfg;
  cfg.kv_memory_bytes = int64_t{1} << 30;
  cfg.token_budget = 1024;
  cfg.max_seqs = 128;
  rollout::DecoderRolloutModel model(weights, mode, cfg.block_size);
  rollout::Engine engine(model, cfg);
  std::vector<rollout::Request> reqs(requests);
  for (int64_t i = 0; i < requests; ++i) {
    for (int t = 0; t < 64; ++t) reqs[i].prompt.push_back(static_cast<int32_t>(rng.below(model.vocab_size())));
    reqs[i].n = static_cast<int32_t>(n);
    reqs[i].max_new_tokens = 64;
    reqs[i].id = static_cast<uint64_t>(i);
  }
  int64_t generated = 0;
  for (auto _ : st) {
    engine.clear_prefix_cache();
    engine.generate(reqs);
    generated += engine.stats().generated_tokens;
  }
  st.counters["generated_tokens/s"] = benchmark::Counter(static_cast<double>(generated), benchmark::Counter::kIsRate);
  st.counters["steps"] = static_cast<double>(engine.stats().steps);
}
BENCHMARK(BM_RolloutEngine)
    ->Args({128, 1, 0})
    ->Args({128, 1, 1})
    ->Args({16, 8, 1})
    ->ArgNames({"requests", "n", "bf16"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

}  // namespace
