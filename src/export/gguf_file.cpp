// GGUF v3 writing: the metadata, tensor infos and aligned data section of gguf_file.h, and the f16 and
// q8_0 encodings (bf16 is core/dtype.h's, round to nearest even).
#include "export/gguf_file.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "core/files.h"

namespace grpo::gguf {
namespace {

template <typename T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

void put_string(std::string& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  out.append(s);
}

int64_t align_up(int64_t n, int64_t a) { return (n + a - 1) / a * a; }

void write_bytes(std::FILE* f, const void* p, size_t n, const std::string& path) {
  if (n != 0 && std::fwrite(p, 1, n, f) != n) fail("[gguf] cannot write ", path, ": ", std::strerror(errno));
}

}  // namespace

int64_t encoded_bytes(GgmlType t, int64_t numel) {
  switch (t) {
    case GgmlType::F32:
      return numel * 4;
    case GgmlType::F16:
    case GgmlType::BF16:
      return numel * 2;
    case GgmlType::Q8_0:
      return numel / kQ8BlockSize * kQ8BlockBytes;
  }
  return 0;
}

uint16_t f32_to_f16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));  // quiet NaN
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 (and inf): infinity
  if (a >= 0x38800000u) {                                              // normal: >= 2^-14
    uint32_t v = a - (112u << 23);                                     // exponent bias 127 -> 15
    v += 0xfffu + ((v >> 13) & 1u);
    return static_cast<uint16_t>(sign | (v >> 13));
  }
  if (a <= 0x33000000u) return static_cast<uint16_t>(sign);  // <= 2^-25: zero (2^-25 ties to even 0)
  // Subnormal: the value is m 2^(e-150); in units of 2^-24 that is m >> (126 - e), rounded to even.
  const uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u, shift = 126 - e;
  uint32_t q = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1u))) ++q;
  return static_cast<uint16_t>(sign | q);
}

void quantize_q8_0(const float* x, int64_t n, uint8_t* out) {
  GRPO_CHECK(n % kQ8BlockSize == 0, "[gguf] q8_0 needs a multiple of 32 values, got ", n);
  for (int64_t b = 0; b < n / kQ8BlockSize; ++b) {
    const float* xb = x + b * kQ8BlockSize;  // [32]
    uint8_t* ob = out + b * kQ8BlockBytes;   // [2 bytes f16 d][32 int8]
    float amax = 0.0f;
    for (int64_t j = 0; j < kQ8BlockSize; ++j) amax = std::max(amax, std::fabs(xb[j]));
    const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t dh = f32_to_f16(d);
    std::memcpy(ob, &dh, 2);
    for (int64_t j = 0; j < kQ8BlockSize; ++j) {
      const auto q = static_cast<int8_t>(std::roundf(xb[j] * id));
      std::memcpy(ob + 2 + j, &q, 1);
    }
  }
}

void encode(GgmlType t, const float* x, int64_t n, uint8_t* out) {
  switch (t) {
    case GgmlType::F32:
      std::memcpy(out, x, static_cast<size_t>(n) * 4);
      return;
    case GgmlType::F16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_f16(x[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
      return;
    case GgmlType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        const bf16_t h = f32_to_bf16(x[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
      return;
    case GgmlType::Q8_0:
      quantize_q8_0(x, n, out);
      return;
  }
}

int64_t Writer::Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void Writer::add_key(std::string_view key, ValueType type) {
  GRPO_CHECK(std::find(keys_.begin(), keys_.end(), key) == keys_.end(), "[gguf] metadata key ", key, " added twice");
  keys_.emplace_back(key);
  put_string(kv_, key);
  put<uint32_t>(kv_, static_cast<uint32_t>(type));
  ++kv_count_;
}

void Writer::add_u32(std::string_view key, uint32_t v) {
  add_key(key, ValueType::U32);
  put(kv_, v);
}
void Writer::add_i32(std::string_view key, int32_t v) {
  add_key(key, ValueType::I32);
  put(kv_, v);
}
void Writer::add_f32(std::string_view key, float v) {
  add_key(key, ValueType::F32);
  put(kv_, v);
}
void Writer::add_bool(std::string_view key, bool v) {
  add_key(key, ValueType::BOOL);
  put<uint8_t>(kv_, v ? 1 : 0);
}
void Writer::add_string(std::string_view key, std::string_view v) {
  add_key(key, ValueType::STRING);
  put_string(kv_, v);
}
void Writer::add_string_array(std::string_view key, const std::vector<std::string>& v) {
  add_key(key, ValueType::ARRAY);
  put<uint32_t>(kv_, static_cast<uint32_t>(ValueType::STRING));
  put<uint64_t>(kv_, v.size());
  for (const auto& s : v) put_string(kv_, s);
}
void Writer::add_i32_array(std::string_view key, const std::vector<int32_t>& v) {
  add_key(key, ValueType::ARRAY);
  put<uint32_t>(kv_, static_cast<uint32_t>(ValueType::I32));
  put<uint64_t>(kv_, v.size());
  for (int32_t x : v) put(kv_, x);
}

void Writer::add_tensor(std::string name, std::vector<int64_t> shape, GgmlType type, const float* data) {
  GRPO_CHECK(!shape.empty() && shape.size() <= 4, "[gguf] tensor ", name, ": 1 to 4 dims expected, got ", shape.size());
  GRPO_CHECK(type != GgmlType::Q8_0 || shape.back() % kQ8BlockSize == 0, "[gguf] tensor ", name,
             ": q8_0 needs rows of a multiple of 32 values, got ", shape.back());
  for (const auto& t : tensors_) GRPO_CHECK(t.name != name, "[gguf] tensor ", name, " added twice");
  tensors_.push_back({std::move(name), std::move(shape), type, data, {}});
}

void Writer::add_tensor(std::string name, std::vector<int64_t> shape, GgmlType type, std::vector<float> values) {
  add_tensor(std::move(name), std::move(shape), type, nullptr);
  GRPO_CHECK(static_cast<int64_t>(values.size()) == tensors_.back().numel(), "[gguf] tensor ", tensors_.back().name,
             ": ", values.size(), " values for ", tensors_.back().numel(), " elements");
  tensors_.back().owned = std::move(values);
}

void Writer::write(const std::string& path) const {
  // Header, metadata and tensor infos; offsets are relative to the data section, each tensor aligned.
  std::string head = "GGUF";
  put<uint32_t>(head, kGgufVersion);
  put<uint64_t>(head, tensors_.size());
  put<uint64_t>(head, static_cast<uint64_t>(kv_count_));
  head += kv_;
  int64_t offset = 0;
  for (const auto& t : tensors_) {
    put_string(head, t.name);
    put<uint32_t>(head, static_cast<uint32_t>(t.shape.size()));
    for (auto d = t.shape.rbegin(); d != t.shape.rend(); ++d) put<uint64_t>(head, static_cast<uint64_t>(*d));
    put<uint32_t>(head, static_cast<uint32_t>(t.type));
    put<uint64_t>(head, static_cast<uint64_t>(offset));
    offset += align_up(encoded_bytes(t.type, t.numel()), kDefaultAlignment);
  }
  head.resize(static_cast<size_t>(align_up(static_cast<int64_t>(head.size()), kDefaultAlignment)), '\0');
  write_file_atomic_with(path, [&](std::FILE* f) {
    write_bytes(f, head.data(), head.size(), path);
    std::vector<uint8_t> buf;  // [encoded bytes of one tensor, padded to the alignment]
    for (const auto& t : tensors_) {
      const int64_t n = t.numel(), bytes = encoded_bytes(t.type, n);
      buf.assign(static_cast<size_t>(align_up(bytes, kDefaultAlignment)), 0);
      encode(t.type, t.owned.empty() ? t.data : t.owned.data(), n, buf.data());
      write_bytes(f, buf.data(), buf.size(), path);
    }
  });
}

}  // namespace grpo::gguf
