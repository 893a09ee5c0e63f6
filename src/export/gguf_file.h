// A GGUF v3 file as llama.cpp reads it (the layout of docs/gguf.md): typed metadata key-value pairs,
// tensor infos (name, dims fastest first, ggml type, offset into the data section) and the data section,
// every tensor's data aligned to general.alignment (32). Tensors are given in f32 with their PyTorch
// shape and are encoded (f32, f16, bf16 or q8_0) one at a time while the file is written, so writing
// costs the model plus one encoded tensor.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/names.h"

namespace grpo::gguf {

// ggml tensor types (ggml.h's enum ggml_type) that the export writes.
enum class GgmlType : uint32_t { F32 = 0, F16 = 1, Q8_0 = 8, BF16 = 30 };
// The tensor types this export writes, by llama.cpp's names (also `grpo export --type`).
constexpr auto kGgmlTypeNames = name_table<GgmlType>(
    {{GgmlType::F32, "f32"}, {GgmlType::F16, "f16"}, {GgmlType::BF16, "bf16"}, {GgmlType::Q8_0, "q8_0"}});
// GGUF metadata value types (gguf.h's enum gguf_type), side by side.
// clang-format off
enum class ValueType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7, STRING = 8, ARRAY = 9, U64 = 10, I64 = 11,
  F64 = 12
};
// clang-format on

constexpr uint32_t kGgufVersion = 3;
constexpr uint32_t kDefaultAlignment = 32;
constexpr int64_t kQ8BlockSize = 32;   // values per q8_0 block
constexpr int64_t kQ8BlockBytes = 34;  // f16 scale + 32 int8

// Bytes of `numel` values of type t (numel a multiple of 32 for q8_0).
int64_t encoded_bytes(GgmlType t, int64_t numel);

// IEEE binary16 bits of f, rounded to nearest even (overflow to infinity, subnormals kept, NaN quiet).
uint16_t f32_to_f16(float f);
// q8_0 blocks of x[n] (n a multiple of 32), as ggml's reference quantizer: per block of 32 values
// d = max|x| / 127, q = round(x / d) (halves away from zero), stored as f16 d then 32 int8 q.
// out: [n / 32 blocks][34 bytes].
void quantize_q8_0(const float* x, int64_t n, uint8_t* out);
// Encodes x[n] as type t into out (encoded_bytes(t, n) bytes).
void encode(GgmlType t, const float* x, int64_t n, uint8_t* out);

class Writer {
 public:
  void add_u32(std::string_view key, uint32_t v);
  void add_i32(std::string_view key, int32_t v);
  void add_f32(std::string_view key, float v);
  void add_bool(std::string_view key, bool v);
  void add_string(std::string_view key, std::string_view v);
  void add_string_array(std::string_view key, const std::vector<std::string>& v);
  void add_i32_array(std::string_view key, const std::vector<int32_t>& v);

  // A tensor of PyTorch shape `shape` (slowest dim first; written reversed, as ggml's ne) whose f32 values
  // `data` must stay valid until write(). q8_0 needs the last dim (ggml's ne[0]) to be a multiple of 32.
  void add_tensor(std::string name, std::vector<int64_t> shape, GgmlType type, const float* data);
  // The same for values the writer keeps (a permuted copy).
  void add_tensor(std::string name, std::vector<int64_t> shape, GgmlType type, std::vector<float> values);

  // Writes the file atomically (temp file + rename); `path` names it in errors.
  void write(const std::string& path) const;
  int64_t kv_count() const { return kv_count_; }
  int64_t tensor_count() const { return static_cast<int64_t>(tensors_.size()); }

 private:
  struct Tensor {
    std::string name;
    std::vector<int64_t> shape;  // PyTorch order
    GgmlType type;
    const float* data;
    std::vector<float> owned;  // the values when the writer keeps them (data points here)
    int64_t numel() const;
  };
  void add_key(std::string_view key, ValueType type);

  std::string kv_;  // the serialized key-value pairs, in order
  int64_t kv_count_ = 0;
  std::vector<std::string> keys_;
  std::vector<Tensor> tensors_;
};

}  // namespace grpo::gguf
