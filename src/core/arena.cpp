// Implementation of Buffer, Arena and Workspace (see arena.h).
#include "core/arena.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace grpo {

namespace {
std::atomic<uint64_t> g_allocs{0};
constexpr size_t kAlign = 64;
constexpr size_t kHugePageMinBytes = size_t{8} << 20;  // buffers from 8 MiB on ask for huge pages
size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// A buffer larger than physical memory could never be zeroed, let alone used: it is refused up front, the
// same way on every overcommit setting and under AddressSanitizer.
size_t physical_memory() {
  static const size_t bytes = static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return bytes;
}
}  // namespace

Buffer::Buffer(size_t bytes, std::string_view purpose) : size_(bytes) {
  if (bytes == 0) return;
  const double gib = 1024.0 * 1024.0 * 1024.0;
  if (bytes > physical_memory())
    fail("[memory] out of memory allocating ", bytes, " bytes (", static_cast<double>(bytes) / gib, " GiB) for ",
         purpose, ": the machine has ", static_cast<double>(physical_memory()) / gib, " GiB");
  if (bytes >= kReserveBytes) {
    // Page-aligned (so 64-byte aligned), zero-filled by the kernel on first touch, no swap reservation.
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
      fail("[memory] cannot reserve ", bytes, " bytes (", static_cast<double>(bytes) / gib, " GiB) of address space for ",
           purpose, ": ", std::strerror(errno));
    // Transparent huge pages where the kernel offers them (`madvise` mode, Debian's default): first touch
    // then commits 2 MiB at a time, 512x fewer page faults (writing a fresh KV cache or workspace was
    // dominated by them: paged_kv_write took 12% of a 128-sample rollout), and fewer TLB misses.
    if (bytes >= kHugePageMinBytes) madvise(p, bytes, MADV_HUGEPAGE);
    data_ = p;
    mapped_ = true;
  } else {
    data_ = std::aligned_alloc(kAlign, round_up(bytes, kAlign));
    if (!data_)
      fail("[memory] out of memory allocating ", bytes, " bytes (", static_cast<double>(bytes) / gib, " GiB) for ",
           purpose);
    std::memset(data_, 0, bytes);
  }
  g_allocs.fetch_add(1, std::memory_order_relaxed);
}
void Buffer::release() {
  if (mapped_)
    munmap(data_, size_);
  else
    std::free(data_);
  data_ = nullptr;
  size_ = 0;
  mapped_ = false;
}
Buffer::~Buffer() { release(); }
Buffer::Buffer(Buffer&& o) noexcept : data_(o.data_), size_(o.size_), mapped_(o.mapped_) {
  o.data_ = nullptr;
  o.size_ = 0;
  o.mapped_ = false;
}
Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    release();
    data_ = o.data_;
    size_ = o.size_;
    mapped_ = o.mapped_;
    o.data_ = nullptr;
    o.size_ = 0;
    o.mapped_ = false;
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

size_t Buffer::commit_granularity(size_t bytes) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  static const size_t huge = [] {  // 0: no transparent huge pages for madvised buffers
    std::FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f) return size_t{0};
    char mode[128] = {};
    const bool read = std::fgets(mode, sizeof mode, f) != nullptr;
    std::fclose(f);
    if (!read || std::strstr(mode, "[never]")) return size_t{0};
    f = std::fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "r");
    unsigned long long pmd = 0;
    if (f) {
      if (std::fscanf(f, "%llu", &pmd) != 1) pmd = 0;
      std::fclose(f);
    }
    return static_cast<size_t>(pmd);
  }();
  if (bytes < kReserveBytes) return bytes;
  return bytes >= kHugePageMinBytes && huge > 0 ? huge : page;
}

uint64_t Buffer::alloc_count() { return g_allocs.load(std::memory_order_relaxed); }

int64_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  GRPO_CHECK(f, "[memory] cannot open /proc/self/statm: ", std::strerror(errno));
  long long size = 0, resident = 0;
  const int got = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  GRPO_CHECK(got == 2, "[memory] /proc/self/statm: expected two page counts");
  return static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE);
}

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
  const std::string purpose =
      entries_.empty() ? std::string("an empty arena")
                       : cat("an arena of ", entries_.size(), " ", dtype_name(dtype_), " tensors (the first \"",
                             entries_.front().name, "\")");
  buf_ = Buffer(static_cast<size_t>(numel_ * dtype_size(dtype_)), purpose);
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

void Arena::zero_and_release(int64_t first, int64_t count) {
  if (count <= 0 || !buf_.data()) return;
  static const int64_t page = static_cast<int64_t>(sysconf(_SC_PAGESIZE));
  const int64_t e = dtype_size(dtype_);
  char* base = static_cast<char*>(buf_.data());
  const int64_t begin = first * e, end = (first + count) * e;
  const uintptr_t at = reinterpret_cast<uintptr_t>(base);
  const int64_t inner_begin = static_cast<int64_t>((at + begin + page - 1) / page * page - at);
  const int64_t inner_end = static_cast<int64_t>((at + end) / page * page - at);
  if (inner_begin >= inner_end) {  // within a page or two: no whole page
    std::memset(base + begin, 0, static_cast<size_t>(end - begin));
    return;
  }
  std::memset(base + begin, 0, static_cast<size_t>(inner_begin - begin));
  buf_.discard(static_cast<size_t>(inner_begin), static_cast<size_t>(inner_end - inner_begin));
  std::memset(base + inner_end, 0, static_cast<size_t>(end - inner_end));
}

void Workspace::reserve(size_t bytes, std::string_view purpose) {
  buf_ = Buffer(0);  // the old buffer goes first: the new one may need its memory
  buf_ = Buffer(bytes, purpose);
  used_ = high_ = 0;
}

void Workspace::discard() {
  buf_.discard(0, buf_.size());
  used_ = 0;
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
