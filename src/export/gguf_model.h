// GGUF export of a Qwen3, Qwen2 or LLaMA text model for llama.cpp and Ollama: the architecture's
// hyper-parameter keys, the tensors under llama.cpp's names (token_embd, blk.N.attn_q, ..., output unless
// tied; LLaMA's q/k rows permuted to llama.cpp's interleaved RoPE pairs), and the folder's tokenizer.
// Tensor types as llama.cpp's converter chooses them: 1-D tensors and norms stay f32, the others take the
// requested type (f32, f16, bf16, q8_0; a q8_0 tensor whose rows are not a multiple of 32 falls back to f16).
#pragma once
#include <cstdint>
#include <string>

#include "export/gguf_file.h"
#include "model/config.h"
#include "model/weights.h"

namespace grpo::gguf {

// The type named on the command line: "f32", "f16", "bf16" or "q8_0".
GgmlType parse_file_type(const std::string& name);
// Refuses what the export does not write, saying what is missing (Qwen3-VL: llama.cpp's separate
// projector file; rope scaling other than linear). `source` names the model in the message.
void check_exportable(const ModelConfig& c, const std::string& source);
// llama.cpp's name of HF tensor `hf_name` of model c ("model.layers.3.mlp.up_proj.weight" -> "blk.3.ffn_up.weight").
std::string tensor_name(const ModelConfig& c, const std::string& hf_name);
// The type a tensor of `shape` named `gguf_name` gets in a file of type `file_type`.
GgmlType tensor_type(const std::string& gguf_name, const std::vector<int64_t>& shape, GgmlType file_type);
// LLaMA's q/k projection rows [heads * D, C] from HF's split-half RoPE order to llama.cpp's pairs: row
// (h, j * D/2 + i) moves to (h, 2i + j). out: [heads * D, C].
std::vector<float> permute_rope_rows(const float* w, int64_t heads, int64_t head_dim, int64_t cols);

struct ExportSummary {
  int64_t tensors = 0, kv = 0, quantized = 0, f16_fallback = 0;  // quantized: q8_0 tensors
};
// Writes `weights` and the tokenizer of tokenizer_dir (tokenizer.json, tokenizer_config.json) as the GGUF
// file `path` (atomically); `name` is general.name.
ExportSummary write_gguf(const ModelWeights& weights, const std::string& tokenizer_dir, const std::string& path,
                         GgmlType file_type, const std::string& name);

}  // namespace grpo::gguf
