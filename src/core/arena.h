// Arenas: one flat, 64-byte aligned allocation holding many named tensors (parameters, gradients,
// optimizer moments), and a bump-pointer Workspace for activations that is reset and reused each step.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/tensor.h"

namespace grpo {

// Owned, 64-byte aligned, zero-initialised buffer. Counts every allocation (see alloc_count()). When the
// memory is not there, the error names the size and `purpose` ("[memory] out of memory allocating ... for
// the KV cache keys").
// Buffers of kReserveBytes or more are reserved, not touched: an anonymous mapping without swap
// reservation (MAP_NORESERVE) whose pages the kernel commits, zero-filled, when they are first written.
// So a budget sized for the worst case (a KV cache, a workspace) costs only the memory actually used.
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t bytes, std::string_view purpose = "a buffer");
  ~Buffer();
  Buffer(Buffer&& o) noexcept;
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }
  // Returns the memory of the whole pages inside [offset, offset + bytes) to the system: they read as zero
  // until written again. Parts of pages at either end are left as they are.
  void discard(size_t offset, size_t bytes);

  static constexpr size_t kReserveBytes = size_t{1} << 20;
  // The unit in which the memory of a buffer of `bytes` becomes resident when first written: a small
  // buffer is written whole when allocated (returns `bytes`); a reserved one is committed by base pages,
  // or by 2 MiB transparent huge pages where it asks for them and the kernel offers them.
  static size_t commit_granularity(size_t bytes);

  // Number of Buffer allocations made in this process (used to assert hot loops allocate nothing).
  static uint64_t alloc_count();

 private:
  void release();
  void* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;  // from mmap (size >= kReserveBytes), else from aligned_alloc
};

// Resident memory of this process now (the RSS of /proc/self/statm), in bytes.
int64_t resident_bytes();

// A set of named tensors in one allocation. Declare every tensor with add(), then allocate() once.
// Tensors of one arena share a dtype so that the whole arena is also one flat vector (flat()).
class Arena {
 public:
  explicit Arena(DType dtype = DType::F32) : dtype_(dtype) {}

  // Declares a tensor; returns its offset in elements. Offsets are padded to 64 bytes unless pack=true
  // (packed tensors follow the previous one directly, so e.g. gate and up weights form one matrix).
  int64_t add(const std::string& name, Shape shape, bool pack = false);
  void allocate();  // an out-of-memory error names the size, the tensor count and the first tensor

  bool has(const std::string& name) const { return index_.count(name) != 0; }
  TensorView view(const std::string& name) const;
  int64_t offset(const std::string& name) const;  // in elements, from the start of the arena
  // All tensors in declaration order.
  const std::vector<std::pair<std::string, TensorView>>& entries() const { return views_; }
  TensorView flat() const;  // [numel()]
  int64_t numel() const { return numel_; }  // including alignment padding
  int64_t declared_numel() const;           // sum of the declared tensors' sizes
  DType dtype() const { return dtype_; }
  void zero();
  // Buffer::discard of elements [first, first + count).
  void discard(int64_t first, int64_t count);
  // Elements [first, first + count) set to zero, their whole pages returned to the system (they read as zero
  // and are faulted back in when next written), the partial pages at the ends written with zeros.
  void zero_and_release(int64_t first, int64_t count);

 private:
  struct Entry {
    std::string name;
    Shape shape;
    int64_t offset;
  };
  DType dtype_;
  std::vector<Entry> entries_;
  std::unordered_map<std::string, size_t> index_;
  std::vector<std::pair<std::string, TensorView>> views_;
  int64_t numel_ = 0;
  Buffer buf_;
};

// Bump allocator over one buffer, sized up front (reserve) and reset between steps. Taking more than
// the capacity is an error that names the request, never a silent reallocation.
class Workspace {
 public:
  Workspace() = default;
  explicit Workspace(size_t bytes, std::string_view purpose = "a workspace") { reserve(bytes, purpose); }
  void reserve(size_t bytes, std::string_view purpose = "a workspace");  // discards contents
  void reset() { used_ = 0; }
  // Returns the memory of the buffer's pages to the system between uses (the capacity stays reserved at
  // the same address; the contents are gone: take() again after this). Nothing is allocated: the next
  // writes fault the pages back in.
  void discard();
  void* take_bytes(size_t bytes, const char* what);
  template <typename T>
  T* take(int64_t n, const char* what) {
    return static_cast<T*>(take_bytes(static_cast<size_t>(n) * sizeof(T), what));
  }
  size_t used() const { return used_; }
  size_t capacity() const { return buf_.size(); }
  size_t high_water() const { return high_; }

 private:
  Buffer buf_;
  size_t used_ = 0, high_ = 0;
};

// Lays buffers out one after another in one region, each 64-byte aligned: a carve function calls take()
// once per buffer, first with base == nullptr to measure (size()), then over the reserved region in the
// same order to hand out the pointers.
class Carver {
 public:
  static constexpr size_t kAlign = 64;
  explicit Carver(char* base) : base_(base) {}
  template <typename T>
  T* take(int64_t n) {
    off_ = (off_ + kAlign - 1) / kAlign * kAlign;
    T* p = base_ ? reinterpret_cast<T*>(base_ + off_) : nullptr;
    off_ += static_cast<size_t>(n) * sizeof(T);
    return p;
  }
  size_t size() const { return off_ + kAlign; }  // what to reserve: the layout and room to align its start

 private:
  char* base_;
  size_t off_ = 0;
};

}  // namespace grpo
