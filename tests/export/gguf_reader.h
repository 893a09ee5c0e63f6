// Test helper: an independent GGUF v3 reader written from the specification (docs/gguf.md), not from the
// writer: header, typed metadata values, tensor infos, the aligned data section, and dequantization of
// f32 / f16 / bf16 / q8_0 data. Every structural rule it relies on is checked as it reads.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/files.h"

namespace grpo::test {

struct GgufValue {
  uint32_t type = 0;       // gguf value type (4 u32, 5 i32, 6 f32, 7 bool, 8 string, 9 array, ...)
  uint32_t elem_type = 0;  // arrays: the element type
  nlohmann::json value;    // numbers, bools, strings, or arrays of them
};

struct GgufTensorInfo {
  std::string name;
  std::vector<uint64_t> ne;  // ggml order: fastest dim first
  uint32_t type = 0;         // ggml type: 0 f32, 1 f16, 8 q8_0, 30 bf16
  uint64_t offset = 0;       // from the start of the data section
};

struct GgufContents {
  uint32_t version = 0;
  uint64_t alignment = 32;
  std::vector<std::string> key_order;
  std::map<std::string, GgufValue> kv;
  std::vector<GgufTensorInfo> tensors;
  uint64_t data_start = 0;
  std::string bytes;  // the whole file

  const GgufTensorInfo& tensor(const std::string& name) const {
    for (const auto& t : tensors)
      if (t.name == name) return t;
    throw std::runtime_error("no tensor " + name);
  }
  bool has_tensor(const std::string& name) const {
    for (const auto& t : tensors)
      if (t.name == name) return true;
    return false;
  }
};

inline uint64_t gguf_numel(const GgufTensorInfo& t) {
  uint64_t n = 1;
  for (uint64_t d : t.ne) n *= d;
  return n;
}

inline uint64_t gguf_nbytes(const GgufTensorInfo& t) {
  switch (t.type) {
    case 0:
      return gguf_numel(t) * 4;
    case 1:
    case 30:
      return gguf_numel(t) * 2;
    case 8:
      return gguf_numel(t) / 32 * 34;
  }
  ADD_FAILURE() << "tensor " << t.name << ": unexpected ggml type " << t.type;
  return 0;
}

class GgufCursor {
 public:
  explicit GgufCursor(const std::string& b) : b_(b) {}
  template <typename T>
  T get() {
    if (pos_ + sizeof(T) > b_.size()) throw std::runtime_error("read past the end at " + std::to_string(pos_));
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string str() {
    const auto n = get<uint64_t>();
    if (pos_ + n > b_.size()) throw std::runtime_error("string past the end at " + std::to_string(pos_));
    std::string s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  nlohmann::json scalar(uint32_t type) {
    switch (type) {
      case 0:
        return get<uint8_t>();
      case 1:
        return get<int8_t>();
      case 2:
        return get<uint16_t>();
      case 3:
        return get<int16_t>();
      case 4:
        return get<uint32_t>();
      case 5:
        return get<int32_t>();
      case 6:
        return get<float>();
      case 7: {
        const auto v = get<uint8_t>();
        if (v > 1) throw std::runtime_error("bool byte " + std::to_string(v));
        return v == 1;
      }
      case 8:
        return str();
      case 10:
        return get<uint64_t>();
      case 11:
        return get<int64_t>();
      case 12:
        return get<double>();
    }
    throw std::runtime_error("unknown value type " + std::to_string(type));
  }
  size_t pos() const { return pos_; }

 private:
  const std::string& b_;
  size_t pos_ = 0;
};

inline GgufContents read_gguf(const std::string& path) {
  GgufContents g;
  g.bytes = read_file(path);
  GgufCursor c(g.bytes);
  if (g.bytes.compare(0, 4, "GGUF") != 0) throw std::runtime_error("no GGUF magic");
  c.get<uint32_t>();
  g.version = c.get<uint32_t>();
  const auto n_tensors = c.get<uint64_t>(), n_kv = c.get<uint64_t>();
  for (uint64_t i = 0; i < n_kv; ++i) {
    const std::string key = c.str();
    GgufValue v;
    v.type = c.get<uint32_t>();
    if (v.type == 9) {
      v.elem_type = c.get<uint32_t>();
      const auto n = c.get<uint64_t>();
      v.value = nlohmann::json::array();
      for (uint64_t k = 0; k < n; ++k) v.value.push_back(c.scalar(v.elem_type));
    } else {
      v.value = c.scalar(v.type);
    }
    if (g.kv.count(key)) throw std::runtime_error("duplicate key " + key);
    g.key_order.push_back(key);
    g.kv[key] = v;
  }
  if (g.kv.count("general.alignment")) g.alignment = g.kv["general.alignment"].value.get<uint64_t>();
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo t;
    t.name = c.str();
    const auto nd = c.get<uint32_t>();
    for (uint32_t d = 0; d < nd; ++d) t.ne.push_back(c.get<uint64_t>());
    t.type = c.get<uint32_t>();
    t.offset = c.get<uint64_t>();
    g.tensors.push_back(t);
  }
  g.data_start = (c.pos() + g.alignment - 1) / g.alignment * g.alignment;
  return g;
}

inline float gguf_f16_to_f32(uint16_t h) {
  _Float16 f;
  std::memcpy(&f, &h, 2);
  return static_cast<float>(f);
}

// The tensor's values as f32 (ggml order: ne[0] fastest, i.e. PyTorch's row-major layout).
inline std::vector<float> gguf_values(const GgufContents& g, const GgufTensorInfo& t) {
  const char* p = g.bytes.data() + g.data_start + t.offset;
  std::vector<float> out(gguf_numel(t));
  for (size_t i = 0; i < out.size(); ++i) {
    if (t.type == 0) {
      std::memcpy(&out[i], p + 4 * i, 4);
    } else if (t.type == 1 || t.type == 30) {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      if (t.type == 1) {
        out[i] = gguf_f16_to_f32(h);
      } else {
        const uint32_t u = static_cast<uint32_t>(h) << 16;
        std::memcpy(&out[i], &u, 4);
      }
    } else if (t.type == 8) {
      const char* blk = p + (i / 32) * 34;
      uint16_t d;
      std::memcpy(&d, blk, 2);
      out[i] = gguf_f16_to_f32(d) * static_cast<float>(static_cast<int8_t>(blk[2 + i % 32]));
    }
  }
  return out;
}

}  // namespace grpo::test
