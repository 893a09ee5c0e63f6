// Kernels of the rollout engine: the paged KV cache (write, copy, attention over block tables), a
// small-batch GEMV for decode matmuls and the sampler's softmax numerators. Same conventions as ops.h (raw pointers, PyTorch order, no
// allocation: scratch comes from the caller).
//
// Paged KV cache storage (flashinfer / vLLM style), for every layer l:
//   k, v     [L, num_blocks, K, block_size, D]   elements of KvDType
//   k_scale, v_scale [L, num_blocks, K, block_size] f32 (int8 only: symmetric absmax per token and head,
//            value = int8 * scale)
// A token's slot is block_id * block_size + offset. A sequence's block table lists its block ids in
// order, so its position p lives in block table[p / block_size] at offset p % block_size. Block tables of
// a step are given in CSR form: indptr [S+1] into one array of block ids.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "core/dtype.h"
#include "core/names.h"

namespace grpo::ops {

enum class KvDType : uint8_t { F32, BF16, I8 };

constexpr int64_t kv_dtype_size(KvDType t) { return t == KvDType::F32 ? 4 : t == KvDType::BF16 ? 2 : 1; }
constexpr std::string_view kv_dtype_name(KvDType t) {
  return t == KvDType::F32 ? "f32" : t == KvDType::BF16 ? "bf16" : "int8";
}

// A plain view of the whole cache (all layers), passed by value.
struct PagedKvView {
  void* k = nullptr;  // [L, num_blocks, K, block_size, D]
  void* v = nullptr;  // [L, num_blocks, K, block_size, D]
  float* k_scale = nullptr;  // [L, num_blocks, K, block_size] (int8 only, else null)
  float* v_scale = nullptr;  // [L, num_blocks, K, block_size] (int8 only, else null)
  KvDType dtype = KvDType::F32;
  int64_t num_layers = 0, num_blocks = 0, num_kv_heads = 0, block_size = 0, head_dim = 0;

  int64_t num_slots() const { return num_blocks * block_size; }
  // Elements of one block (all kv heads) and of one layer.
  int64_t block_elems() const { return num_kv_heads * block_size * head_dim; }
  int64_t layer_elems() const { return num_blocks * block_elems(); }
  // Bytes of one block across all layers, k and v, scales included.
  int64_t bytes_per_block() const;
};

// Writes k, v [T, K, D] (f32) of layer `layer` into their slots [T] (each in [0, num_slots)), converting
// to the cache dtype (bf16 round-to-nearest-even; int8 symmetric absmax per token and head).
void paged_kv_write(const PagedKvView& kv, int64_t layer, const float* k, const float* v, const int32_t* slots,
                    int64_t T);

// Copies the first n_tokens slots of block src into block dst, every layer, k, v and scales
// (copy-on-write of a partly filled block shared by several sequences).
void paged_kv_copy_block(const PagedKvView& kv, int32_t src, int32_t dst, int64_t n_tokens);

// Attention of T query tokens over the paged cache of layer `layer`:
//   o[t,h,:] = sum_{p <= pos[t]} softmax_p(scale * q[t,h,:] . k_p) v_p
// where k_p, v_p are kv head h / (H/K) at position p of sequence seq_index[t] (blocks from
// block_table[indptr[s] .. indptr[s+1])). This covers decode (one token per sequence) and chunked
// prefill (a run of tokens whose k/v were written before the call). Online softmax over blocks, fp32
// math, bf16/int8 dequantised inside the dot products. Each (token, head) is computed by one thread in a
// fixed order, so results do not depend on the thread count or on the other tokens of the batch.
// q, o [T, H, D]; ws holds paged_attention_ws_floats(T, H, block_size) floats.
int64_t paged_attention_ws_floats(int64_t T, int64_t H, int64_t block_size);
void paged_attention(float* o, const float* q, const PagedKvView& kv, int64_t layer, const int32_t* block_table_indptr,
                     const int32_t* block_table, const int32_t* seq_index, const int32_t* positions, int64_t T,
                     int64_t S, int64_t H, float scale, float* ws);

// y [B, N] (=) = x [B, K] (f32) . W^T, W [N, K] in f32 or bf16 (w_dtype; then x is rounded to bf16 like
// ops::gemm's bf16 path, and pairs use avx512_bf16 dot products when present, or AMX tiles at the amx
// level: kernels/cpu/gemv_amx.h). Streams W once for all B rows (AMX, AVX-512 or AVX2 bodies): for the small
// batches of decode, where a GEMM's set-up and packing dominate. Every y[b, n] is summed in the same order
// whatever B and the thread count, so a row's result does not depend on the rest of the batch (at amx the
// tiles serve every batch size, B = 1 included, for that reason).
// x_scratch: gemv_x_scratch_elems(B, K) bf16 values, room for x in bf16, needed when W is bf16 (may be
// null when W is f32).
void gemv(float* y, const float* x, const void* W, DType w_dtype, int64_t B, int64_t N, int64_t K,
          bf16_t* x_scratch = nullptr);
// The bf16 elements of gemv's x_scratch for B rows of K: B x K rounded up to tiles of 16 rows and 32
// columns (the AMX body stages x there in tile order), at every level, so that workspaces do not depend on it.
int64_t gemv_x_scratch_elems(int64_t B, int64_t K);

// Largest batch for which gemv beats ops::gemm, per level and weight dtype (measured with
// bench_kernels_paged.cpp: docs/performance.md, "GEMV against oneDNN's GEMM").
constexpr int64_t kGemvMaxBatchF32Avx512 = 16;
constexpr int64_t kGemvMaxBatchBf16Avx512 = 32;
constexpr int64_t kGemvMaxBatchAvx2 = 32;  // f32 and bf16
int64_t gemv_max_batch(DType w_dtype);     // for the instruction set in use (amx: the AVX-512 values)

// How the rollout's matmuls run. BatchInvariant: gemv at every batch size, so a row's result never depends
// on the rest of the batch (the default: rollouts reproducible whatever the scheduling). Fastest: gemv up
// to gemv_max_batch, oneDNN above (rows then depend slightly on the batch size). OneDnn: ops::gemm always
// (the benchmarks' baseline).
enum class DecodeMatmul { BatchInvariant, Fastest, OneDnn };
inline constexpr auto kDecodeMatmulNames = name_table<DecodeMatmul>({{DecodeMatmul::BatchInvariant, "batch_invariant"},
                                                                     {DecodeMatmul::Fastest, "fastest"},
                                                                     {DecodeMatmul::OneDnn, "onednn"}});
DecodeMatmul parse_decode_matmul(const std::string& name);
const char* decode_matmul_name(DecodeMatmul how);

// The kernel decode_matmul runs for `how` at batch B with w_dtype weights at this process's level:
// "amx_tiles", "avx512_bf16_dot", "avx512_bf16_widened", "avx512_f32", "avx2_bf16_split", "avx2_f32",
// "onednn_bf16" or "onednn_f32" (at amx, the first call runs the tiles' self-check).
const char* decode_matmul_kernel(DType w_dtype, int64_t B, DecodeMatmul how);

// y [B, N] (=) = x [B, K] . W^T as `how` says; x_bf16 (gemv_x_scratch_elems(B, K) values) is scratch
// for x in bf16 when W is bf16 (may be null when W is f32).
void decode_matmul(float* y, const float* x, bf16_t* x_bf16, const void* W, DType w_dtype, int64_t B, int64_t N,
                   int64_t K, DecodeMatmul how = DecodeMatmul::BatchInvariant);

// Softmax numerators of one row of logits for sampling: mx = max_i x[i], p[i] = exp((x[i] - mx) * scale)
// (scale = 1 / temperature, finite and > 0; p[i] = 0 where the exponent is below -87, under f32's normal
// range), computed in the same vector lanes wherever the row ends. Returns mx, the first index holding it and
// sum_i p[i] (accumulated in double). NaN logits, or no finite maximum, throw a grpo::Error naming them.
struct SoftmaxRow {
  float max;
  int64_t argmax;
  double sum;
};
SoftmaxRow softmax_numerators(float* p, const float* x, int64_t n, float scale);

}  // namespace grpo::ops
