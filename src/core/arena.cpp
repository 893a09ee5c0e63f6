// Implementation of Buffer, Arena and Workspace (see arena.h).
#include "core/arena.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

namespace grpo {

namespace {
std::atomic<uint64_t> g_allocs{0};
constexpr size_t kAlign = 64;
size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }
}  // namespace

Buffer::Buffer(size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  data_ = std::aligned_alloc(kAlign, round_up(bytes, kAlign));
  if (!data_) fail("[memory] out of memory allocating ", bytes, " bytes");
  std::memset(data_, 0, bytes);
  g_allocs.fetch_add(1, std::memory_order_relaxed);
}
Buffer::~Buffer() { std::free(data_); }
Buffer::Buffer(Buffer&& o) noexcept : data_(o.data_), size_(o.size_) {
  o.data_ = nullptr;
  o.size_ = 0;
}
Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    std::free(data_);
    data_ = o.data_;
    size_ = o.size_;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}
void Buffer::discard(size_t offset, size_t bytes) {
  GRPO_CHECK(offset + bytes <= size_, "[memory] discard of [", offset, ", ", offset + bytes, ") in a buffer of ", size_,
             " bytes");
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data_) + offset, end = begin + bytes;
  const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  if (first < last) madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

uint64_t Buffer::alloc_count() { return g_allocs.load(std::memory_order_relaxed); }

int64_t Arena::add(const std::string& name, Shape shape, bool pack) {
  GRPO_CHECK(!buf_.data(), "[arena] add(\"", name, "\") after allocate()");
  GRPO_CHECK(!index_.count(name), "[arena] duplicate tensor name \"", name, "\"");
  int64_t esize = dtype_size(dtype_);
  int64_t offset = pack ? numel_ : static_cast<int64_t>(round_up(numel_ * esize, kAlign)) / esize;
  index_[name] = entries_.size();
  entries_.push_back({name, shape, offset});
  numel_ = offset + shape.numel();
  return offset;
}

void Arena::allocate() {
  buf_ = Buffer(static_cast<size_t>(numel_ * dtype_size(dtype_)));
  views_.clear();
  char* base = static_cast<char*>(buf_.data());
  for (const Entry& e : entries_)
    views_.emplace_back(e.name, TensorView(base + e.offset * dtype_size(dtype_), dtype_, e.shape));
}

TensorView Arena::view(const std::string& name) const {
  auto it = index_.find(name);
  GRPO_CHECK(it != index_.end(), "[arena] no tensor named \"", name, "\"");
  GRPO_CHECK(buf_.data(), "[arena] view(\"", name, "\") before allocate()");
  return views_[it->second].second;
}

int64_t Arena::offset(const std::string& name) const {
  auto it = index_.find(name);
  GRPO_CHECK(it != index_.end(), "[arena] no tensor named \"", name, "\"");
  return entries_[it->second].offset;
}

TensorView Arena::flat() const { return TensorView(buf_.data(), dtype_, Shape{numel_}); }

int64_t Arena::declared_numel() const {
  int64_t n = 0;
  for (const Entry& e : entries_) n += e.shape.numel();
  return n;
}

void Arena::zero() {
  if (buf_.data()) std::memset(buf_.data(), 0, buf_.size());
}

void Arena::discard(int64_t first, int64_t count) {
  const int64_t e = dtype_size(dtype_);
  buf_.discard(static_cast<size_t>(first * e), static_cast<size_t>(count * e));
}

void Workspace::reserve(size_t bytes) {
  buf_ = Buffer(bytes);
  used_ = high_ = 0;
}

void* Workspace::take_bytes(size_t bytes, const char* what) {
  size_t start = round_up(used_, kAlign);
  if (start + bytes > buf_.size())
    fail("[workspace] request for ", bytes, " bytes (", what, ") exceeds capacity: ", start, " of ",
         buf_.size(), " bytes in use");
  used_ = start + bytes;
  if (used_ > high_) high_ = used_;
  return static_cast<char*>(buf_.data()) + start;
}

}  // namespace grpo
