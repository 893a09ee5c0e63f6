// Non-owning tensor views: data pointer, dtype, shape and strides (in elements, PyTorch order).
// Memory is owned by arenas (arena.h) or mapped files; views are passed by value.
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/dtype.h"
#include "core/error.h"

namespace grpo {

constexpr int kMaxDims = 5;  // 5: the Conv3d patch embedding [out, channels, frames, height, width]

struct Shape {
  int ndim = 0;
  std::array<int64_t, kMaxDims> dims{};

  Shape() = default;
  Shape(std::initializer_list<int64_t> d) {
    GRPO_CHECK(d.size() <= kMaxDims, "[tensor] at most ", kMaxDims, " dims, got ", d.size());
    for (int64_t v : d) dims[ndim++] = v;
  }
  int64_t operator[](int i) const { return dims[i]; }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= dims[i];
    return n;
  }
  bool operator==(const Shape& o) const {
    if (ndim != o.ndim) return false;
    for (int i = 0; i < ndim; ++i)
      if (dims[i] != o.dims[i]) return false;
    return true;
  }
  std::string str() const {
    std::string s = "[";
    for (int i = 0; i < ndim; ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
    return s + "]";
  }
};

struct TensorView {
  void* data = nullptr;
  DType dtype = DType::F32;
  Shape shape;
  std::array<int64_t, kMaxDims> strides{};  // elements

  TensorView() = default;
  TensorView(void* d, DType t, Shape s) : data(d), dtype(t), shape(s) {
    int64_t st = 1;
    for (int i = s.ndim - 1; i >= 0; --i) {
      strides[i] = st;
      st *= s.dims[i];
    }
  }
  int64_t numel() const { return shape.numel(); }
  int64_t nbytes() const { return numel() * dtype_size(dtype); }
  bool contiguous() const {
    int64_t st = 1;
    for (int i = shape.ndim - 1; i >= 0; --i) {
      if (shape.dims[i] != 1 && strides[i] != st) return false;
      st *= shape.dims[i];
    }
    return true;
  }
  template <typename T>
  T* as() const { return static_cast<T*>(data); }
  float* f32() const {
    GRPO_CHECK(dtype == DType::F32, "[tensor] expected f32, got ", dtype_name(dtype));
    return static_cast<float*>(data);
  }
};

}  // namespace grpo
