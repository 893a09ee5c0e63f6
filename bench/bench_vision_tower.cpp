// Google Benchmark of the whole Qwen3-VL vision tower, forward + backward, at Qwen3-VL-8B's tower width
// (hidden 1152, 16 heads of 72, ffn 4304, mergers 4608 -> 4096) with 2 blocks (one feeding a DeepStack
// merger; a block's cost is what the 27 of the real tower repeat) on one 512x512 picture (1024 patch rows),
// f32 (Arg 0) or bf16 GEMM inputs (Arg 1; emulated through f32 GEMMs below avx512_bf16, kernels/backend.h). Reports patches/s and GFLOP/s (GEMMs and attention counted
// analytically: forward 1x, backward 2x for GEMMs and 2.5x for attention); BM_TowerGemmPeak measures, in
// the same run, ops::gemm alone on the tower's largest GEMM (1024 x 4304 x 1152), the peak to compare with.
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "core/rng.h"
#include "kernels/ops.h"
#include "model/init.h"
#include "model/vision.h"

namespace {

constexpr int64_t kSide = 32;  // patches per side of the picture: 32 x 32 = 1024 rows

grpo::ModelConfig tower_config() {
  const nlohmann::json j = {
      {"architectures", {"Qwen3VLForConditionalGeneration"}},
      {"model_type", "qwen3_vl"},
      {"image_token_id", 263},
      {"video_token_id", 264},
      {"vision_start_token_id", 261},
      {"vision_end_token_id", 262},
      {"text_config",
       {{"vocab_size", 384}, {"hidden_size", 4096}, {"intermediate_size", 64}, {"num_hidden_layers", 1},
        {"num_attention_heads", 32}, {"num_key_value_heads", 8}, {"head_dim", 128}}},
      {"vision_config",
       {{"depth", 2}, {"hidden_size", 1152}, {"num_heads", 16}, {"intermediate_size", 4304}, {"out_hidden_size", 4096},
        {"num_position_embeddings", 2304}, {"deepstack_visual_indexes", {1}}}}};
  return grpo::parse_model_config(j, "bench tower");
}

// Forward FLOPs of the tower on N patch rows in segments of S (GEMMs, attention).
std::pair<double, double> tower_flops(const grpo::VisionConfig& v, int64_t N, int64_t S) {
  const double D = v.hidden_size, F = v.intermediate_size, M = v.merged_dim(), O = v.out_hidden_size;
  const double mergers = 1.0 + static_cast<double>(v.deepstack_visual_indexes.size());
  const double gemm = 2.0 * N * v.patch_dim() * D + v.depth * 2.0 * N * (3 * D * D + D * D + 2 * D * F) +
                      mergers * 2.0 * (N / 4.0) * (M * M + M * O);
  const double attention = v.depth * 4.0 * N * S * D;
  return {gemm, attention};
}

struct Tower {
  std::unique_ptr<grpo::ModelWeights> w = std::make_unique<grpo::ModelWeights>(tower_config());
  grpo::Arena grads{grpo::DType::F32};
  grpo::ModelTensors g;
  std::vector<float> pixels;
  std::vector<grpo::ImageGrid> grids{{1, kSide, kSide}};
  Tower() {
    grpo::init_parameters(*w, 1);
    grpo::declare_parameters(w->config(), grads);
    grads.allocate();
    g = grpo::resolve_tensors(w->config(), grads);
    grpo::Rng rng(2);
    pixels.resize(kSide * kSide * w->config().vision.patch_dim());
    for (float& p : pixels) p = static_cast<float>(rng.uniform()) * 2.0f - 1.0f;
  }
};

void BM_VisionTowerForwardBackward(benchmark::State& state) {
  const bool bf16 = state.range(0) == 1;
  Tower t;
  grpo::VisionTower tower(*t.w, {bf16 ? grpo::ComputeMode::BF16 : grpo::ComputeMode::F32, false});
  const int64_t N = kSide * kSide, O = t.w->config().vision.out_hidden_size;
  for (auto _ : state) {
    tower.forward(t.pixels.data(), t.grids, "bench");
    std::fill_n(tower.image_embeds_grad(), tower.merged_rows() * O, 1e-3f);
    std::fill_n(tower.deepstack_grad(0), tower.merged_rows() * O, 1e-3f);
    tower.backward(&t.g.vision, /*lora_grads=*/nullptr);
    benchmark::ClobberMemory();
  }
  const auto [gemm, attention] = tower_flops(t.w->config().vision, N, N);
  state.counters["patches/s"] = benchmark::Counter(static_cast<double>(N * state.iterations()), benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] = benchmark::Counter((3.0 * gemm + 3.5 * attention) * 1e-9 * state.iterations(),
                                                 benchmark::Counter::kIsRate);
  state.counters["attention_share"] = 3.5 * attention / (3.0 * gemm + 3.5 * attention);
}

void BM_TowerGemmPeak(benchmark::State& state) {
  const bool bf16 = state.range(0) == 1;
  const int64_t M = kSide * kSide, N = 4304, K = 1152;
  grpo::Rng rng(3);
  std::vector<float> a(M * K), b(N * K), c(M * N);
  for (float& x : a) x = static_cast<float>(rng.normal());
  for (float& x : b) x = static_cast<float>(rng.normal());
  std::vector<grpo::bf16_t> a16(M * K), b16(N * K);
  grpo::ops::f32_to_bf16(a16.data(), a.data(), M * K);
  grpo::ops::f32_to_bf16(b16.data(), b.data(), N * K);
  const void* A = bf16 ? static_cast<const void*>(a16.data()) : a.data();
  const void* B = bf16 ? static_cast<const void*>(b16.data()) : b.data();
  for (auto _ : state) {
    grpo::ops::gemm(grpo::ops::Trans::N, grpo::ops::Trans::T, M, N, K, 1.0f, A, K, B, K, 0.0f, c.data(), N,
                    bf16 ? grpo::DType::BF16 : grpo::DType::F32);
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * M * N * K * 1e-9 * state.iterations(), benchmark::Counter::kIsRate);
}

}  // namespace

BENCHMARK(BM_TowerGemmPeak)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_VisionTowerForwardBackward)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
