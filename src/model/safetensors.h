// safetensors files (Hugging Face weights format): a memory-mapped reader that validates the whole header
// on open (exact tiling of the data, sizes, dtypes, duplicate names, UTF-8) and an atomic writer that pads
// the header to 8 bytes and places larger dtypes first so every tensor's data is aligned.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/files.h"

namespace grpo {

enum class StDType { BOOL, U8, I8, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64, F8_E4M3, F8_E5M2 };

int64_t st_dtype_size(StDType t);              // bytes per element
std::string_view st_dtype_name(StDType t);     // "F32", "BF16", ... as written in the header
bool st_dtype_from_name(std::string_view name, StDType* out);  // false for an unknown name

struct StTensor {
  std::string name;
  StDType dtype;
  std::vector<int64_t> shape;  // PyTorch order; empty for a rank-0 tensor
  const uint8_t* data;         // little-endian, C order; not necessarily aligned (use memcpy)
  size_t nbytes;
};

int64_t st_numel(const std::vector<int64_t>& shape);  // 1 for rank 0
std::string st_shape_str(const std::vector<int64_t>& shape);  // "[3, 4]"

class SafetensorsFile {
 public:
  // Maps the file and validates it; errors name the file and the offending tensor/field.
  static SafetensorsFile open(const std::string& path);
  // Validates `bytes` in place (no copy: the bytes must outlive the result). `name` is used in errors.
  static SafetensorsFile parse(const uint8_t* bytes, size_t size, const std::string& name);

  // Tensors in data-offset order (the order of their bytes in the file).
  const std::vector<StTensor>& tensors() const { return tensors_; }
  const StTensor* find(const std::string& name) const;
  // Bytes of the file [p, p + bytes) (a tensor's, or part of them), once read, leave the resident set
  // (MappedFile::release; no-op for parsed bytes).
  void release(const uint8_t* p, size_t bytes) const { map_.release(p, bytes); }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile map_;
  std::string path_;
  std::vector<StTensor> tensors_;
  std::unordered_map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

struct StTensorOut {
  std::string name;
  StDType dtype;
  std::vector<int64_t> shape;
  const void* data;  // numel * dtype size bytes, little-endian C order
};

// Atomic (temp + fsync + rename), larger dtypes first, header padded with spaces to a multiple of 8.
void write_safetensors(const std::string& path, const std::vector<StTensorOut>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// Streaming form for writers that produce each tensor's bytes on the fly (e.g. converting f32 to bf16):
// `fill(i, f)` must write exactly the bytes of tensors[i] (its data field is ignored) into f.
void write_safetensors_with(const std::string& path, const std::vector<StTensorOut>& tensors,
                            const std::map<std::string, std::string>& metadata,
                            const std::function<void(size_t, std::FILE*)>& fill);

// Converts F32/BF16/F16 data to f32 (checks numel); names file + tensor in errors.
void tensor_to_f32(const StTensor& t, float* dst, int64_t numel, const std::string& file);
// Elements [first, first + count) of the tensor (in its C order) to f32, for loaders that convert a large
// tensor piece by piece.
void tensor_range_to_f32(const StTensor& t, int64_t first, int64_t count, float* dst, const std::string& file);

// IEEE half -> float (exact).
float f16_to_f32(uint16_t h);

}  // namespace grpo
